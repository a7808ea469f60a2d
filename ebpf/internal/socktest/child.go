package socktest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	envChild = "CAIRN_SOCKTEST_CHILD"
	envNetns = "CAIRN_SOCKTEST_NETNS"
	// nsFD is where StartClient passes the namespace: the first ExtraFile.
	nsFD = 3

	ioTimeout = 3 * time.Second
)

// request is one command from the parent.
type request struct {
	Op   string `json:"op"` // tcp, udp, udpconn, ping, close
	Addr string `json:"addr,omitempty"`
	ID   int    `json:"id,omitempty"`
	Hold bool   `json:"hold,omitempty"`
}

// Result is what one client operation observed.
type Result struct {
	// Name is what the backend answered with: its name.
	Name string `json:"name,omitempty"`
	// Peer is the remote address as the application sees it: from
	// getpeername for TCP, from recvmsg for UDP.
	Peer string `json:"peer,omitempty"`
	// ID names a held connection, for Ping and Close.
	ID int `json:"id,omitempty"`
	// Errno is the symbolic error of a failed call, e.g. ECONNREFUSED.
	Errno string `json:"errno,omitempty"`
	// Err is the full error text, if any.
	Err string `json:"err,omitempty"`
}

// RunChildIfRequested serves the parent and exits when this process was
// started by StartClient, and returns at once otherwise.
func RunChildIfRequested() {
	if os.Getenv(envChild) != "1" {
		return
	}
	// Every socket is made on this thread, so it is the one that joins
	// the namespace.
	runtime.LockOSThread()
	if os.Getenv(envNetns) == "1" {
		if err := unix.Setns(nsFD, unix.CLONE_NEWNET); err != nil {
			fmt.Fprintln(os.Stderr, "socktest: setns:", err)
			os.Exit(2)
		}
	}
	serve(os.Stdin, os.Stdout)
	os.Exit(0)
}

func serve(in io.Reader, out io.Writer) {
	held := map[int]net.Conn{}
	next := 1
	dec := json.NewDecoder(bufio.NewReader(in))
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			return
		}
		var res Result
		switch req.Op {
		case "tcp":
			c, r := dialTCP(req.Addr)
			res = r
			if c != nil && req.Hold {
				held[next] = c
				res.ID = next
				next++
			} else if c != nil {
				c.Close()
			}
		case "udp":
			res = udpUnconnected(req.Addr)
		case "udpconn":
			res = udpConnected(req.Addr)
		case "ping":
			res = ping(held[req.ID])
		case "close":
			if c := held[req.ID]; c != nil {
				c.Close()
				delete(held, req.ID)
			}
		default:
			res.Err = "unknown op " + req.Op
		}
		if err := enc.Encode(res); err != nil {
			return
		}
	}
}

func failed(err error) Result {
	r := Result{Err: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		r.Errno = unix.ErrnoName(errno)
	}
	return r
}

func dialTCP(addr string) (net.Conn, Result) {
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return nil, failed(err)
	}
	peer, err := getpeername(c.(*net.TCPConn))
	if err != nil {
		c.Close()
		return nil, failed(err)
	}
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	name, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		c.Close()
		return nil, failed(fmt.Errorf("read greeting: %w", err))
	}
	c.SetReadDeadline(time.Time{})
	return c, Result{Name: name[:len(name)-1], Peer: peer}
}

// getpeername asks the kernel directly, so the getpeername hook is what
// the test observes.
func getpeername(c *net.TCPConn) (string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var sa unix.Sockaddr
	var serr error
	if err := raw.Control(func(fd uintptr) { sa, serr = unix.Getpeername(int(fd)) }); err != nil {
		return "", err
	}
	if serr != nil {
		return "", serr
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)).String(), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)).String(), nil
	}
	return "", fmt.Errorf("unexpected peer address %T", sa)
}

func ping(c net.Conn) Result {
	if c == nil {
		return Result{Err: "no such connection"}
	}
	c.SetDeadline(time.Now().Add(ioTimeout))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return failed(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		return failed(err)
	}
	if string(buf) != "ping\n" {
		return Result{Err: fmt.Sprintf("echo %q", buf)}
	}
	return Result{}
}

func udpUnconnected(addr string) Result {
	dst, err := netip.ParseAddrPort(addr)
	if err != nil {
		return failed(err)
	}
	network := "udp4"
	if dst.Addr().Is6() {
		network = "udp6"
	}
	c, err := net.ListenUDP(network, nil)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	if _, err := c.WriteToUDPAddrPort([]byte("hello"), dst); err != nil {
		return failed(err)
	}
	return readUDP(c)
}

func udpConnected(addr string) Result {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		return failed(err)
	}
	return readUDP(c.(*net.UDPConn))
}

func readUDP(c *net.UDPConn) Result {
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	buf := make([]byte, 256)
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		return failed(err)
	}
	return Result{Name: string(buf[:n]), Peer: netip.AddrPortFrom(from.Addr().Unmap(), from.Port()).String()}
}
