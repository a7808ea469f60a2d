package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

func rec(sec int, stream string, partial bool, content string) Record {
	return Record{Time: t0.Add(time.Duration(sec) * time.Second), Stream: stream, Partial: partial, Content: []byte(content)}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, line string
		want       Record
		wantErr    bool
	}{
		{name: "full", line: "2024-05-01T10:00:00.5Z stdout F hello world\n",
			want: Record{Time: t0.Add(500 * time.Millisecond), Stream: Stdout, Content: []byte("hello world")}},
		{name: "partial stderr", line: "2024-05-01T10:00:00Z stderr P part",
			want: Record{Time: t0, Stream: Stderr, Partial: true, Content: []byte("part")}},
		{name: "empty content", line: "2024-05-01T10:00:00Z stdout F \n", want: Record{Time: t0, Stream: Stdout, Content: []byte{}}},
		{name: "no content separator", line: "2024-05-01T10:00:00Z stdout F", want: Record{Time: t0, Stream: Stdout}},
		{name: "spaces kept", line: "2024-05-01T10:00:00Z stdout F  a  b ", want: Record{Time: t0, Stream: Stdout, Content: []byte(" a  b ")}},
		{name: "tag with flags", line: "2024-05-01T10:00:00Z stdout P:x y", want: Record{Time: t0, Stream: Stdout, Partial: true, Content: []byte("y")}},
		{name: "bad time", line: "yesterday stdout F x", wantErr: true},
		{name: "bad stream", line: "2024-05-01T10:00:00Z stdin F x", wantErr: true},
		{name: "bad tag", line: "2024-05-01T10:00:00Z stdout X x", wantErr: true},
		{name: "json line", line: `{"log":"x"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr {
				return
			}
			if !got.Time.Equal(tt.want.Time) || got.Stream != tt.want.Stream || got.Partial != tt.want.Partial || !bytes.Equal(got.Content, tt.want.Content) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFormatParsesBack(t *testing.T) {
	r := rec(3, Stderr, true, "x y")
	got, err := Parse(Format(r))
	if err != nil || !got.Time.Equal(r.Time) || got.Stream != r.Stream || !got.Partial || string(got.Content) != "x y" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func writeLog(t *testing.T, recs ...Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	var b []byte
	for _, r := range recs {
		b = append(b, Format(r)...)
	}
	b = append(b, "garbage line\n"...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadOptions(t *testing.T) {
	path := writeLog(t,
		rec(0, Stdout, false, "one"),
		rec(1, Stderr, false, "two"),
		rec(2, Stdout, true, "thr"),
		rec(2, Stdout, true, "e"),
		rec(3, Stdout, false, "e!"),
		rec(4, Stdout, false, "four"),
	)
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{name: "all", want: "one\ntwo\nthree!\nfour\n"},
		{name: "tail 2 counts a joined line once", opts: Options{TailLines: n(2)}, want: "three!\nfour\n"},
		{name: "tail 1", opts: Options{TailLines: n(1)}, want: "four\n"},
		{name: "tail more than there is", opts: Options{TailLines: n(10)}, want: "one\ntwo\nthree!\nfour\n"},
		{name: "tail 0", opts: Options{TailLines: n(0)}, want: ""},
		{name: "since", opts: Options{Since: t0.Add(time.Second)}, want: "two\nthree!\nfour\n"},
		{name: "limit bytes", opts: Options{LimitBytes: n(6)}, want: "one\ntw"},
		{name: "limit bytes on a line end", opts: Options{LimitBytes: n(4)}, want: "one\n"},
		{name: "timestamps once per joined line", opts: Options{Timestamps: true, TailLines: n(2)},
			want: "2024-05-01T10:00:02Z three!\n2024-05-01T10:00:04Z four\n"},
		{name: "timestamps and since and limit", opts: Options{Timestamps: true, Since: t0.Add(4 * time.Second), LimitBytes: n(22)},
			want: "2024-05-01T10:00:04Z f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Read(context.Background(), path, tt.opts, &out, nil); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a reader and a writer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFollowSeesNewLinesAndStopsWithTheContainer(t *testing.T) {
	path := writeLog(t, rec(0, Stdout, false, "first"))
	var running atomic.Bool
	running.Store(true)
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Read(context.Background(), path, Options{Follow: true, PollInterval: 5 * time.Millisecond}, &out, running.Load)
	}()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	waitFor(t, func() bool { return out.String() == "first\n" })
	// A line written in two writes comes out once it is whole.
	line := Format(rec(1, Stdout, false, "second"))
	f.Write(line[:10])
	time.Sleep(20 * time.Millisecond)
	f.Write(line[10:])
	waitFor(t, func() bool { return out.String() == "first\nsecond\n" })
	f.Write(Format(rec(2, Stdout, false, "last")))
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not stop after the container stopped")
	}
	if got := out.String(); got != "first\nsecond\nlast\n" {
		t.Errorf("got %q", got)
	}
}

func TestFollowStopsWithTheContext(t *testing.T) {
	path := writeLog(t, rec(0, Stdout, false, "x"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Read(ctx, path, Options{Follow: true, PollInterval: 5 * time.Millisecond}, &syncBuffer{}, func() bool { return true })
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not stop with its context")
	}
}

func TestFollowReopensARotatedFile(t *testing.T) {
	path := writeLog(t, rec(0, Stdout, false, "old"))
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Read(ctx, path, Options{Follow: true, PollInterval: 5 * time.Millisecond}, &out, func() bool { return true })
	waitFor(t, func() bool { return out.String() == "old\n" })
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, Format(rec(1, Stdout, false, "new")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return out.String() == "old\nnew\n" })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
