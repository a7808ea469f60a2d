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

func TestAttachSocketInADeepDirectory(t *testing.T) {
	// Deeper than a unix socket's path may be.
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 64), strings.Repeat("c", 64))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := DialAttach(ctx, dir, AttachHeader{}); !errors.Is(err, ErrNoAttachSocket) {
		t.Fatalf("DialAttach without a socket = %v, want ErrNoAttachSocket", err)
	}
	ln, err := listenAttach(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAttach(dir, ln)
	h := &attachHub{sp: &Spec{}, ln: ln, path: filepath.Join(dir, AttachSocket), clients: map[*attachClient]struct{}{}}
	go h.serve()
	if _, err := DialAttach(ctx, dir, AttachHeader{Stdin: true}); err == nil || !strings.Contains(err.Error(), "stdin is not enabled") {
		t.Errorf("DialAttach asking for stdin = %v, want the shim's refusal", err)
	}
	c, err := DialAttach(ctx, dir, AttachHeader{Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The shim adds a client before it sends the reply.
	h.broadcast(FrameStdout, []byte("hello"))
	h.broadcast(FrameStderr, []byte("not asked for"))
	h.shutdown(3)
	var got []string
	for {
		kind, data, err := c.ReadFrame()
		if err != nil {
			break
		}
		got = append(got, string(rune('0'+kind))+":"+string(data))
	}
	if want := []string{"4:hello", `6:{"exitCode":3}`}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("frames %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, AttachSocket)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after the exit: %v", err)
	}
}
