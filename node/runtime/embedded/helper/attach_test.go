package helper

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAttachFramesRoundTrip(t *testing.T) {
	var wire []byte
	frames := []struct {
		kind FrameKind
		data string
	}{
		{FrameStdin, "echo hi\n"},
		{FrameStdinClose, ""},
		{FrameResize, `{"width":80,"height":24}`},
		{FrameStdout, strings.Repeat("x", 70000)},
	}
	for _, f := range frames {
		wire = AppendFrame(wire, f.kind, []byte(f.data))
	}
	r := bytes.NewReader(wire)
	var buf []byte
	for _, want := range frames {
		kind, data, err := ReadFrame(r, buf)
		if err != nil || kind != want.kind || string(data) != want.data {
			t.Fatalf("ReadFrame = %d, %.20q, %v; want %d, %.20q", kind, data, err, want.kind, want.data)
		}
		buf = data[:0]
	}
	if _, _, err := ReadFrame(r, buf); err != io.EOF {
		t.Errorf("ReadFrame at the end = %v, want EOF", err)
	}
	for _, tc := range []struct {
		name string
		wire []byte
		want string
	}{
		{"cut in the data", AppendFrame(nil, FrameStdout, []byte("hello"))[:7], "unexpected EOF"},
		{"larger than allowed", []byte{byte(FrameStdin), 0xff, 0xff, 0xff, 0xff}, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ReadFrame(bytes.NewReader(tc.wire), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadFrame = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestCheckAttach(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   Spec
		h    AttachHeader
		says string
	}{
		{"output of a plain container", Spec{}, AttachHeader{Stdout: true, Stderr: true}, ""},
		{"stdin of a container with stdin", Spec{Stdin: true}, AttachHeader{Stdin: true, Stdout: true}, ""},
		{"a terminal on a tty", Spec{Stdin: true, TTY: true}, AttachHeader{Stdin: true, Stdout: true, TTY: true}, ""},
		{"stdin of a container without", Spec{TTY: true}, AttachHeader{Stdin: true, TTY: true}, "stdin is not enabled"},
		{"a terminal without a tty", Spec{Stdin: true}, AttachHeader{Stdout: true, TTY: true}, "has no tty"},
		{"no terminal on a tty", Spec{TTY: true}, AttachHeader{Stdout: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckAttach(&tc.sp, tc.h)
			if tc.says == "" && err != nil || tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
				t.Errorf("CheckAttach = %v, want %q", err, tc.says)
			}
		})
	}
}

func TestDialAttachWithoutASocket(t *testing.T) {
	// Deeper than a unix socket's path may be.
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 64), strings.Repeat("c", 64))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := DialAttach(context.Background(), dir, AttachHeader{}); !errors.Is(err, ErrNoAttachSocket) {
		t.Fatalf("DialAttach without a socket = %v, want ErrNoAttachSocket", err)
	}
}
