package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// placeExample writes deploy/examples/NAME as the machine's /etc/cairn/TO,
// with the docs' addresses made the lab's, and the unit that reads it.
func (m *machine) placeExample(t *testing.T, name, to, unit string) {
	t.Helper()
	l := m.lab
	text := readFileString(t, filepath.Join(l.repo, "deploy/examples", name))
	text = regexp.MustCompile(`\b10\.0\.[01]\.[0-9]+\b`).ReplaceAllStringFunc(text, l.addr)
	if err := os.WriteFile(m.path("/etc/cairn/"+to), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	unitFile := readFileString(t, filepath.Join(l.repo, "deploy/systemd", unit+".service"))
	if err := os.MkdirAll(m.path("/etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.path("/etc/systemd/system/"+unit+".service"), []byte(unitFile), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExampleServerConfigsRunACluster starts the unit of each example
// server configuration: server1.yaml to server3.yaml bootstrap a cluster,
// which server4.yaml then joins as a learner. The server refuses unknown
// keys and bad values, so a stale example fails here.
func TestExampleServerConfigsRunACluster(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.sh(t, l.machine("s1"), "cairn pki init --dir /etc/cairn/pki")
	for i, name := range []string{"s1", "s2", "s3"} {
		m := l.machine(name)
		if name != "s1" {
			l.sh(t, m, "scp -rp s1:/etc/cairn/pki /etc/cairn/")
		}
		m.placeExample(t, "server"+string(rune('1'+i))+".yaml", "server.yaml", "cairn-server")
		if err := m.unit("cairn-server").start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"s1", "s2", "s3"} {
		if err := l.machine(name).waitHealthy(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	s4 := l.machine("s4")
	l.sh(t, s4, "scp -rp s1:/etc/cairn/pki /etc/cairn/")
	s4.placeExample(t, "server4.yaml", "server.yaml", "cairn-server")
	if err := s4.unit("cairn-server").start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := l.members(t, l.machine("s1"), "https://"+l.machine("s1").ip+":2379")
		joined := false
		for _, mem := range list.Members {
			if mem.Name == "s4" && mem.IsLearner && len(mem.ClientURLs) > 0 {
				joined = true
			}
		}
		if joined {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("s4 did not join as a learner: members %+v\n%s", list.Members, tail(s4.unit("cairn-server").logPath(), 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestExampleConfigsParse runs each command with an example
// configuration up to the point where its flags are all read, and checks
// that an unknown key is refused by name.
func TestExampleConfigsParse(t *testing.T) {
	t.Parallel()
	bin := cairnBin(t)
	examples := filepath.Join(repoRoot(t), "deploy", "examples")
	withKey := func(name, extra string) string {
		b, err := os.ReadFile(filepath.Join(examples, name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, append(b, []byte(extra)...), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{
			// The agent checks --max-pods after every other flag, its
			// labels and addresses included, has been read and parsed.
			name: "agent.yaml is read whole",
			args: []string{"agent", "--config", filepath.Join(examples, "agent.yaml"), "--max-pods", "0"},
			want: "--max-pods 0: must be at least 1",
		},
		{
			name: "an unknown key in agent.yaml is refused",
			args: []string{"agent", "--config", withKey("agent.yaml", "node-nmae: n2\n"), "--max-pods", "0"},
			want: `unknown key "node-nmae"`,
		},
		{
			// --disable is checked after every flag is read.
			name: "server1.yaml is read whole",
			args: []string{"server", "--config", filepath.Join(examples, "server1.yaml"), "--disable", "nothing"},
			want: `--disable "nothing": unknown component`,
		},
		{
			name: "an unknown key in server1.yaml is refused",
			args: []string{"server", "--config", withKey("server1.yaml", "snapshot-intervall: 1h\n")},
			want: `unknown key "snapshot-intervall"`,
		},
		{
			name: "server4.yaml is read whole",
			args: []string{"server", "--config", filepath.Join(examples, "server4.yaml"), "--disable", "nothing"},
			want: `--disable "nothing": unknown component`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tt.args...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			err := cmd.Run()
			if err == nil {
				t.Fatalf("cairn %s succeeded; want it to stop with %q", strings.Join(tt.args, " "), tt.want)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("cairn %s: stderr does not say %q:\n%s", strings.Join(tt.args, " "), tt.want, stderr.String())
			}
		})
	}
}
