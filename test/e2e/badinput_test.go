package e2e

import (
	"path/filepath"
	"testing"
)

// TestBadInputIsRefusedWithAClearError runs commands a user can get wrong
// and checks each exits non-zero with an error that says what to fix. No
// cluster is started.
func TestBadInputIsRefusedWithAClearError(t *testing.T) {
	pki := pkiInit(t)
	dir := t.TempDir()
	ports := freePorts(t, 2)
	listen := []string{"--peer-listen", ports[0], "--store-listen", ports[1]}
	newData := filepath.Join(dir, "new-data")
	withListen := func(args ...string) []string { return append(args, listen...) }

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "unknown flag",
			args: []string{"server", "--no-such-flag"},
			want: []string{"unknown flag: --no-such-flag"},
		},
		{
			name: "initial-cluster without an address",
			args: withListen("server", "--name", "s1", "--data-dir", newData, "--pki-dir", pki, "--initial-cluster", "s1"),
			want: []string{"--initial-cluster", `"s1"`, "name=host:port"},
		},
		{
			name: "new data dir without initial-cluster or join",
			args: withListen("server", "--name", "s1", "--data-dir", newData, "--pki-dir", pki),
			want: []string{"--initial-cluster", "--join"},
		},
		{
			name: "unknown component to disable",
			args: withListen("server", "--name", "s1", "--data-dir", newData, "--pki-dir", pki, "--disable", "bogus"),
			want: []string{"--disable", `"bogus"`, "apiserver"},
		},
		{
			name: "no pki dir and not insecure",
			args: withListen("server", "--name", "s1", "--data-dir", newData, "--initial-cluster", "s1="+ports[0]),
			want: []string{"--pki-dir is required", "cairn pki init", "--insecure"},
		},
		{
			name: "server without a name",
			args: withListen("server", "--data-dir", newData, "--pki-dir", pki, "--initial-cluster", "s1="+ports[0]),
			want: []string{"--name is required"},
		},
		{
			name: "pki init without a dir",
			args: []string{"pki", "init"},
			want: []string{"--dir is required"},
		},
		{
			name: "snapshot status of a missing file",
			args: []string{"snapshot", "status", filepath.Join(dir, "missing.snap")},
			want: []string{"missing.snap"},
		},
		{
			name: "snapshot restore without its flags",
			args: []string{"snapshot", "restore", filepath.Join(dir, "missing.snap")},
			want: []string{"--data-dir", "--name", "--initial-cluster"},
		},
		{
			name: "unknown command",
			args: []string{"no-such-command"},
			want: []string{"unknown command", "no-such-command"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runRefused(t, tt.want, tt.args...)
			if r.stdout != "" {
				t.Errorf("a refused command should print nothing on stdout:\n%s", r)
			}
		})
	}
}
