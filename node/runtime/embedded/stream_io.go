package embedded

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"

	cairnruntime "cairn/node/runtime"
	"cairn/node/runtime/embedded/helper"
)

// drainIdle is how long an exec's output may stay silent, once the
// command exited, before Exec stops reading it. The output normally
// ends at once, when the last writer closes it; a background process
// the command left behind may hold it open for good, and would keep the
// client's kubectl hanging.
const drainIdle = time.Second

// execIO is the plumbing of one exec: the helper's stdin, stdout and
// stderr, and the copies between them and the request's streams.
type execIO struct {
	// stdin, stdout and stderr are the helper's; nil ones get /dev/null.
	stdin, stdout, stderr *os.File
	// childEnds are the agent's copies of the helper's files, closed
	// once it started so that only the command holds them.
	childEnds []*os.File
	// parentEnds are the agent's ends, closed when the exec is over.
	parentEnds []*os.File
	outputs    []*outputCopy
	// The copy of the request's Stdin into the command: from src to
	// dst, then eof is written, or dst closed if eof is nil.
	stdinSrc io.Reader
	stdinDst *os.File
	eof      []byte
	// master is the terminal's master side, with TTY.
	master      *os.File
	resize      <-chan cairnruntime.TerminalSize
	resizeStop  chan struct{}
	resizeEnded chan struct{}
}

// newPipeIO connects a command run without a terminal through pipes, one
// for each stream of the request.
func newPipeIO(req cairnruntime.ExecRequest) (*execIO, error) {
	s := &execIO{}
	if req.Stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		s.stdin, s.stdinSrc, s.stdinDst = r, req.Stdin, w
		s.childEnds, s.parentEnds = append(s.childEnds, r), append(s.parentEnds, w)
	}
	for _, out := range []struct {
		dst   io.Writer
		child **os.File
	}{{req.Stdout, &s.stdout}, {req.Stderr, &s.stderr}} {
		if out.dst == nil {
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			s.closeAll()
			return nil, err
		}
		*out.child = w
		s.childEnds, s.parentEnds = append(s.childEnds, w), append(s.parentEnds, r)
		s.outputs = append(s.outputs, newOutputCopy(r, out.dst))
	}
	return s, nil
}

// newTTYIO connects a command run on a new pseudo-terminal: its slave
// is the helper's stdin, stdout and stderr, and the master carries the
// request's Stdin to the command and its output to Stdout. Stderr is
// not used. A size already waiting on the request's Resize channel is
// applied before the command starts, so that it never sees a 0x0
// terminal then.
func newTTYIO(req cairnruntime.ExecRequest, pid int) (*execIO, error) {
	master, slave, err := openPTYIn(pid)
	if err != nil {
		return nil, err
	}
	s := &execIO{
		stdin: slave, stdout: slave, stderr: slave,
		childEnds:  []*os.File{slave},
		parentEnds: []*os.File{master},
		master:     master,
		resize:     req.Resize,
	}
	if req.Stdin != nil {
		s.stdinSrc, s.stdinDst, s.eof = req.Stdin, master, []byte{helper.EOT}
	}
	dst := req.Stdout
	if dst == nil {
		// The output is read all the same: a command writing to a full
		// terminal would block for good.
		dst = io.Discard
	}
	s.outputs = append(s.outputs, newOutputCopy(master, dst))
pending:
	for s.resize != nil {
		select {
		case size, ok := <-s.resize:
			if !ok {
				s.resize = nil
				break pending
			}
			if err := helper.SetWinsize(master, size.Width, size.Height); err != nil {
				s.closeAll()
				return nil, err
			}
		default:
			break pending
		}
	}
	return s, nil
}

// started closes the agent's copies of the helper's files and starts
// the copies between the command and the request's streams.
func (s *execIO) started() {
	for _, f := range s.childEnds {
		f.Close()
	}
	s.childEnds = nil
	for _, o := range s.outputs {
		go o.run()
	}
	if s.stdinSrc != nil {
		// Not waited for: a read of the caller's Stdin cannot be
		// interrupted. It ends when that read returns (the caller closes
		// Stdin once Exec returned); writes into the command fail once
		// Exec closed its end, so it holds nothing of the runtime's.
		go func(src io.Reader, dst *os.File, eof []byte) {
			_, err := io.Copy(dst, src)
			switch {
			case eof == nil:
				dst.Close()
			case err == nil:
				dst.Write(eof)
			}
		}(s.stdinSrc, s.stdinDst, s.eof)
	}
	if s.resize != nil {
		s.resizeStop, s.resizeEnded = make(chan struct{}), make(chan struct{})
		go s.applyResizes()
	}
}

// applyResizes sets the terminal's size on each event until the channel
// closes or the exec is over.
func (s *execIO) applyResizes() {
	defer close(s.resizeEnded)
	for {
		select {
		case size, ok := <-s.resize:
			if !ok {
				return
			}
			helper.SetWinsize(s.master, size.Width, size.Height)
		case <-s.resizeStop:
			return
		}
	}
}

// finish waits, once the command exited, for its output to be copied
// (or to fall silent for drainIdle), and releases everything. It
// returns the errors of writes to the request's streams.
func (s *execIO) finish() error {
	for _, o := range s.outputs {
		o.commandExited()
	}
	var errs []error
	for _, o := range s.outputs {
		<-o.done
		errs = append(errs, o.err)
	}
	s.stopResizes()
	s.closeAll()
	return errors.Join(errs...)
}

// abort releases everything at once, dropping output not yet copied,
// once the command was killed.
func (s *execIO) abort() {
	s.stopResizes()
	s.closeAll()
	for _, o := range s.outputs {
		<-o.done
	}
}

func (s *execIO) stopResizes() {
	if s.resizeStop != nil {
		close(s.resizeStop)
		<-s.resizeEnded
		s.resizeStop = nil
	}
}

// closeAll closes the agent's files, which ends copies still reading
// them.
func (s *execIO) closeAll() {
	for _, f := range append(s.childEnds, s.parentEnds...) {
		f.Close()
	}
	s.childEnds, s.parentEnds = nil, nil
}

// outputCopy copies one output of a command, from a pipe or a terminal
// master, to a stream of the request.
type outputCopy struct {
	src    *os.File
	dst    io.Writer
	exited atomic.Bool
	done   chan struct{}
	// err is the first failed write to dst, set before done closes.
	err error
}

func newOutputCopy(src *os.File, dst io.Writer) *outputCopy {
	return &outputCopy{src: src, dst: dst, done: make(chan struct{})}
}

// run copies until the output ends: at the end of a pipe, at EIO on a
// terminal master once every holder of the slave closed it, after
// drainIdle of silence once the command exited, or when the file is
// closed. After a failed write it goes on reading, and drops what it
// reads, so that the command does not block on a full pipe.
func (o *outputCopy) run() {
	defer close(o.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := o.src.Read(buf)
		if n > 0 && o.err == nil {
			if _, werr := o.dst.Write(buf[:n]); werr != nil {
				o.err = werr
			}
		}
		if err != nil {
			return
		}
		if o.exited.Load() {
			// Silence is measured from the last read: a slow client may
			// take longer than drainIdle to take what was read.
			o.src.SetReadDeadline(time.Now().Add(drainIdle))
		}
	}
}

// commandExited starts the drainIdle limit on the remaining output.
func (o *outputCopy) commandExited() {
	o.exited.Store(true)
	o.src.SetReadDeadline(time.Now().Add(drainIdle))
}
