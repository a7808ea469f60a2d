package embedded

// Tests of the C shim's own behaviour, through real containers: what the
// Go shim's unit tests covered before the shim was C (the CRI log's
// entries, the failures of the child's credential steps), and how the
// shim guards the host and its own descriptors.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/internal/privtest"
	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criEntry is one entry of a CRI log, its time checked and dropped.
type criEntry struct {
	tag, line string
}

func (c criEntry) String() string { return fmt.Sprintf("%s %d %.12q", c.tag, len(c.line), c.line) }

// criEntries returns the entries of the CRI log at path by stream,
// checking that each has a UTC RFC 3339 time with nanoseconds.
func criEntries(t *testing.T, path string) map[string][]criEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]criEntry{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := criLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("malformed CRI log line %.80q", sc.Text())
		}
		if ts, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || !strings.HasSuffix(m[1], "Z") || ts.Format(time.RFC3339Nano) != m[1] {
			t.Errorf("CRI log time %q (%v), want UTC in Go's RFC 3339 with nanoseconds", m[1], err)
		}
		out[m[2]] = append(out[m[2]], criEntry{m[3], m[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTheCRILogSplitsLongLinesIntoPartialEntries checks the entries the
// shim writes as containerd does: a line longer than 16 KiB in partial
// (P) entries of 16 KiB, then a full (F) one with the rest; a line of
// exactly 16 KiB as one partial entry and an empty full one; and a last
// line without a newline as a full entry.
func TestTheCRILogSplitsLongLinesIntoPartialEntries(t *testing.T) {
	e := newTestEnv(t)
	const entry = 16 * 1024
	script := fmt.Sprintf(`yes x | head -n %d | tr -d '\n'; echo; echo short; `+
		`yes y | head -n %d | tr -d '\n' >&2; echo >&2; printf last >&2`, 2*entry+100, entry)
	id := e.start(e.runPod("long-lines"), container("long", "sh", "-c", script))
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if st.ExitCode != 0 {
		t.Fatalf("%s", fmtStatus(st))
	}
	x, y := strings.Repeat("x", entry), strings.Repeat("y", entry)
	want := map[string][]criEntry{
		"stdout": {{"P", x}, {"P", x}, {"F", x[:100]}, {"F", "short"}},
		"stderr": {{"P", y}, {"F", ""}, {"F", "last"}},
	}
	got := criEntries(t, st.LogPath)
	for _, stream := range []string{"stdout", "stderr"} {
		if !slices.Equal(got[stream], want[stream]) {
			t.Errorf("%s entries %v, want %v", stream, got[stream], want[stream])
		}
	}
}

// TestCredentialsThatCannotBeSetFailTheStart starts containers whose
// user, group or supplementary groups the kernel refuses: the start
// fails with an error naming the step, and the container is recorded
// exited with it. An ID of 4294967295 is (uid_t)-1, which setresuid and
// setresgid take as "leave it as it is": the container would run as
// root.
func TestCredentialsThatCannotBeSetFailTheStart(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("creds")
	for _, tc := range []struct {
		name string
		set  func(*runtimeapi.LinuxContainerSecurityContext)
		want string
	}{
		{"uid", func(sc *runtimeapi.LinuxContainerSecurityContext) {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: 1<<32 - 1}
		}, "setresuid 4294967295: invalid argument"},
		{"gid", func(sc *runtimeapi.LinuxContainerSecurityContext) {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: 4242}
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: 1<<32 - 1}
		}, "setresgid 4294967295: invalid argument"},
		{"groups", func(sc *runtimeapi.LinuxContainerSecurityContext) {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: 4242}
			sc.SupplementalGroups = []int64{1<<32 - 1}
		}, "setgroups [4294967295]: invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := container(tc.name, "sh", "-c", "echo started as $(id -u):$(id -g)")
			tc.set(cfg.Linux.SecurityContext)
			id := e.create(sb, cfg)
			_, err := e.rt.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("StartContainer = %v, want an error saying %q", err, tc.want)
			}
			st := e.status(id)
			if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != helper.ReasonStartError ||
				st.ExitCode != 128 || !strings.Contains(st.Message, tc.want) {
				t.Errorf("%s, want a StartError saying %q", fmtStatus(st), tc.want)
			}
			if lines := e.logLines(st.LogPath); len(lines) > 0 {
				t.Errorf("the command ran: %q", lines)
			}
		})
	}
}

// TestTheShimReapsItsContainerWithSIGCHLDIgnored starts a shim with
// SIGCHLD ignored, as exec passes it on from an agent that ignores it:
// the shim still waits for its container and records its exit code,
// where the kernel would reap the process and its code would be lost.
func TestTheShimReapsItsContainerWithSIGCHLDIgnored(t *testing.T) {
	e := newTestEnv(t)
	// bash, as dash keeps no SIGCHLD ignored.
	bash, err := exec.LookPath("bash")
	if err != nil {
		privtest.Unavailable(t, "no bash to start the shim with: %v", err)
	}
	wrapper := filepath.Join(t.TempDir(), "shim")
	script := fmt.Sprintf("#!%s\ntrap '' CHLD\nexec %s \"$@\"\n", bash, e.cfg.ShimBinary)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.cfg.ShimBinary = wrapper
	e.rt = e.newRuntime()
	id := e.start(e.runPod("sigchld"), container("exits", "sh", "-c", "sleep 0.2; exit 3"))
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if st.ExitCode != 3 || st.Reason != helper.ReasonError {
		t.Errorf("%s, want exit 3", fmtStatus(st))
	}
}

// TestSymlinksInAVolumeKeepMountsInTheRootfs mounts volumes, a directory
// and a file, on container paths through symlinks that a volume mounted
// before holds, as another container of the pod could make them: the
// links resolve in the container's root filesystem, and nothing is made
// or mounted where they point on the host.
func TestSymlinksInAVolumeKeepMountsInTheRootfs(t *testing.T) {
	e := newTestEnv(t)
	host, shared, srcDir := t.TempDir(), t.TempDir(), t.TempDir()
	srcFile := filepath.Join(t.TempDir(), "file")
	for path, data := range map[string]string{srcDir + "/marker": "dir-volume\n", srcFile: "file-volume\n"} {
		if err := writeFile(path, data); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"abs":  host + "/abs",
		"rel":  strings.Repeat("../", 16) + host[1:] + "/rel",
		"file": host + "/file",
	} {
		if err := os.Symlink(target, filepath.Join(shared, link)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := container("links", "sh", "-c", fmt.Sprintf("cat %[1]s/abs/sub/marker %[1]s/rel/sub/marker %[1]s/file", host))
	cfg.Mounts = []*runtimeapi.Mount{
		{HostPath: shared, ContainerPath: "/data"},
		{HostPath: srcDir, ContainerPath: "/data/abs/sub"},
		{HostPath: srcDir, ContainerPath: "/data/rel/sub", Readonly: true},
		{HostPath: srcFile, ContainerPath: "/data/file"},
	}
	id := e.start(e.runPod("links"), cfg)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	want := []string{"stdout: dir-volume", "stdout: dir-volume", "stdout: file-volume"}
	if lines := e.logLines(st.LogPath); st.ExitCode != 0 || !slices.Equal(lines, want) {
		t.Errorf("%s, log %q; want %q", fmtStatus(st), lines, want)
	}
	if entries, err := os.ReadDir(host); err != nil || len(entries) > 0 {
		t.Errorf("the host directory the links name holds %v (%v), want nothing", entries, err)
	}
}

// shimFDs returns what the descriptors of the shim of container id
// lead to.
func (e *testEnv) shimFDs(id string) []string {
	e.t.Helper()
	st, _, err := helper.ReadState(e.rt.containerDir(id))
	if err != nil {
		e.t.Fatal(err)
	}
	dir := fmt.Sprintf("/proc/%d/fd", st.ShimPID)
	fds, err := os.ReadDir(dir)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// dialShim connects to the attach socket in the container directory dir
// through a descriptor of dir, as a socket's path is short.
func dialShim(t *testing.T, dir string) net.Conn {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	conn, err := net.Dial("unix", fmt.Sprintf("/proc/self/fd/%d/%s", fd, helper.AttachSocket))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestTheShimHoldsOnlyItsOwnDescriptors checks the descriptors of a
// shim, which runs as long as its container: it keeps none that the
// agent inherited without close-on-exec, and none of its attach clients
// once they are gone, however they ended (a log reopen, a malformed
// header, a hang-up before the header, an attach that ends).
func TestTheShimHoldsOnlyItsOwnDescriptors(t *testing.T) {
	e := newTestEnv(t)
	// As a supervisor's pipe the agent would inherit.
	var inherited [2]int
	if err := unix.Pipe2(inherited[:], 0); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(inherited[0], &st); err != nil {
		t.Fatal(err)
	}
	cfg := interactive("cat", false, "cat")
	cfg.StdinOnce = false
	id := e.start(e.runPod("shim-fds"), cfg)
	unix.Close(inherited[0])
	unix.Close(inherited[1])
	dir := e.rt.containerDir(id)
	// Once the shim answers, it has closed its report pipe; once it
	// holds one socket, its listening one, it has closed the client.
	if err := helper.ReopenLog(e.ctx, dir); err != nil {
		t.Fatal(err)
	}
	before := e.waitShimFDs(id, "one socket, its listening one", func(fds []string) bool {
		return len(slices.DeleteFunc(slices.Clone(fds), func(fd string) bool { return !strings.HasPrefix(fd, "socket:") })) == 1
	})
	if pipe := fmt.Sprintf("pipe:[%d]", st.Ino); slices.Contains(before, pipe) {
		t.Errorf("the shim holds the agent's inherited %s: %q", pipe, before)
	}
	raw := func(header string) string {
		t.Helper()
		conn := dialShim(t, dir)
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if header == "" {
			return ""
		}
		if _, err := conn.Write([]byte(header)); err != nil {
			t.Fatal(err)
		}
		reply, _ := bufio.NewReader(conn).ReadString('\n')
		return reply
	}
	for i := 0; i < 3; i++ {
		if err := helper.ReopenLog(e.ctx, dir); err != nil {
			t.Fatal(err)
		}
		if reply := raw("not json\n"); !strings.Contains(reply, "malformed attach header") {
			t.Errorf("reply to a malformed header %q, want it refused", reply)
		}
		raw("")
		c, err := helper.DialAttach(e.ctx, dir, helper.AttachHeader{Stdin: true, Stdout: true})
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("ping-%d\n", i)
		if err := c.WriteFrame(helper.FrameStdin, []byte(line)); err != nil {
			t.Fatal(err)
		}
		if kind, data, err := c.ReadFrame(); err != nil || kind != helper.FrameStdout || string(data) != line {
			t.Fatalf("frame %d %q (%v), want stdout %q", kind, data, err, line)
		}
		c.Close()
	}
	// The log reopens replaced the log's descriptor: compare the files.
	e.waitShimFDs(id, fmt.Sprintf("what it held before its clients, %q", before), func(after []string) bool {
		return slices.Equal(after, before)
	})
}

// waitShimFDs polls the descriptors of the shim of container id until
// ok takes them, and returns them; want says what ok wants.
func (e *testEnv) waitShimFDs(id, want string, ok func([]string) bool) []string {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fds := e.shimFDs(id)
		if ok(fds) {
			return fds
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the shim holds %q, want %s", fds, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestADroppedClientsInputEnds attaches a client with stdin to a
// container with stdinOnce whose output floods, and reads none of it:
// the shim drops the client, and that ends the container's stdin as the
// client's own hang-up would, so that the command sees the end of its
// input.
func TestADroppedClientsInputEnds(t *testing.T) {
	e := newTestEnv(t)
	line := strings.Repeat("0123456789", 100)
	cfg := interactive("flood", false, "sh", "-c", `yes "$1" | head -c 20000000 & cat; echo stdin-ended >&2; wait`, "sh", line)
	id := e.start(e.runPod("dropped"), cfg)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	c, err := helper.DialAttach(ctx, e.rt.containerDir(id), helper.AttachHeader{Stdin: true, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Not waitState, whose failure would print the flood.
	deadline := time.Now().Add(10 * time.Second)
	st := e.status(id)
	for ; st.State != runtimeapi.ContainerState_CONTAINER_EXITED; st = e.status(id) {
		if time.Now().After(deadline) {
			t.Fatalf("%s after 10s: the command's stdin did not end", fmtStatus(st))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if entries := criEntries(t, st.LogPath)["stderr"]; !slices.Equal(entries, []criEntry{{"F", "stdin-ended"}}) {
		t.Errorf("%s, stderr %v; want stdin-ended", fmtStatus(st), entries)
	}
}
