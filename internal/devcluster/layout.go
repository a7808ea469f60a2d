package devcluster

import "path/filepath"

// Layout names the files of a state directory:
//
//	pki/                   the cluster CA and the admin certificate
//	s1/ s2/ s3/            the servers' data directories
//	n1/ n2/                the agents' data directories
//	logs/NAME.log          each process's output (s1, n1...)
//	bpf/                   a private bpf filesystem for the agents' pins
//	images/                the demo image, built from the binary
//	admin.kubeconfig       the admin's kubeconfig
//	cluster.json           settings fixed at the first start
//	run.json               the running supervisor and its children
//	lock                   held by the supervisor
type Layout struct {
	// Dir is the state directory.
	Dir string
}

// PKI is the CA directory.
func (l Layout) PKI() string { return filepath.Join(l.Dir, "pki") }

// Data is the data directory of a server or agent by short name.
func (l Layout) Data(name string) string { return filepath.Join(l.Dir, name) }

// Logs is the log directory.
func (l Layout) Logs() string { return filepath.Join(l.Dir, "logs") }

// Log is the log file of a server or agent by short name.
func (l Layout) Log(name string) string { return filepath.Join(l.Logs(), name+".log") }

// BPF is the mount point of the agents' bpf filesystem.
func (l Layout) BPF() string { return filepath.Join(l.Dir, "bpf") }

// Images holds the built demo image.
func (l Layout) Images() string { return filepath.Join(l.Dir, "images") }

// Kubeconfig is the admin kubeconfig kept in the state directory.
func (l Layout) Kubeconfig() string { return filepath.Join(l.Dir, "admin.kubeconfig") }

// Settings is the file of the settings fixed at the first start.
func (l Layout) Settings() string { return filepath.Join(l.Dir, "cluster.json") }

// RunState is the file describing the running cluster.
func (l Layout) RunState() string { return filepath.Join(l.Dir, "run.json") }

// Control is the socket where the supervisor takes start and stop
// requests.
func (l Layout) Control() string { return filepath.Join(l.Dir, "control.sock") }

// Lock is the supervisor's lock file.
func (l Layout) Lock() string { return filepath.Join(l.Dir, "lock") }
