package socktest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"

	"cairn/internal/privtest"
)

// Client is a child process that makes connections on the test's behalf.
type Client struct {
	t   testing.TB
	mu  sync.Mutex
	in  io.WriteCloser
	dec *json.Decoder
}

// StartClient starts a client process inside cg (if not nil) and ns (if
// not nil). It is stopped at cleanup.
func StartClient(t testing.TB, cg *privtest.Cgroup, ns *privtest.Netns) *Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"=1")
	cmd.Stderr = os.Stderr
	// No Pdeathsig: it fires when the forking thread exits, and the
	// threads that enter network namespaces do exit. The child stops when
	// its stdin closes instead.
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if cg != nil {
		dir, err := cg.Open()
		if err != nil {
			t.Fatalf("socktest: open cgroup: %v", err)
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(dir.Fd())
	}
	if ns != nil {
		cmd.Env = append(cmd.Env, envNetns+"=1")
		cmd.ExtraFiles = []*os.File{ns.File()}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("socktest: start client: %v", err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &Client{t: t, in: in, dec: json.NewDecoder(bufio.NewReader(out))}
}

func (c *Client) do(req request) Result {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := json.NewEncoder(c.in).Encode(req); err != nil {
		c.t.Fatalf("socktest: send %s: %v", req.Op, err)
	}
	var res Result
	if err := c.dec.Decode(&res); err != nil {
		c.t.Fatalf("socktest: client died during %s %s: %v", req.Op, req.Addr, err)
	}
	return res
}

// TCP connects to addr, reads the backend's name and closes.
func (c *Client) TCP(addr string) Result { return c.do(request{Op: "tcp", Addr: addr}) }

// Hold connects like TCP but keeps the connection open; Result.ID names it.
func (c *Client) Hold(addr string) Result { return c.do(request{Op: "tcp", Addr: addr, Hold: true}) }

// Ping sends a line over a held connection and waits for its echo.
func (c *Client) Ping(id int) error {
	if r := c.do(request{Op: "ping", ID: id}); r.Err != "" {
		return fmt.Errorf("%s", r.Err)
	}
	return nil
}

// Close closes a held connection.
func (c *Client) Close(id int) { c.do(request{Op: "close", ID: id}) }

// UDP sends a datagram to addr from an unconnected socket (sendmsg) and
// reports the reply and the source address recvmsg gave for it.
func (c *Client) UDP(addr string) Result { return c.do(request{Op: "udp", Addr: addr}) }

// UDPConnected does the same from a socket connected to addr.
func (c *Client) UDPConnected(addr string) Result { return c.do(request{Op: "udpconn", Addr: addr}) }
