package helper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// maxLogLine is the longest log line written in one piece; longer lines
// are split into partial ("P") entries, as containerd does.
const maxLogLine = 16 * 1024

// criLog writes a container's output in the CRI log format, one entry
// per line: "<RFC3339Nano time> <stdout|stderr> <F|P> <line>". With no
// path, output is read and discarded.
type criLog struct {
	path string
	now  func() time.Time

	mu sync.Mutex
	f  *os.File
}

func openCRILog(path string, now func() time.Time) (*criLog, error) {
	l := &criLog{path: path, now: now}
	if err := l.reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

// reopen closes the log file and opens path anew, creating it: after the
// kubelet rotated the old file away, output goes to a fresh one.
func (l *criLog) reopen() error {
	if l.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return fmt.Errorf("helper: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("helper: opening log %s: %w", l.path, err)
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

func (l *criLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// write appends one entry; each is one write(2), so entries of stdout
// and stderr never interleave within a line.
func (l *criLog) write(stream string, partial bool, line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	tag := "F"
	if partial {
		tag = "P"
	}
	buf := make([]byte, 0, len(line)+64)
	buf = l.now().UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	buf = append(buf, tag...)
	buf = append(buf, ' ')
	buf = append(buf, line...)
	buf = append(buf, '\n')
	l.f.Write(buf)
}

// copyStream logs r line by line until EOF. A last line without a
// newline is logged as full.
func (l *criLog) copyStream(r io.Reader, stream string) {
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			l.write(stream, false, line[:len(line)-1])
		case errors.Is(err, bufio.ErrBufferFull):
			l.write(stream, true, line)
		default:
			if len(line) > 0 {
				l.write(stream, false, line)
			}
			return
		}
	}
}
