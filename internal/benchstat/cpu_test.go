package benchstat

import (
	"testing"
	"time"
)

func TestParseCountsWorkNotIdleOrSteal(t *testing.T) {
	// user nice system idle iowait irq softirq steal
	got, err := parse("cpu  100 2 30 5000 40 1 7 900 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := 140 * 10 * time.Millisecond; got != want {
		t.Fatalf("busy = %v, want %v", got, want)
	}
}

func TestParseRejectsAnUnexpectedFile(t *testing.T) {
	for _, stat := range []string{"", "intr 1 2 3 4 5 6 7 8\n", "cpu 1 2 x 4 5 6 7 8\n", "cpu 1 2 3\n"} {
		if _, err := parse(stat); err == nil {
			t.Errorf("parse(%q) succeeded", stat)
		}
	}
}

func TestBusyGrowsWithWork(t *testing.T) {
	before, err := Busy()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		after, err := Busy()
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Fatal("the machine's busy time did not grow in 2s of spinning")
}
