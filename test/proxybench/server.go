package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// serve runs the backends: one listener on every address of the server
// namespace, answering each request with a response of the same size and
// closing. It returns the listener; closing it stops the server.
func serve(netnsPath string, port int) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		ns, err := os.Open(netnsPath)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			res <- result{err: fmt.Errorf("join %s: %w", netnsPath, err)}
			return
		}
		ln, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
		res <- result{ln, err}
	}()
	r := <-res
	if r.err != nil {
		return nil, r.err
	}
	go func() {
		for {
			c, err := r.ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, requestSize)
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				c.Write(make([]byte, responseSize))
			}()
		}
	}()
	return r.ln, nil
}
