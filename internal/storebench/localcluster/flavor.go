package localcluster

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Flavor is the kind of server a cluster runs.
type Flavor string

// The server kinds Start knows how to launch.
const (
	Etcd  Flavor = "etcd"
	Cairn Flavor = "cairn"
)

// ports are the loopback ports one member listens on.
type ports struct {
	client, peer, metrics int
}

// memberName is the name of member i (from 0), e.g. e1 or s1, the names the
// kill command's {member} placeholder receives.
func (f Flavor) memberName(i int) string {
	if f == Etcd {
		return fmt.Sprintf("e%d", i+1)
	}
	return fmt.Sprintf("s%d", i+1)
}

// args returns the command line for member i of a cluster with the given
// ports. Both flavors run without TLS so that the transport costs the same.
func (f Flavor) args(dir string, i int, all []ports) ([]string, error) {
	name := f.memberName(i)
	p := all[i]
	dataDir := filepath.Join(dir, name+".data")
	peers := make([]string, len(all))
	switch f {
	case Etcd:
		for j, q := range all {
			peers[j] = fmt.Sprintf("%s=http://127.0.0.1:%d", f.memberName(j), q.peer)
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", p.client)
		peer := fmt.Sprintf("http://127.0.0.1:%d", p.peer)
		return []string{
			"--name", name,
			"--data-dir", dataDir,
			"--listen-client-urls", client,
			"--advertise-client-urls", client,
			"--listen-peer-urls", peer,
			"--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(peers, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "localcluster",
			"--log-level", "warn",
		}, nil
	case Cairn:
		for j, q := range all {
			peers[j] = fmt.Sprintf("%s=127.0.0.1:%d", f.memberName(j), q.peer)
		}
		return []string{
			"server",
			"--name", name,
			"--data-dir", dataDir,
			"--insecure",
			"--peer-listen", fmt.Sprintf("127.0.0.1:%d", p.peer),
			"--store-listen", fmt.Sprintf("127.0.0.1:%d", p.client),
			"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", p.metrics),
			"--initial-cluster", strings.Join(peers, ","),
			"--disable", "apiserver,scheduler,controllers",
		}, nil
	default:
		return nil, fmt.Errorf("localcluster: unknown flavor %q: use etcd or cairn", f)
	}
}
