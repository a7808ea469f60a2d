package devcluster

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestSettingsAreFixedAtTheFirstStart(t *testing.T) {
	off := func(n int) *int { return &n }
	tests := []struct {
		name    string
		first   *int
		then    *int
		want    int
		wantErr bool
	}{
		{"default", nil, nil, 0, false},
		{"kept when not asked again", off(500), nil, 500, false},
		{"same again", off(500), off(500), 500, false},
		{"another refused", off(500), off(600), 0, true},
		{"out of range refused", off(99999), nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Dir: t.TempDir()}
			s, err := resolveSettings(l, tt.first)
			if err != nil {
				if !tt.wantErr {
					t.Fatal(err)
				}
				return
			}
			s, err = resolveSettings(l, tt.then)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if err == nil && s.PortOffset != tt.want {
				t.Errorf("port offset %d, want %d", s.PortOffset, tt.want)
			}
		})
	}
}

func TestRunStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if st, err := ReadRunState(dir); st != nil || err != nil {
		t.Fatalf("empty dir: %v %v", st, err)
	}
	self := Process{Name: "s1", Kind: KindServer, PID: os.Getpid(), StartTime: startTimeOf(os.Getpid()), Log: "/x/logs/s1.log"}
	gone := Process{Name: "n1", Kind: KindAgent, PID: os.Getpid(), StartTime: 1, Log: "/x/logs/n1.log"}
	st := &RunState{PID: os.Getpid(), StartTime: startTimeOf(os.Getpid()), Dir: dir, Started: time.Now().UTC(),
		Nodes: true, PortOffset: 5, Processes: []Process{self, gone}, IPForwardWas: "0"}
	if err := st.write(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRunState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.SupervisorRunning() {
		t.Error("the supervisor (this process) does not run")
	}
	if p, ok := got.Process("s1"); !ok || !p.Running() {
		t.Errorf("s1 %+v not running", p)
	}
	if p, ok := got.Process("n1"); !ok || p.Running() {
		t.Errorf("n1 %+v runs with another start time", p)
	}
	if got.IPForwardWas != "0" || got.Topology().Servers[0].StoreAddr != "127.0.0.1:2384" {
		t.Errorf("state %+v", got)
	}
}

func TestTryLockNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	path := Layout{Dir: dir}.Lock()
	f, err := tryLock(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tryLock(path, "/elsewhere")
	var locked *errLocked
	if !errors.As(err, &locked) {
		t.Fatalf("second lock: %v", err)
	}
	if locked.holder.PID != os.Getpid() || locked.holder.Dir != dir {
		t.Errorf("holder %+v", locked.holder)
	}
	f.Close()
	f, err = tryLock(path, dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	f.Close()
}
