package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	cairnruntime "cairn/node/runtime"
	"cairn/node/runtime/embedded/helper"
)

// errDropped is the end of an attach session that the shim closed
// while the container still runs: it drops a client that does not take
// the container's output as fast as it comes.
var errDropped = errors.New("the container's shim ended the session before the container exited: it drops a client that does not keep up with the container's output")

// Attach connects the request's streams to a running container's own
// process, through its shim's attach socket (see helper.AttachSocket):
// the container's output from now on goes to Stdout and Stderr, and
// Stdin, with the container's stdin enabled, to its input. Several
// sessions may attach at once; all see the output, and the input of
// each reaches the container. With StdinOnce the container's stdin
// closes when the first session's Stdin ends (on a tty, the session
// sends ^D instead, as a terminal cannot be closed without hanging up
// the process).
//
// It returns nil once the container exited and its output was copied,
// or, without Stdout and Stderr, once Stdin ended; ctx's error when ctx
// ends first. Writes to Stdout and Stderr are over when it returns (so
// one that blocks for good holds it up); a read of Stdin in progress is
// not, as it cannot be interrupted.
func (r *Runtime) Attach(ctx context.Context, req cairnruntime.AttachRequest) error {
	c, err := r.container(req.ContainerID)
	if err != nil {
		return err
	}
	if st, _ := r.currentState(c); !st.Running {
		return fmt.Errorf("embedded: cannot attach to container %s: it is not running", c.ID)
	}
	dir := r.containerDir(c.ID)
	sp, err := r.spec(c)
	if err != nil {
		return fmt.Errorf("embedded: attach to container %s: %w", c.ID, err)
	}
	h := helper.AttachHeader{
		Stdin:  req.Stdin != nil,
		Stdout: req.Stdout != nil,
		Stderr: req.Stderr != nil && !req.TTY,
		TTY:    req.TTY,
	}
	if err := helper.CheckAttach(sp, h); err != nil {
		return fmt.Errorf("embedded: cannot attach to container %s: %w", c.ID, err)
	}
	conn, err := helper.DialAttach(ctx, dir, h)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, helper.ErrNoAttachSocket):
		if st, _ := r.currentState(c); !st.Running {
			return fmt.Errorf("embedded: cannot attach to container %s: it is not running", c.ID)
		}
		return fmt.Errorf("embedded: cannot attach to container %s: its shim predates attach (an older agent started it); restart the container to attach to it", c.ID)
	default:
		return fmt.Errorf("embedded: cannot attach to container %s: %w", c.ID, err)
	}
	err = runAttach(ctx, conn, req)
	if errors.Is(err, errDropped) {
		if st, _ := r.currentState(c); !st.Running {
			// The shim went away with the container.
			return nil
		}
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("embedded: attach to container %s: %w", c.ID, err)
	}
	return err
}

// runAttach copies between an accepted attach connection and the
// request's streams until the session ends, and closes the connection.
func runAttach(ctx context.Context, conn *helper.AttachConn, req cairnruntime.AttachRequest) error {
	outputs := req.Stdout != nil || (req.Stderr != nil && !req.TTY)
	ended := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ended <- copyAttachOutput(conn, req)
	}()
	if req.Stdin != nil {
		// Not waited for: a read of the caller's Stdin cannot be
		// interrupted. Its writes fail once the connection is closed.
		go func() {
			err := copyAttachInput(conn, req.Stdin)
			if !outputs {
				ended <- err
			}
		}()
	}
	stop := make(chan struct{})
	if req.TTY && req.Resize != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sendResizes(conn, req.Resize, stop)
		}()
	}
	var err error
	select {
	case err = <-ended:
	case <-ctx.Done():
		err = ctx.Err()
	}
	close(stop)
	conn.Close()
	wg.Wait()
	return err
}

// copyAttachOutput writes the shim's output frames to the request's
// streams until the exit frame.
func copyAttachOutput(conn *helper.AttachConn, req cairnruntime.AttachRequest) error {
	for {
		kind, data, err := conn.ReadFrame()
		if err != nil {
			return errDropped
		}
		var dst io.Writer
		switch kind {
		case helper.FrameStdout:
			dst = req.Stdout
		case helper.FrameStderr:
			dst = req.Stderr
		case helper.FrameExit:
			return nil
		}
		if dst == nil {
			continue
		}
		if _, err := dst.Write(data); err != nil {
			return fmt.Errorf("writing the container's output: %w", err)
		}
	}
}

// copyAttachInput sends the caller's Stdin to the shim, then the end of
// the input, whether Stdin ended or failed.
func copyAttachInput(conn *helper.AttachConn, stdin io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := stdin.Read(buf)
		if n > 0 {
			if err := conn.WriteFrame(helper.FrameStdin, buf[:n]); err != nil {
				return err
			}
		}
		if rerr != nil {
			err := conn.WriteFrame(helper.FrameStdinClose, nil)
			if rerr != io.EOF {
				return fmt.Errorf("reading stdin: %w", rerr)
			}
			return err
		}
	}
}

// sendResizes sends each terminal size to the shim until the channel
// closes or the session ends.
func sendResizes(conn *helper.AttachConn, sizes <-chan cairnruntime.TerminalSize, stop <-chan struct{}) {
	for {
		select {
		case size, ok := <-sizes:
			if !ok {
				return
			}
			raw, _ := json.Marshal(helper.ResizeData{Width: size.Width, Height: size.Height})
			if conn.WriteFrame(helper.FrameResize, raw) != nil {
				return
			}
		case <-stop:
			return
		}
	}
}
