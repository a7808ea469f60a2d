package main

import (
	"os"
	"testing"
)

// The shim words its errors from goerrors.h: it must say what Go says.
func TestGoErrorsHeaderIsUpToDate(t *testing.T) {
	raw, err := os.ReadFile("../goerrors.h")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != header() {
		t.Fatal("goerrors.h differs from what this Go version says; run: go run ./node/runtime/embedded/shim/gen > node/runtime/embedded/shim/goerrors.h")
	}
}
