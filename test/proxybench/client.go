package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// envChild marks a client process started by the benchmark.
const envChild = "CAIRN_PROXYBENCH_CHILD"

const (
	requestSize  = 16
	responseSize = 16
)

// childSpec tells a client process what to measure.
type childSpec struct {
	Netns       string   // path of the network namespace to connect from
	Targets     []string // addr:port, picked at random per connection
	Conns       int      // measured connections, over all workers
	Warmup      int      // unmeasured connections first, per worker
	Concurrency int
	Seed        uint64
}

// sample is what a client process measured.
type sample struct {
	Latencies  []time.Duration
	Elapsed    time.Duration
	Failures   int
	FirstError string
}

// runChild measures as the spec on stdin says and writes the sample to
// stdout. Each worker joins the namespace on its own locked thread and
// uses blocking system calls, so the figures carry as little Go runtime
// overhead as possible.
func runChild() error {
	var spec childSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		return err
	}
	targets := make([]unix.Sockaddr, len(spec.Targets))
	for i, t := range spec.Targets {
		ap, err := netip.ParseAddrPort(t)
		if err != nil {
			return err
		}
		targets[i] = &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
	}
	workers := max(spec.Concurrency, 1)
	per := spec.Conns / workers
	var (
		mu      sync.Mutex
		out     sample
		ready   sync.WaitGroup
		done    sync.WaitGroup
		startCh = make(chan struct{})
	)
	ready.Add(workers)
	done.Add(workers)
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			defer done.Done()
			runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
			ns, err := os.Open(spec.Netns)
			if err == nil {
				err = unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET)
				ns.Close()
			}
			if err != nil {
				ready.Done()
				errc <- fmt.Errorf("join %s: %w", spec.Netns, err)
				return
			}
			rng := rand.New(rand.NewPCG(spec.Seed, uint64(w)))
			req, resp := make([]byte, requestSize), make([]byte, responseSize)
			for range spec.Warmup {
				oneConnection(targets[rng.IntN(len(targets))], req, resp)
			}
			ready.Done()
			<-startCh
			lat := make([]time.Duration, 0, per)
			failures, firstErr := 0, ""
			for range per {
				t0 := time.Now()
				if err := oneConnection(targets[rng.IntN(len(targets))], req, resp); err != nil {
					if failures++; firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			out.Latencies = append(out.Latencies, lat...)
			out.Failures += failures
			if out.FirstError == "" {
				out.FirstError = firstErr
			}
			mu.Unlock()
		}()
	}
	ready.Wait()
	start := time.Now()
	close(startCh)
	done.Wait()
	out.Elapsed = time.Since(start)
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// oneConnection is what a latency covers: socket, connect, a small request
// and its response. The server closes first, so no TIME_WAIT piles up on
// the client's ports.
func oneConnection(to unix.Sockaddr, req, resp []byte) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := retry(func() error { return unix.Connect(fd, to) }); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := retry(func() error { _, err := unix.Write(fd, req); return err }); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	for got := 0; got < len(resp); {
		var n int
		err := retry(func() (err error) { n, err = unix.Read(fd, resp[got:]); return err })
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			return errors.New("read: connection closed before the response")
		}
		got += n
	}
	return nil
}

func retry(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
