package deploy

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lab is the set of machines one test runs commands on. Its rules say what
// stands for what, so that the runbooks' commands run as written:
//
//   - A machine is a directory, its root, and a loopback address of its
//     own. The docs' address 10.0.0.N becomes 127.X.Y.N and 10.0.1.N
//     becomes 127.X.Y.(100+N), with X.Y random per lab, so servers listen
//     on the standard ports without meeting another test's.
//   - Commands see the machine's root instead of the absolute paths of
//     hostPaths (/etc/cairn, /var/lib/cairn, ...): the lab rewrites those
//     paths in command blocks and in the configuration files a unit reads.
//     "s2:/etc/cairn" (scp's notation) is under s2's root.
//   - Listening on 0.0.0.0 means listening on the machine's address.
//   - systemctl and journalctl are shell functions that ask the lab, which
//     runs the ExecStart of the unit installed in the machine's root as a
//     child of the test (haproxy.service is Debian's, in the foreground).
//     Restart= is not followed: a killed server stays down until a command
//     or the test starts it again. haproxy -c checks the configuration as
//     the unit reads it.
//   - /etc/cairn/cluster.env is written as the operator would write it:
//     deploy/examples/cluster.env with the lab's addresses.
//   - DESTDIR is the machine's root, so that install.sh installs there.
//   - scp copies between roots, and apt-get does nothing: the packages are
//     the test machine's.
//   - The binary under test is at /usr/local/bin/cairn already (a hard
//     link), which install.sh sees as the same binary and keeps.
type lab struct {
	t        *testing.T
	dir      string
	net      string // "127.X.Y."
	repo     string
	bin      string
	checkout string // working directory of commands: deploy/, docs/, bin/cairn
	ctl      net.Listener

	mu       sync.Mutex
	machines map[string]*machine
	roles    map[string]string // cluster.env variable -> machine name
	unitEnv  []string          // extra environment of every unit
	events   []unitEvent
	blocks   int             // blocks run so far, for their script names
	ran      map[string]bool // runbook blocks run, by block.String()
}

// hostPaths are the absolute paths of the docs and configurations that
// belong to one machine. /sys/fs/bpf/cairn, the agents' eBPF pins, maps
// to a plain directory of the machine: the lab's agents run without the
// eBPF proxy.
func hostPaths() []string {
	return []string{"/etc/cairn", "/etc/haproxy", "/etc/systemd/system", "/usr/local/bin", "/var/lib/cairn", "/var/backups/cairn", "/sys/fs/bpf/cairn"}
}

// standardPorts are the ports a machine's servers use: store, peer,
// metrics, API and kubelet.
func standardPorts() []int { return []int{2379, 2380, 2381, 6443, 10250} }

// newLab makes an empty lab; every unit it starts is stopped when t ends,
// and when t failed the units' last log lines are printed first.
func newLab(t *testing.T) *lab {
	t.Helper()
	l := &lab{
		t:        t,
		dir:      t.TempDir(),
		net:      fmt.Sprintf("127.%d.%d.", 64+rand.IntN(190), rand.IntN(256)),
		repo:     repoRoot(t),
		bin:      cairnBin(t),
		machines: map[string]*machine{},
		ran:      map[string]bool{},
		roles:    map[string]string{"S1": "s1", "S2": "s2", "S3": "s3", "S4": "s4", "LB": "lb", "N1": "n1"},
	}
	l.checkout = filepath.Join(l.dir, "release")
	for _, d := range []string{"deploy", "docs"} {
		mustLink(t, filepath.Join(l.repo, d), filepath.Join(l.checkout, d), true)
	}
	mustLink(t, l.bin, filepath.Join(l.checkout, "bin", "cairn"), true)
	// The release ships the agent's shim and helper beside cairn, as
	// make build leaves them, for install.sh to install.
	for _, name := range []string{"cairn-shim", "cairn-helper"} {
		src := filepath.Join(filepath.Dir(l.bin), name)
		if _, err := os.Stat(src); err != nil {
			t.Fatalf("lab: no %s beside %s (make build makes it): %v", name, l.bin, err)
		}
		mustLink(t, src, filepath.Join(l.checkout, "bin", name), true)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.ctl = ln
	go l.serveControl()
	t.Cleanup(func() {
		ln.Close()
		l.stopAll()
		if t.Failed() {
			l.dumpLogs()
		}
	})
	return l
}

// mustLink makes dst a link to src (a symlink, or a hard link falling back
// to a symlink), creating dst's directory.
func mustLink(t testing.TB, src, dst string, symlink bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if !symlink && os.Link(src, dst) == nil {
		return
	}
	if err := os.Symlink(src, dst); err != nil {
		t.Fatal(err)
	}
}

// addr turns a docs address (10.0.0.N, 10.0.1.N) into the lab's.
func (l *lab) addr(example string) string {
	ip := net.ParseIP(example).To4()
	if ip == nil || ip[0] != 10 || ip[1] != 0 || ip[2] > 1 {
		l.t.Fatalf("lab: %s is not a docs address (10.0.0.N or 10.0.1.N)", example)
	}
	return l.net + strconv.Itoa(int(ip[2])*100+int(ip[3]))
}

// docsAddr is the address the docs give a machine: s1-s9 are 10.0.0.1-9,
// lb is 10.0.0.10, r1-r9 (replacement machines) are 10.0.0.21-29 and
// n1-n9 (nodes) are 10.0.1.1-9.
func docsAddr(name string) (string, error) {
	if name == "lb" {
		return "10.0.0.10", nil
	}
	if len(name) == 2 && name[1] >= '1' && name[1] <= '9' {
		n := int(name[1] - '0')
		switch name[0] {
		case 's':
			return fmt.Sprintf("10.0.0.%d", n), nil
		case 'r':
			return fmt.Sprintf("10.0.0.%d", 20+n), nil
		case 'n':
			return fmt.Sprintf("10.0.1.%d", n), nil
		}
	}
	return "", fmt.Errorf("lab: no machine %q: machines are s1-s9, r1-r9, n1-n9 and lb", name)
}

// machine returns the named machine, making it on first use.
func (l *lab) machine(name string) *machine {
	l.t.Helper()
	l.mu.Lock()
	m := l.machines[name]
	l.mu.Unlock()
	if m != nil {
		return m
	}
	docs, err := docsAddr(name)
	if err != nil {
		l.t.Fatal(err)
	}
	m = &machine{lab: l, name: name, ip: l.addr(docs), root: filepath.Join(l.dir, name), units: map[string]*unit{}}
	for _, port := range standardPorts() {
		ln, err := net.Listen("tcp", net.JoinHostPort(m.ip, strconv.Itoa(port)))
		if err != nil {
			l.t.Fatalf("lab: machine %s cannot have its port: %v", name, err)
		}
		ln.Close()
	}
	for _, d := range []string{"etc/cairn", "etc/haproxy", "usr/local/bin", "root", "tmp", "run/lab", "var/log"} {
		if err := os.MkdirAll(filepath.Join(m.root, d), 0o755); err != nil {
			l.t.Fatal(err)
		}
	}
	mustLink(l.t, l.bin, filepath.Join(m.root, "usr/local/bin/cairn"), false)
	l.mu.Lock()
	l.machines[name] = m
	l.mu.Unlock()
	m.writeClusterEnv(l.roles)
	return m
}

// lose makes a machine as good as gone: its units are killed and its root
// removed, so that the name can be used again for a fresh machine.
func (l *lab) lose(name string) {
	l.t.Helper()
	m := l.machine(name)
	for _, u := range m.allUnits() {
		u.kill()
	}
	l.mu.Lock()
	delete(l.machines, name)
	l.mu.Unlock()
	if err := os.RemoveAll(m.root); err != nil {
		l.t.Fatal(err)
	}
}

// machine is one machine of a lab.
type machine struct {
	lab  *lab
	name string
	ip   string
	root string

	mu    sync.Mutex
	units map[string]*unit
}

// path is where the machine keeps an absolute path of its own.
func (m *machine) path(abs string) string { return filepath.Join(m.root, abs) }

// writeClusterEnv writes /etc/cairn/cluster.env from the example, giving
// each variable of roles (S1, LB, ...) the address of the named machine.
func (m *machine) writeClusterEnv(roles map[string]string) {
	l := m.lab
	b, err := os.ReadFile(filepath.Join(l.repo, "deploy/examples/cluster.env"))
	if err != nil {
		l.t.Fatal(err)
	}
	assign := regexp.MustCompile(`^([A-Z0-9_]+)=(10\.0\.[01]\.[0-9]+)$`)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if g := assign.FindStringSubmatch(line); g != nil {
			ip := l.addr(g[2])
			if name, ok := roles[g[1]]; ok {
				docs, err := docsAddr(name)
				if err != nil {
					l.t.Fatal(err)
				}
				ip = l.addr(docs)
			}
			line = g[1] + "=" + ip
		}
		out = append(out, line)
	}
	if err := os.WriteFile(m.path("/etc/cairn/cluster.env"), []byte(strings.Join(out, "\n")), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// hostPathRE finds the absolute paths of hostPaths, with an scp-style
// "machine:" before them; group 1 is what precedes the match.
func hostPathRE() *regexp.Regexp {
	var alts []string
	for _, p := range hostPaths() {
		alts = append(alts, regexp.QuoteMeta(p))
	}
	return regexp.MustCompile(`(^|[^A-Za-z0-9_./-])(?:([a-z][a-z0-9]*):)?(` + strings.Join(alts, "|") + `)`)
}

// rewrite replaces the machine's absolute paths in text with their places
// under its root (or another machine's, for "s2:/etc/cairn").
func (m *machine) rewrite(text string) (string, error) {
	re := hostPathRE()
	var b strings.Builder
	last := 0
	for _, g := range re.FindAllStringSubmatchIndex(text, -1) {
		end := g[1]
		// A longer name (/etc/cairnx) is not the path.
		if end < len(text) && strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-", rune(text[end])) {
			continue
		}
		target := m
		if g[4] >= 0 {
			name := text[g[4]:g[5]]
			m.lab.mu.Lock()
			target = m.lab.machines[name]
			m.lab.mu.Unlock()
			if target == nil {
				return "", fmt.Errorf("lab: %q names machine %s, which does not exist (yet)", text[g[4]:end], name)
			}
		}
		b.WriteString(text[last:g[3]])
		b.WriteString(target.path(text[g[6]:g[7]]))
		last = end
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

// readLines returns a file's lines, or nil when it does not exist.
func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	return lines
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	lines := readLines(path)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// dumpLogs prints the last lines of every unit's log.
func (l *lab) dumpLogs() {
	l.mu.Lock()
	var ms []*machine
	for _, m := range l.machines {
		ms = append(ms, m)
	}
	l.mu.Unlock()
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	for _, m := range ms {
		for _, u := range m.allUnits() {
			l.t.Logf("last lines of %s's %s log:\n%s", m.name, u.name, tail(u.logPath(), 25))
		}
	}
}

// record notes what happened to a unit, for tests that relate client
// errors to restarts.
func (l *lab) record(m *machine, unit, action string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, unitEvent{at: time.Now(), machine: m.name, unit: unit, action: action})
}

// unitEvents returns what happened to units so far.
func (l *lab) unitEvents() []unitEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]unitEvent(nil), l.events...)
}

// unitEvent is one start, stop or kill of a unit.
type unitEvent struct {
	at      time.Time
	machine string
	unit    string
	action  string
}

// statTime returns a file's modification time.
func statTime(path string) (time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}
