package devcluster

import (
	"os"
	"testing"
)

func TestParseStatReadsPastAnOddCommandName(t *testing.T) {
	// Fields after the name: state, ppid, ... with start time 22nd overall.
	rest := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21"
	tests := []struct {
		name, line string
		state      string
		start      uint64
		wantErr    bool
	}{
		{"plain", "123 (cairn)" + rest, "S", 424242, false},
		{"spaces and parentheses in the name", "123 (a) b (c))" + rest, "S", 424242, false},
		{"truncated", "123 (cairn) S 1 2", "", 0, true},
		{"no name", "garbage", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, start, err := parseStat(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if state != tt.state || start != tt.start {
				t.Errorf("got %q %d, want %q %d", state, start, tt.state, tt.start)
			}
		})
	}
}

func TestSameProcessTellsThisProcessFromAReusedPID(t *testing.T) {
	start := startTimeOf(os.Getpid())
	if start == 0 {
		t.Fatal("no start time for this process")
	}
	if !sameProcess(os.Getpid(), start) {
		t.Error("this process is not itself")
	}
	if sameProcess(os.Getpid(), start+1) {
		t.Error("a different start time matched")
	}
	if sameProcess(0, start) {
		t.Error("pid 0 matched")
	}
}

func TestIsClusterProcessSparesWhatMerelyNamesTheDirectory(t *testing.T) {
	dir := "/home/u/.cairn/dev"
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"server", []string{"cairn", "server", "--name", "s1", "--data-dir", dir + "/s1"}, true},
		{"agent with = flags", []string{"/bin/cairn", "agent", "--data-dir=" + dir + "/n1"}, true},
		{"container shim", []string{"/bin/cairn", "__container-shim", dir + "/n1/runtime/containers/abc"}, true},
		{"another cluster's server", []string{"cairn", "server", "--data-dir", "/other/s1"}, false},
		{"a directory with the same prefix", []string{"cairn", "server", "--data-dir", dir + "2/s1"}, false},
		{"cairn dev itself", []string{"cairn", "dev", "--dir", dir}, false},
		{"tail of a log", []string{"tail", "-f", dir + "/logs/s1.log"}, false},
		{"no arguments", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isClusterProcess(tt.args, dir); got != tt.want {
				t.Errorf("isClusterProcess(%v) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}
