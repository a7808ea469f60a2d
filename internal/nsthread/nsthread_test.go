package nsthread

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestRunWithoutAPathRunsInTheCallersNamespace(t *testing.T) {
	ran := false
	if err := Run("", func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("Run(\"\") = %v, ran %v", err, ran)
	}
}

func TestRunReportsAMissingNamespaceWithoutRunningFn(t *testing.T) {
	ran := false
	err := Run("/nonexistent/netns", func() error { ran = true; return nil })
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "/nonexistent/netns") {
		t.Errorf("Run on a missing namespace: %v, want a not-exist error naming the path", err)
	}
	if ran {
		t.Error("fn ran although the namespace could not be entered")
	}
}

func TestOnReturnsFnsError(t *testing.T) {
	want := errors.New("from fn")
	if err := On(func() error { return nil }, func() error { return want }); !errors.Is(err, want) {
		t.Errorf("On = %v, want %v", err, want)
	}
}
