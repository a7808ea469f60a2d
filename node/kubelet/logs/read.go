package logs

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// DefaultPollInterval is how often a followed log is checked for new
// lines.
const DefaultPollInterval = 100 * time.Millisecond

// Options select what Read writes; they are PodLogOptions' meanings.
type Options struct {
	// TailLines, when set, starts at the last n lines.
	TailLines *int64
	// Since skips lines logged before it; zero keeps all.
	Since time.Time
	// LimitBytes, when set, stops after that many bytes.
	LimitBytes *int64
	// Timestamps starts each line with its RFC3339Nano time and a space.
	Timestamps bool
	// Follow keeps writing new lines until the container stops.
	Follow bool
	// PollInterval is how often a followed log is checked
	// (DefaultPollInterval when zero).
	PollInterval time.Duration
}

// errLimit stops a read once LimitBytes are written.
var errLimit = errors.New("logs: byte limit reached")

// Read writes the log at path to w as Options say. Following stops when
// ctx ends or, once the file holds no new line, when running reports the
// container stopped. Content is written as logged, whatever the stream;
// lines cut into partial records come out whole.
func Read(ctx context.Context, path string, opts Options, w io.Writer, running func() bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	if opts.TailLines != nil {
		start, err := tailStart(f, *opts.TailLines)
		if err != nil {
			return err
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return err
		}
	}
	out := &writer{w: w, opts: opts, lineStart: true}
	if opts.LimitBytes != nil {
		out.left = *opts.LimitBytes
		out.limited = true
	}
	poll := opts.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	r := bufio.NewReader(f)
	var pending []byte // a line whose end is not written yet
	for {
		line, err := r.ReadBytes('\n')
		pending = append(pending, line...)
		if err == nil {
			if werr := out.record(pending); werr != nil {
				if errors.Is(werr, errLimit) {
					return nil
				}
				return werr
			}
			pending = pending[:0]
			continue
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		if !opts.Follow {
			return nil
		}
		// At the end for now: stop if the container is gone and the
		// file has nothing more, else wait for more.
		if running != nil && !running() {
			if more, err := hasMore(f, r); err != nil || !more {
				return err
			}
			continue
		}
		if rotated(f, path) && len(pending) == 0 {
			nf, err := os.Open(path)
			if err == nil {
				f.Close()
				f = nf
				r.Reset(f)
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// hasMore reports whether the file grew past what r has read.
func hasMore(f *os.File, r *bufio.Reader) (bool, error) {
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false, err
	}
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	return st.Size() > pos-int64(r.Buffered()), nil
}

// rotated reports whether path now names another file than f, as after
// a log rotation.
func rotated(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	if err != nil {
		return false
	}
	as, ok1 := a.Sys().(*syscall.Stat_t)
	bs, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && (as.Ino != bs.Ino || as.Dev != bs.Dev)
}

// writer turns records into output lines.
type writer struct {
	w         io.Writer
	opts      Options
	lineStart bool
	limited   bool
	left      int64
}

// record writes one raw CRI line; unparsable lines are skipped, as the
// kubelet skips them.
func (o *writer) record(line []byte) error {
	rec, err := Parse(line)
	if err != nil {
		return nil
	}
	if !o.opts.Since.IsZero() && rec.Time.Before(o.opts.Since) {
		return nil
	}
	if o.opts.Timestamps && o.lineStart {
		if err := o.write(rec.Time.UTC().AppendFormat(nil, time.RFC3339Nano+" ")); err != nil {
			return err
		}
	}
	if err := o.write(rec.Content); err != nil {
		return err
	}
	o.lineStart = !rec.Partial
	if !rec.Partial {
		return o.write([]byte{'\n'})
	}
	return nil
}

func (o *writer) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if o.limited {
		if o.left <= 0 {
			return errLimit
		}
		if int64(len(b)) > o.left {
			b = b[:o.left]
		}
		o.left -= int64(len(b))
	}
	_, err := o.w.Write(b)
	if err == nil && o.limited && o.left == 0 {
		return errLimit
	}
	return err
}

// tailStart returns the offset of the first record of the last n whole
// lines of f (a line cut into partial records counts once).
func tailStart(f *os.File, n int64) (int64, error) {
	if n <= 0 {
		return f.Seek(0, io.SeekEnd)
	}
	// starts is a ring of the offsets where the last n lines begin.
	starts := make([]int64, n)
	var count, off int64
	lineStart := true
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && err == nil {
			rec, perr := Parse(line)
			if perr == nil {
				if lineStart {
					starts[count%n] = off
					count++
				}
				lineStart = !rec.Partial
			}
		}
		off += int64(len(line))
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	if count <= n {
		if count == 0 {
			return off, nil
		}
		return starts[0], nil
	}
	return starts[count%n], nil
}
