package deploy

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCairn writes a stand-in binary that answers `version`, so the
// install tests need not copy the real one each time.
func fakeCairn(t *testing.T, version string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cairn")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho cairn "+version+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// install runs deploy/install.sh with args and the environment env, and
// returns its output and error.
func install(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), "deploy", "install.sh"), args...)
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// layout lists every file and directory under root with its mode.
func layout(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	got := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		got["/"+rel] = fi.Mode() & (fs.ModeDir | fs.ModePerm)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestInstallScriptLaysOutAMachine installs into empty roots, as a
// package build or a test would, and checks every path, mode and
// rewritten ExecStart; then that a second run keeps what the operator
// edited and that bad input installs nothing.
func TestInstallScriptLaysOutAMachine(t *testing.T) {
	t.Parallel()
	d := fs.ModeDir
	want := func(prefix string) map[string]fs.FileMode {
		m := map[string]fs.FileMode{
			"/etc": d | 0o755, "/etc/cairn": d | 0o755, "/etc/systemd": d | 0o755, "/etc/systemd/system": d | 0o755,
			"/etc/systemd/system/cairn-server.service": 0o644, "/etc/systemd/system/cairn-agent.service": 0o644,
			"/var": d | 0o755, "/var/lib": d | 0o755, "/var/backups": d | 0o755, "/var/backups/cairn": d | 0o700,
			"/var/lib/cairn": d | 0o700, "/var/lib/cairn/server": d | 0o700, "/var/lib/cairn/agent": d | 0o700,
		}
		examples, err := os.ReadDir(filepath.Join(repoRoot(t), "deploy", "examples"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range examples {
			m["/etc/cairn/"+e.Name()] = 0o644
		}
		for p := prefix; p != "/"; p = filepath.Dir(p) {
			m[p] = d | 0o755
		}
		m[prefix+"/bin"] = d | 0o755
		m[prefix+"/bin/cairn"] = 0o755
		return m
	}
	tests := []struct {
		name   string
		env    func(root string) []string
		args   func(root string) []string
		prefix string
	}{
		{"destdir flag", func(string) []string { return nil }, func(root string) []string { return []string{"--destdir", root} }, "/usr/local"},
		{"DESTDIR variable", func(root string) []string { return []string{"DESTDIR=" + root} }, func(string) []string { return nil }, "/usr/local"},
		{"prefix", func(string) []string { return nil }, func(root string) []string { return []string{"--destdir=" + root, "--prefix", "/opt/cairn"} }, "/opt/cairn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			bin := fakeCairn(t, "v1")
			out, err := install(t, tt.env(root), append(tt.args(root), "--bin", bin)...)
			if err != nil {
				t.Fatalf("install.sh: %v\n%s", err, out)
			}
			got, wantLayout := layout(t, root), want(tt.prefix)
			delete(got, "/.")
			for p, mode := range wantLayout {
				if got[p] != mode {
					t.Errorf("%s: mode %v, want %v", p, got[p], mode)
				}
			}
			for p := range got {
				if _, ok := wantLayout[p]; !ok {
					t.Errorf("%s was installed but is not part of the layout", p)
				}
			}
			for _, unit := range []string{"cairn-server", "cairn-agent"} {
				text := readFileString(t, filepath.Join(root, "etc/systemd/system", unit+".service"))
				if !strings.Contains(text, "ExecStart="+tt.prefix+"/bin/cairn ") {
					t.Errorf("%s's ExecStart does not run %s/bin/cairn", unit, tt.prefix)
				}
			}
			if b := readFileString(t, filepath.Join(root, tt.prefix, "bin/cairn")); b != readFileString(t, bin) {
				t.Errorf("the installed binary is not the one given")
			}
		})
	}

	t.Run("a second run keeps the operator's files and upgrades the rest", func(t *testing.T) {
		root := t.TempDir()
		if out, err := install(t, nil, "--destdir", root, "--bin", fakeCairn(t, "v1")); err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		edited := filepath.Join(root, "etc/cairn/cluster.env")
		unit := filepath.Join(root, "etc/systemd/system/cairn-server.service")
		for _, f := range []string{edited, unit} {
			if err := os.WriteFile(f, []byte("S1=192.0.2.1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		v2 := fakeCairn(t, "v2")
		out, err := install(t, nil, "--destdir", root, "--bin", v2)
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		if got := readFileString(t, edited); got != "S1=192.0.2.1\n" {
			t.Errorf("install.sh overwrote the edited cluster.env:\n%s", got)
		}
		if !strings.Contains(out, "kept      /etc/cairn/cluster.env") {
			t.Errorf("install.sh does not say it kept cluster.env:\n%s", out)
		}
		if got := readFileString(t, unit); !strings.Contains(got, "ExecStart=") {
			t.Errorf("install.sh did not replace the unit, which belongs to the release:\n%s", got)
		}
		if got := readFileString(t, filepath.Join(root, "usr/local/bin/cairn")); got != readFileString(t, v2) {
			t.Errorf("install.sh did not upgrade the binary")
		}
		out, err = install(t, nil, "--destdir", root, "--bin", v2)
		if err != nil || !strings.Contains(out, "kept      /usr/local/bin/cairn (same binary: cairn v2)") {
			t.Errorf("a third run with the same binary: %v\n%s", err, out)
		}
	})

	t.Run("the agent's shim and helper come from beside the binary", func(t *testing.T) {
		root := t.TempDir()
		bin := fakeCairn(t, "v1")
		for _, name := range []string{"cairn-shim", "cairn-helper"} {
			if err := os.WriteFile(filepath.Join(filepath.Dir(bin), name), []byte("#!/bin/sh\n# "+name+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := install(t, nil, "--destdir", root, "--bin", bin); err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		for _, name := range []string{"cairn-shim", "cairn-helper"} {
			got := filepath.Join(root, "usr/local/bin", name)
			if readFileString(t, got) != readFileString(t, filepath.Join(filepath.Dir(bin), name)) {
				t.Errorf("%s was not installed beside cairn", name)
			}
			if fi, err := os.Stat(got); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: %v, want mode 0755", name, err)
			}
		}
		// A release without them leaves none of another version behind,
		// and says what the agent lacks.
		out, err := install(t, nil, "--destdir", root, "--bin", fakeCairn(t, "v2"))
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		if !strings.Contains(out, "no cairn-shim next to") || !strings.Contains(out, "cannot start containers") {
			t.Errorf("install.sh without a shim does not warn that the agent cannot start containers:\n%s", out)
		}
		for _, name := range []string{"cairn-shim", "cairn-helper"} {
			if _, err := os.Stat(filepath.Join(root, "usr/local/bin", name)); !os.IsNotExist(err) {
				t.Errorf("%s of the older release was kept: %v", name, err)
			}
		}
	})

	refusals := []struct {
		name string
		args func(root string) []string
		want string
	}{
		{"a binary that does not run", func(root string) []string { return []string{"--destdir", root, "--bin", "/bin/false"} }, "does not run on this machine"},
		{"a missing binary", func(root string) []string { return []string{"--destdir", root, "--bin", root + "/nothing"} }, "is not an executable file"},
		{"a relative prefix", func(root string) []string { return []string{"--destdir", root, "--prefix", "opt"} }, "--prefix must be an absolute path"},
		{"an unknown flag", func(root string) []string { return []string{"--destdir", root, "--force"} }, "unknown argument: --force"},
	}
	for _, tt := range refusals {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			root := t.TempDir()
			out, err := install(t, nil, tt.args(root)...)
			if err == nil || !strings.Contains(out, tt.want) {
				t.Errorf("install.sh %s: %v, want a failure saying %q:\n%s", strings.Join(tt.args(root), " "), err, tt.want, out)
			}
			if entries, _ := os.ReadDir(root); len(entries) > 0 {
				t.Errorf("install.sh installed something before refusing: %v", entries)
			}
		})
	}
}

// TestInstallScriptIsShellcheckClean runs shellcheck on install.sh.
func TestInstallScriptIsShellcheckClean(t *testing.T) {
	t.Parallel()
	requireTool(t, "shellcheck", "shellcheck")
	out, err := exec.Command("shellcheck", filepath.Join(repoRoot(t), "deploy", "install.sh")).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck deploy/install.sh: %v\n%s", err, out)
	}
}
