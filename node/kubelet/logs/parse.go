// Package logs reads container log files in the CRI format, as the
// kubelet serves them for `kubectl logs`: tail, since, byte limits,
// timestamps and follow.
//
// A CRI log file holds one record per line:
//
//	2024-05-01T10:00:00.123456789Z stdout F hello world
//	2024-05-01T10:00:00.223456789Z stderr P a long line cut in
//	2024-05-01T10:00:00.223456790Z stderr F  two records
//
// The tag is F for the end of a line, P for a part of a longer one; the
// reader joins parts back into one line.
package logs

import (
	"bytes"
	"errors"
	"time"
)

// Stream names of a record.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// Record is one line of a CRI log file.
type Record struct {
	Time    time.Time
	Stream  string
	Partial bool
	// Content is the logged text, without the line's newline.
	Content []byte
}

var errBadRecord = errors.New("logs: not a CRI log record")

// Parse reads one CRI log line, with or without its newline.
func Parse(line []byte) (Record, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return Record{}, errBadRecord
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return Record{}, errBadRecord
	}
	stream, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok || (string(stream) != Stdout && string(stream) != Stderr) {
		return Record{}, errBadRecord
	}
	// The tag may carry several ':'-separated flags; the first says
	// whether the line is complete.
	tag, content, _ := bytes.Cut(rest, []byte(" "))
	flag, _, _ := bytes.Cut(tag, []byte(":"))
	var partial bool
	switch string(flag) {
	case "F":
	case "P":
		partial = true
	default:
		return Record{}, errBadRecord
	}
	return Record{Time: t, Stream: string(stream), Partial: partial, Content: content}, nil
}

// Format renders a record as a CRI log line, with its newline; runtimes
// and tests write logs with it.
func Format(r Record) []byte {
	tag := "F"
	if r.Partial {
		tag = "P"
	}
	b := make([]byte, 0, len(r.Content)+48)
	b = r.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, r.Stream...)
	b = append(b, ' ')
	b = append(b, tag...)
	b = append(b, ' ')
	b = append(b, r.Content...)
	return append(b, '\n')
}
