package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// block is one ```sh block of a runbook: commands an operator runs, in a
// root shell on the machines its first line names ("# on s1, s2 and s3").
// Blocks of other languages (console, text, yaml) are illustrations and
// are not run.
type block struct {
	doc     string // file name under docs/runbooks
	line    int    // line of the opening fence
	section string // the heading above the block
	hosts   []string
	text    string
}

func (b block) String() string { return fmt.Sprintf("%s:%d (%s)", b.doc, b.line, b.section) }

// machineNameRE is how the docs name machines: s1-s9 (servers), r1-r9
// (replacement machines), n1-n9 (nodes) and lb.
func machineNameRE() *regexp.Regexp { return regexp.MustCompile(`^(s[1-9]|r[1-9]|n[1-9]|lb)$`) }

// onLineRE is the first line of every sh block: "# on s1", "# on s1, s2
// and s3", optionally followed by a remark after ":" or "(".
func onLineRE() *regexp.Regexp { return regexp.MustCompile(`^# on ([^:(]+)`) }

// readRunbook returns the sh blocks of docs/runbooks/NAME, failing the
// test when one does not say where it runs.
func readRunbook(t testing.TB, name string) []block {
	t.Helper()
	path := filepath.Join(repoRoot(t), "docs", "runbooks", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseRunbook(name, string(data))
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

func parseRunbook(name, text string) ([]block, error) {
	onLine, machineName := onLineRE(), machineNameRE()
	var blocks []block
	var cur *block
	var lines []string
	section := ""
	for i, line := range strings.Split(text, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			lang := strings.Fields(strings.TrimPrefix(line, "```") + " ")
			cur = &block{doc: name, line: i + 1, section: section}
			if len(lang) == 0 || lang[0] != "sh" {
				cur.doc = "" // not run
			}
			lines = nil
		case cur != nil && strings.TrimSpace(line) == "```":
			if cur.doc != "" {
				if len(lines) == 0 {
					return nil, fmt.Errorf("%s:%d: empty sh block", name, cur.line)
				}
				g := onLine.FindStringSubmatch(lines[0])
				if g == nil {
					return nil, fmt.Errorf("%s:%d: an sh block starts with the machines it runs on, e.g. \"# on s1\" or \"# on s1, s2 and s3\"; it starts with %q", name, cur.line, lines[0])
				}
				for _, f := range strings.FieldsFunc(g[1], func(r rune) bool { return r == ',' || r == ' ' }) {
					if f == "and" {
						continue
					}
					if !machineName.MatchString(f) {
						return nil, fmt.Errorf("%s:%d: %q is not a machine name (s1-s9, r1-r9, n1-n9, lb) in %q", name, cur.line, f, lines[0])
					}
					cur.hosts = append(cur.hosts, f)
				}
				cur.text = strings.Join(lines, "\n") + "\n"
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			lines = append(lines, line)
		case strings.HasPrefix(line, "#"):
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block is not closed", name, cur.line)
	}
	return blocks, nil
}

// sections returns the blocks under headings that start with one of
// prefixes, in document order; a prefix that matches no block fails the
// test, so that a renamed heading cannot make it pass with nothing run.
func sections(t testing.TB, blocks []block, prefixes ...string) []block {
	t.Helper()
	var out []block
	used := map[string]bool{}
	for _, b := range blocks {
		for _, p := range prefixes {
			if strings.HasPrefix(b.section, p) {
				out = append(out, b)
				used[p] = true
				break
			}
		}
	}
	for _, p := range prefixes {
		if !used[p] {
			t.Fatalf("no sh block under a heading starting with %q in %s", p, blocks[0].doc)
		}
	}
	return out
}

// prelude comes before every block: the shell an operator has open.
const prelude = `set -eo pipefail
. "$LAB_CLUSTER_ENV"
lab_call() {
	local fd line code=1
	exec {fd}<>"/dev/tcp/127.0.0.1/$LAB_CONTROL_PORT"
	printf '%s\t' "$LAB_MACHINE" "$@" >&"$fd"
	printf '\n' >&"$fd"
	while IFS= read -r line <&"$fd"; do
		case $line in
		"lab-exit "*) code=${line#lab-exit }; break ;;
		esac
		printf '%s\n' "$line"
	done
	exec {fd}>&-
	return "$code"
}
systemctl() { lab_call systemctl "$@"; }
journalctl() { lab_call journalctl "$@"; }
scp() {
	local args=() a
	for a in "$@"; do
		case $a in -*) ;; *) args+=("$a") ;; esac
	done
	cp -R -p "${args[@]}"
}
apt-get() { echo "lab: apt-get $*: the test machine's packages are used"; }
haproxy() {
	local args=() a file=
	for a in "$@"; do
		if [ -n "$file" ]; then a=$(lab_call render haproxy "$a"); fi
		file=; [ "$a" = -f ] && file=yes
		args+=("$a")
	done
	command haproxy "${args[@]}"
}
PS4='+ '
set -x
`

// blockTimeout bounds one block on one machine; the runbooks' waits loop
// until the cluster is ready, which takes seconds.
const blockTimeout = 90 * time.Second

// run runs the blocks in order, each on each of its machines in turn, and
// fails the test at the first command that fails.
func (l *lab) run(t *testing.T, blocks ...block) {
	t.Helper()
	for _, b := range blocks {
		for _, host := range b.hosts {
			out, err := l.runOn(l.machine(host), b)
			if err != nil {
				t.Fatalf("runbook %s on %s: %v\n%s", b, host, err, out)
			}
		}
		l.mu.Lock()
		l.ran[b.String()] = true
		l.mu.Unlock()
	}
}

// checkAllRun fails the test for every block of a runbook it did not run:
// a runbook test covers its whole runbook.
func (l *lab) checkAllRun(t *testing.T, blocks []block) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range blocks {
		if !l.ran[b.String()] {
			t.Errorf("the test did not run %s", b)
		}
	}
}

// absPathRE finds absolute file paths in commands (URLs' paths follow a
// host, not a separator, and are not matched).
func absPathRE() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s"'=(])(/[A-Za-z0-9_.*-][A-Za-z0-9_./*-]*)`)
}

// unmappedPaths returns the absolute paths of text that are not under a
// machine's hostPaths: run in the lab, they would reach the test machine's
// own files.
func unmappedPaths(text string) []string {
	var out []string
	for _, g := range absPathRE().FindAllStringSubmatch(text, -1) {
		p := g[1]
		// An API path, a key of the store, or nothing.
		mapped := p == "/readyz" || p == "/dev/null" || strings.HasPrefix(p, "/registry/")
		for _, h := range hostPaths() {
			if p == h || strings.HasPrefix(p, h+"/") {
				mapped = true
			}
		}
		if !mapped {
			out = append(out, p)
		}
	}
	return out
}

// runOn runs one block on one machine and returns its output.
func (l *lab) runOn(m *machine, b block) (string, error) {
	if bad := unmappedPaths(b.text); len(bad) > 0 {
		return "", fmt.Errorf("lab: refusing to run a block that uses %v, outside the machine paths %v", bad, hostPaths())
	}
	script, err := m.rewrite(prelude + b.text)
	if err != nil {
		return "", err
	}
	// The operator's /etc/cairn/cluster.env, with the machine's paths.
	envFile, err := os.ReadFile(m.path("/etc/cairn/cluster.env"))
	if err != nil {
		return "", err
	}
	env, err := m.rewrite(string(envFile))
	if err != nil {
		return "", err
	}
	clusterEnv := m.path("/run/lab/cluster.env")
	if err := os.WriteFile(clusterEnv, []byte(env), 0o644); err != nil {
		return "", err
	}
	l.mu.Lock()
	l.blocks++
	n := l.blocks
	l.mu.Unlock()
	file := m.path(fmt.Sprintf("/run/lab/block-%03d.sh", n))
	if err := os.WriteFile(file, []byte(script), 0o700); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", file)
	cmd.Dir = l.checkout
	// DESTDIR makes install.sh install into the machine's root.
	cmd.Env = append(baseEnv(m), "DESTDIR="+m.root, "LAB_CLUSTER_ENV="+clusterEnv, "LAB_MACHINE="+m.name, "LAB_CONTROL_PORT="+portOf(l.ctl.Addr().String()))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A block's own background commands end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if f, ferr := os.OpenFile(m.path("/var/log/commands.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
		fmt.Fprintf(f, "=== %s %s\n%s", time.Now().Format(time.RFC3339Nano), b, out.String())
		f.Close()
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %s, killed", blockTimeout)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("exit code %d", exit.ExitCode())
	}
	return fmt.Sprintf("$ %s\n%s", file, out.String()), err
}

func portOf(addr string) string {
	i := strings.LastIndex(addr, ":")
	return addr[i+1:]
}
