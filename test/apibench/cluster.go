package main

import (
	"bytes"
	"cairn/internal/testport"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// startTimeout bounds how long the cluster may take to serve the API.
const startTimeout = 90 * time.Second

// cluster is a 3-replica cairn cluster of real processes on loopback, each
// replica serving the Kubernetes API with TLS.
type cluster struct {
	bin     string
	dir     string
	pkiDir  string
	members []*member
	log     *slog.Logger
}

// member is one `cairn server` process.
type member struct {
	name                      string
	dataDir, logPath          string
	peer, store, api, metrics string // loopback host:port
	cmd                       *exec.Cmd
	done                      chan struct{}
}

// apiURL is where clients reach the member's API server.
func (m *member) apiURL() string { return "https://" + m.api }

// metricsURL is the member's Prometheus endpoint.
func (m *member) metricsURL() string { return "http://" + m.metrics + "/metrics" }

// newCluster lays out n members under dir with free loopback ports.
func newCluster(bin, dir string, n int, log *slog.Logger) (*cluster, error) {
	ports, err := freePorts(4 * n)
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, dir: dir, pkiDir: filepath.Join(dir, "pki"), log: log}
	for i := range n {
		name := fmt.Sprintf("s%d", i+1)
		c.members = append(c.members, &member{
			name:    name,
			dataDir: filepath.Join(dir, name+".data"),
			logPath: filepath.Join(dir, name+".log"),
			peer:    ports[4*i], store: ports[4*i+1], api: ports[4*i+2], metrics: ports[4*i+3],
		})
	}
	return c, nil
}

// serverArgs is member m's command line: TLS from the cluster CA, the API
// on, and the leader-only loops off so that nothing but the benchmark
// writes.
func (c *cluster) serverArgs(m *member) []string {
	peers := make([]string, len(c.members))
	for i, p := range c.members {
		peers[i] = p.name + "=" + p.peer
	}
	return []string{
		"server", "--name", m.name, "--data-dir", m.dataDir, "--pki-dir", c.pkiDir,
		"--peer-listen", m.peer, "--store-listen", m.store,
		"--api-listen", m.api, "--metrics-listen", m.metrics,
		"--initial-cluster", strings.Join(peers, ","),
		"--disable", "scheduler,controllers",
	}
}

// start creates the CA, starts every member and waits until each API
// server is ready. On error the members already started are stopped.
func (c *cluster) start(ctx context.Context) error {
	if out, err := exec.CommandContext(ctx, c.bin, "pki", "init", "--dir", c.pkiDir).CombinedOutput(); err != nil {
		return fmt.Errorf("apibench: %s pki init: %w\n%s", c.bin, err, out)
	}
	for _, m := range c.members {
		if err := m.start(c.bin, c.serverArgs(m)); err != nil {
			c.stop()
			return err
		}
	}
	c.log.Info("waiting for the API servers", "members", len(c.members), "dir", c.dir)
	if err := c.waitReady(ctx); err != nil {
		c.stop()
		return err
	}
	return nil
}

// kubeconfig is the admin kubeconfig the first member wrote.
func (c *cluster) kubeconfig() string {
	return filepath.Join(c.members[0].dataDir, "admin.kubeconfig")
}

// waitReady polls every member's /readyz until all answer 200 and the
// admin kubeconfig exists, failing fast when a member exits.
func (c *cluster) waitReady(ctx context.Context) error {
	hc, err := c.httpClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var last error
	for {
		if err := c.exited(); err != nil {
			return err
		}
		if last = c.ready(ctx, hc); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("apibench: cluster not ready after %s (logs in %s): %w", startTimeout, c.dir, last)
			}
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) ready(ctx context.Context, hc *http.Client) error {
	for _, m := range c.members {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.apiURL()+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: /readyz: %s", m.name, resp.Status)
		}
	}
	if _, err := os.Stat(c.kubeconfig()); err != nil {
		return err
	}
	return nil
}

// httpClient trusts the cluster CA; /readyz needs no credentials.
func (c *cluster) httpClient() (*http.Client, error) {
	pem, err := os.ReadFile(filepath.Join(c.pkiDir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("apibench: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("apibench: no certificate in %s", filepath.Join(c.pkiDir, "ca.crt"))
	}
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}, nil
}

// exited returns an error naming the first member that is no longer
// running, with the end of its log.
func (c *cluster) exited() error {
	for _, m := range c.members {
		if m.exited() {
			return fmt.Errorf("apibench: server %s exited; its log %s ends with:\n%s", m.name, m.logPath, m.logTail(3000))
		}
	}
	return nil
}

// stop ends every member, all at once.
func (c *cluster) stop() {
	for _, m := range c.members {
		if !m.exited() {
			m.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, m := range c.members {
		m.wait(10 * time.Second)
	}
}

// start launches the process with its output in the member's log.
func (m *member) start(bin string, args []string) error {
	logFile, err := os.Create(m.logPath)
	if err != nil {
		return fmt.Errorf("apibench: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C at the terminal reaches only the
		// harness, which then stops every member itself.
		Setpgid: true,
		// A harness that dies without cleaning up takes the members along.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("apibench: starting %s: %w", m.name, err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func() {
		cmd.Wait()
		close(m.done)
	}()
	return nil
}

func (m *member) exited() bool {
	if m.done == nil {
		return true
	}
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to end, killing it after grace.
func (m *member) wait(grace time.Duration) {
	if m.done == nil {
		return
	}
	select {
	case <-m.done:
	case <-time.After(grace):
		m.cmd.Process.Kill()
		<-m.done
	}
}

// logTail returns about the last n bytes of the member's log, from a line
// start.
func (m *member) logTail(n int) string {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// freePorts returns n loopback addresses whose ports are free right now;
// all are held until the last is taken, so that they differ.
func freePorts(n int) ([]string, error) { return testport.Free(n) }
