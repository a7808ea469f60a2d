package cri

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
)

func TestNewExplainsAMissingContainerd(t *testing.T) {
	dir := t.TempDir()
	// A socket file nobody listens on any more, as after a crash.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	tests := []struct {
		name, socket, want string
	}{
		{"NoSocket", "unix://" + filepath.Join(dir, "absent.sock"), "containerd is not running at " + filepath.Join(dir, "absent.sock") + " "},
		{"StaleSocket", stale, "containerd is not running at " + stale},
		{"TCPEndpoint", "tcp://127.0.0.1:1234", "only unix sockets are supported"},
		{"RelativePath", "run/containerd.sock", "not an absolute socket path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), Config{Socket: tt.socket, ConnectTimeout: 300 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New(%q) = %v, want an error saying %q", tt.socket, err, tt.want)
			}
			if tt.name != "TCPEndpoint" && tt.name != "RelativePath" && !strings.Contains(err.Error(), "use --runtime embedded") {
				t.Fatalf("error %q does not say what to do", err)
			}
		})
	}
}

func TestNewRefusesARuntimeWithoutCRIv1(t *testing.T) {
	// A gRPC server with no services answers every call Unimplemented,
	// as containerd does with its cri plugin disabled.
	sock := filepath.Join(t.TempDir(), "c.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	_, err = New(context.Background(), Config{Socket: "unix://" + sock})
	if err == nil || !strings.Contains(err.Error(), "does not serve the CRI v1 API") {
		t.Fatalf("New = %v, want an error about CRI v1", err)
	}
}

func TestSocketPath(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock"},
		{"unix:/run/c.sock", "/run/c.sock"},
		{"/run/c.sock", "/run/c.sock"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := socketPath(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("socketPath(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestWriteCNIConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net.d")
	if err := WriteCNIConfig(dir, "10.244.3.0/24"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "10-cairn.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		CNIVersion string           `json:"cniVersion"`
		Name       string           `json:"name"`
		Plugins    []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("conflist is not JSON: %v\n%s", err, b)
	}
	if list.Name != "cairn" || list.CNIVersion == "" || len(list.Plugins) != 2 {
		t.Fatalf("conflist:\n%s", b)
	}
	bridge, portmap := list.Plugins[0], list.Plugins[1]
	for k, want := range map[string]any{"type": "bridge", "bridge": "cairn0", "isGateway": true, "ipMasq": false, "hairpinMode": true} {
		if bridge[k] != want {
			t.Errorf("bridge %s = %v, want %v", k, bridge[k], want)
		}
	}
	ipam, _ := json.Marshal(bridge["ipam"])
	if !strings.Contains(string(ipam), `"type":"host-local"`) || !strings.Contains(string(ipam), `"subnet":"10.244.3.0/24"`) || !strings.Contains(string(ipam), `"dst":"0.0.0.0/0"`) {
		t.Errorf("ipam = %s", ipam)
	}
	if portmap["type"] != "portmap" || portmap["capabilities"].(map[string]any)["portMappings"] != true {
		t.Errorf("portmap = %v", portmap)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestCNIConfigRejectsBadPodCIDRs(t *testing.T) {
	for _, tt := range []struct{ cidr, want string }{
		{"", "podCIDR"},
		{"10.244.3.1/24", "did you mean 10.244.3.0/24"},
		{"banana", "podCIDR"},
	} {
		t.Run(tt.cidr, func(t *testing.T) {
			err := WriteCNIConfig(t.TempDir(), tt.cidr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("WriteCNIConfig(%q) = %v, want an error with %q", tt.cidr, err, tt.want)
			}
		})
	}
}

func TestCNIConfigIPv6(t *testing.T) {
	b, err := CNIConfig{PodCIDR: "fd00:10:244:3::/64"}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"dst": "::/0"`) {
		t.Fatalf("an IPv6 podCIDR needs an IPv6 default route:\n%s", b)
	}
	// The agent's node-wide egress rules are IPv4 only.
	if !strings.Contains(string(b), `"ipMasq": true`) {
		t.Fatalf("an IPv6 podCIDR is masqueraded by the bridge plugin:\n%s", b)
	}
}
