package testcluster

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Start starts n replicas outside a test, for benchmarks and tools, with
// their data under dir (a new temporary directory when dir is empty;
// a tmpfs such as /dev/shm takes fsyncs out of the measurement). Stop the
// cluster with the returned function, which also removes a temporary
// directory it created.
//
// The Cluster's methods report failures as a test would, through a
// stand-in for testing.TB: after Start they panic with the message.
func Start(dir string, n int, opts Options) (c *Cluster, stop func(), err error) {
	tb := &standaloneTB{dir: dir}
	if dir == "" {
		if tb.dir, err = os.MkdirTemp("", "cairn-cluster-"); err != nil {
			return nil, nil, fmt.Errorf("testcluster: %w", err)
		}
		tb.owned = true
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f, ok := r.(fatal)
		if !ok {
			panic(r)
		}
		tb.stop()
		c, stop, err = nil, nil, fmt.Errorf("testcluster: %s", string(f))
	}()
	c = NewWithOptions(tb, n, opts)
	return c, tb.stop, nil
}

// fatal is what standaloneTB panics with.
type fatal string

// standaloneTB implements the few testing.TB methods the cluster uses.
// The embedded interface is nil: any other method would panic, which
// New and the Cluster's methods never call.
type standaloneTB struct {
	testing.TB
	dir   string
	owned bool

	mu       sync.Mutex
	cleanups []func()
	temps    []string
}

// Helper implements testing.TB.
func (s *standaloneTB) Helper() {}

// Fatal implements testing.TB: it panics, and Start turns that into an error.
func (s *standaloneTB) Fatal(args ...any) { panic(fatal(fmt.Sprint(args...))) }

// Fatalf implements testing.TB like Fatal.
func (s *standaloneTB) Fatalf(format string, args ...any) {
	panic(fatal(fmt.Sprintf(format, args...)))
}

// TempDir implements testing.TB with a directory under the cluster's.
func (s *standaloneTB) TempDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := os.MkdirTemp(s.dir, "cluster-")
	if err != nil {
		panic(fatal(err.Error()))
	}
	s.temps = append(s.temps, d)
	return d
}

// Cleanup implements testing.TB.
func (s *standaloneTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// stop runs the cleanups, last first, as testing does, then removes
// the directories it made.
func (s *standaloneTB) stop() {
	s.mu.Lock()
	fs, temps := s.cleanups, s.temps
	s.cleanups, s.temps = nil, nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	for _, d := range temps {
		os.RemoveAll(d)
	}
	if s.owned {
		os.RemoveAll(s.dir)
	}
}
