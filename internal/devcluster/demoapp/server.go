package demoapp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// DefaultPort is the port the demo server listens on in its pod.
const DefaultPort = 8080

// Identity is what the server says about itself.
type Identity struct {
	// Pod, IP and Node name the pod, its address and its node.
	Pod, IP, Node string
}

// IdentityFromEnv reads the pod's identity from POD_NAME, POD_IP and
// NODE_NAME (set through the downward API), falling back to the host name
// and the first non-loopback IPv4 address when they are missing.
func IdentityFromEnv() Identity {
	id := Identity{Pod: os.Getenv("POD_NAME"), IP: os.Getenv("POD_IP"), Node: os.Getenv("NODE_NAME")}
	if id.Pod == "" {
		id.Pod, _ = os.Hostname()
	}
	if id.IP == "" {
		id.IP = firstIPv4()
	}
	if id.Node == "" {
		id.Node = "unknown"
	}
	return id
}

func firstIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "unknown"
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	return "unknown"
}

// Greeting is the body of the server's answer to "/".
func (id Identity) Greeting() string {
	return fmt.Sprintf("hello from pod %s (%s) on node %s\n", id.Pod, id.IP, id.Node)
}

// Handler answers "/" with the identity's greeting and "/healthz" with ok.
func Handler(id Identity) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, id.Greeting())
	})
	return mux
}

// Serve answers on ln until ctx ends, then drains requests for up to
// five seconds, as a pod being deleted should.
func Serve(ctx context.Context, ln net.Listener, id Identity) error {
	srv := &http.Server{Handler: Handler(id), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return fmt.Errorf("demoapp: %w", err)
}
