package embedded

import (
	"cairn/internal/privtest"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/internal/testimage"
	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestBusyboxContainerRunsAndLogs(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("web")
	ip := e.sandboxIP(sb)
	// Each fact on its own line, "name=value", in a stable order.
	script := strings.Join([]string{
		`echo hello`,
		`echo oops >&2`,
		`echo pid=$$`,
		`echo hostname=$(hostname)`,
		`echo user=$(id -u):$(id -g)`,
		`echo greeting=$GREETING`,
		`echo gomaxprocs=${GOMAXPROCS-unset}`,
		`echo hosts=$(grep -c "^` + ip + `\sweb$" /etc/hosts)`,
		`echo resolv=$(grep -c "^nameserver 10.96.0.10$" /etc/resolv.conf)`,
		`echo caps=$(grep CapBnd /proc/self/status | cut -f2)`,
		`echo sys=$(touch /sys/x 2>/dev/null && echo rw || echo ro)`,
		`echo devnull=$(echo x > /dev/null && echo ok)`,
		`echo devs=$(stat -c '%n:%F:%a:%t,%T' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)`,
		`echo urandom=$(head -c 16 /dev/urandom | wc -c)`,
		`echo eth0=$(cat /sys/class/net/eth0/operstate)`,
		`echo root=$(touch /newfile && echo writable)`,
		`echo keys=$(wc -c < /proc/keys)`,
		`echo acpi=$(ls /proc/acpi 2>/dev/null | wc -l)`,
		// ls's own directory is fd 3; any more came from the runtime.
		`echo fds=$(ls /proc/self/fd | wc -l)`,
		`echo cgroup2=$(grep '^0::' /proc/self/cgroup | cut -d: -f3)`,
		`echo memcg=$(grep ':memory:' /proc/self/cgroup | cut -d: -f3)`,
		`echo procsys=$( (echo cairn > /proc/sys/kernel/domainname) 2>/dev/null && echo rw || echo ro)`,
		`echo oom=$(cat /proc/self/oom_score_adj)`,
		`echo sigign=$(grep SigIgn /proc/self/status | cut -f2)`,
	}, "; ")
	cfg := container("facts", "sh", "-c", script)
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{OomScoreAdj: 937}
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "GREETING", Value: []byte("hi there")}}
	id := e.start(sb, cfg)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if st.ExitCode != 0 || st.Reason != helper.ReasonCompleted || st.StartedAt == 0 || st.FinishedAt < st.StartedAt {
		t.Errorf("status %s started=%d finished=%d, want a completed container", fmtStatus(st), st.StartedAt, st.FinishedAt)
	}
	if st.Image.GetImage() != testimage.BusyboxRef || !strings.HasPrefix(st.ImageId, "sha256:") {
		t.Errorf("image %q id %q, want %s and its sha256 ID", st.Image.GetImage(), st.ImageId, testimage.BusyboxRef)
	}
	lines := e.logLines(st.LogPath)
	cgroup := e.cfg.CgroupRoot + "/" + sb + "/" + id
	for _, want := range []string{
		// Both hierarchies: v1 for limits, v2 for the eBPF proxy.
		"stdout: cgroup2=" + cgroup,
		"stdout: memcg=" + cgroup,
		"stdout: hello",
		"stderr: oops",
		"stdout: pid=1",
		"stdout: hostname=web",
		"stdout: user=0:0",
		"stdout: greeting=hi there",
		// The helpers' own environment stays out of the container.
		"stdout: gomaxprocs=unset",
		"stdout: hosts=1",
		"stdout: resolv=1",
		// Docker's default capability set.
		"stdout: caps=00000000a80425fb",
		"stdout: sys=ro",
		"stdout: devnull=ok",
		"stdout: devs=/dev/null:character special file:666:1,3 /dev/zero:character special file:666:1,5 " +
			"/dev/full:character special file:666:1,7 /dev/random:character special file:666:1,8 " +
			"/dev/urandom:character special file:666:1,9 /dev/tty:character special file:666:5,0",
		"stdout: urandom=16",
		"stdout: eth0=up",
		"stdout: root=writable",
		// Masked and read-only kernel files.
		"stdout: keys=0",
		"stdout: acpi=0",
		"stdout: fds=4",
		"stdout: procsys=ro",
		// Set by the process itself before its exec.
		"stdout: oom=937",
		// Nothing the shim ignores.
		"stdout: sigign=0000000000000000",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("log lacks %q; it has %q", want, lines)
		}
	}
}

func TestExitCodesAndReasons(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("exits")
	for _, tc := range []struct {
		name   string
		argv   []string
		code   int32
		reason string
	}{
		{"success", []string{"true"}, 0, helper.ReasonCompleted},
		{"failure", []string{"sh", "-c", "exit 3"}, 3, helper.ReasonError},
		{"largest code", []string{"sh", "-c", "exit 255"}, 255, helper.ReasonError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.start(sb, container(tc.name, tc.argv...))
			st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
			if st.ExitCode != tc.code || st.Reason != tc.reason {
				t.Errorf("%s, want exit %d reason %s", fmtStatus(st), tc.code, tc.reason)
			}
		})
	}
	t.Run("missing command", func(t *testing.T) {
		id := e.create(sb, container("missing", "/no/such/binary"))
		if _, err := e.rt.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err == nil || !strings.Contains(err.Error(), "/no/such/binary") {
			t.Errorf("StartContainer = %v, want an error naming the binary", err)
		}
		if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != helper.ReasonStartError {
			t.Errorf("%s, want exited with reason StartError", fmtStatus(st))
		}
	})
}

// TestTheShimOutlivesTheSignalsOfAStop sends a running container's shim
// what an agent's stop, its terminal's ^C or an old agent's log reopen
// would: the shim keeps supervising the container.
func TestTheShimOutlivesTheSignalsOfAStop(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("signals")
	id := e.start(sb, container("sleeper", "sh", "-c", "exec sleep 3600"))
	st, _, err := helper.ReadState(e.rt.containerDir(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []unix.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGPIPE, unix.SIGUSR1} {
		if err := unix.Kill(st.ShimPID, sig); err != nil {
			t.Fatalf("signalling the shim: %v", err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if !helper.Alive(st.ShimPID, st.ShimStart) {
		t.Fatal("the shim died of a signal")
	}
	if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if got := e.status(id); got.State != runtimeapi.ContainerState_CONTAINER_EXITED || got.Reason == helper.ReasonUnknown {
		t.Errorf("%s, want the exit recorded by the shim", fmtStatus(got))
	}
}

// TestALostShimIsNoticed kills a running container's shim, then its
// process: the container runs on unsupervised, then is reported exited
// for an unknown reason, as the shim could not record its exit.
func TestALostShimIsNoticed(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("lost")
	id := e.start(sb, container("sleeper", "sh", "-c", "exec sleep 3600"))
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("%s, want running", fmtStatus(st))
	}
	st, _, err := helper.ReadState(e.rt.containerDir(id))
	if err != nil {
		t.Fatal(err)
	}
	kill := func(what string, pid int, start uint64) {
		t.Helper()
		if err := unix.Kill(pid, unix.SIGKILL); err != nil {
			t.Fatalf("killing the %s: %v", what, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for helper.Alive(pid, start) {
			if time.Now().After(deadline) {
				t.Fatalf("the %s (pid %d) outlived SIGKILL", what, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	kill("shim", st.ShimPID, st.ShimStart)
	if got := e.status(id); got.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("without its shim: %s, want still running", fmtStatus(got))
	}
	kill("container's process", st.PID, st.PIDStart)
	got := e.status(id)
	if got.State != runtimeapi.ContainerState_CONTAINER_EXITED || got.Reason != helper.ReasonUnknown || got.ExitCode != 255 ||
		!strings.Contains(got.Message, "shim exited") {
		t.Errorf("%s (%q), want exited 255 for an unknown reason", fmtStatus(got), got.Message)
	}
}

func TestContainerRestartsInTheSameSandbox(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("restarts")
	// The container counts its runs in the pod's shared volume.
	vol := t.TempDir()
	var ids []string
	for attempt := uint32(0); attempt < 2; attempt++ {
		cfg := container("app", "sh", "-c", "echo run >> /data/runs; wc -l < /data/runs; exit 1")
		cfg.Metadata.Attempt = attempt
		cfg.Mounts = []*runtimeapi.Mount{{HostPath: vol, ContainerPath: "/data"}}
		id := e.start(sb, cfg)
		st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
		if st.ExitCode != 1 {
			t.Fatalf("attempt %d: %s, want exit 1", attempt, fmtStatus(st))
		}
		if want := fmt.Sprintf("stdout: %d", attempt+1); !slices.Contains(e.logLines(st.LogPath), want) {
			t.Errorf("attempt %d logged %q, want %q", attempt, e.logLines(st.LogPath), want)
		}
		ids = append(ids, id)
	}
	if _, err := e.rt.RemoveContainer(e.ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ids[0]}); err != nil {
		t.Fatal(err)
	}
	list, err := e.rt.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb}})
	if err != nil || len(list.Containers) != 1 || list.Containers[0].Id != ids[1] || list.Containers[0].Metadata.Attempt != 1 {
		t.Errorf("ListContainers = %v, %v; want only attempt 1", list, err)
	}
}

func TestStopContainerSendsSIGTERMThenSIGKILL(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("stops")
	graceful := e.start(sb, container("graceful", "sh", "-c", `trap "echo terminating; exit 3" TERM; echo ready; while true; do sleep 0.05; done`))
	stubborn := e.start(sb, container("stubborn", "sleep", "1000"))
	e.waitLog(e.status(graceful).LogPath, "ready", 5*time.Second)

	for _, tc := range []struct {
		name     string
		id       string
		timeout  int64
		code     int32
		min, max time.Duration
	}{
		// Handles SIGTERM: stops at once, long before the timeout.
		{"graceful", graceful, 10, 3, 0, 5 * time.Second},
		// PID 1 without a handler ignores SIGTERM: SIGKILL after 1s.
		{"stubborn", stubborn, 1, 137, time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: tc.id, Timeout: tc.timeout}); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			st := e.status(tc.id)
			if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != tc.code {
				t.Errorf("%s, want exited with %d", fmtStatus(st), tc.code)
			}
			if took < tc.min || took > tc.max {
				t.Errorf("StopContainer took %s, want between %s and %s", took, tc.min, tc.max)
			}
		})
	}
	if !slices.Contains(e.logLines(e.status(graceful).LogPath), "stdout: terminating") {
		t.Error("the graceful container's TERM handler did not run")
	}
	if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: stubborn, Timeout: 1}); err != nil {
		t.Errorf("stopping a stopped container: %v", err)
	}
}

func TestMemoryLimitOOMKillsTheContainer(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("oom")
	cfg := container("hog", "tail", "/dev/zero") // tail buffers a line that never ends
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{
		MemoryLimitInBytes: 32 << 20, CpuPeriod: 100000, CpuQuota: 50000, CpuShares: 512,
	}
	id := e.start(sb, cfg)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 20*time.Second)
	if st.Reason != helper.ReasonOOMKilled || st.ExitCode != 137 {
		t.Errorf("%s, want OOMKilled with 137", fmtStatus(st))
	}
	if st.Resources.GetLinux().GetMemoryLimitInBytes() != 32<<20 {
		t.Errorf("status resources = %v, want the 32Mi limit", st.Resources)
	}
	sp, err := helper.ReadSpec(e.rt.containerDir(id))
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"cpu.cfs_quota_us": "50000", "cpu.shares": "512"} {
		dir, ok := sp.Cgroups.V1["cpu"]
		if !ok {
			privtest.Unavailable(t, "no cgroup v1 cpu controller")
		}
		got, err := readTrimmed(dir + "/" + file)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %s", file, got, err, want)
		}
	}
}

func TestBindMountsHonourReadonly(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("volumes")
	rw, ro := t.TempDir(), t.TempDir()
	if err := writeFile(ro+"/in", "from the host\n"); err != nil {
		t.Fatal(err)
	}
	cfg := container("vols", "sh", "-c", `cat /config/in; echo written > /data/out; touch /config/x 2>/dev/null && echo ro-writable || echo ro-refused`)
	cfg.Mounts = []*runtimeapi.Mount{
		{HostPath: rw, ContainerPath: "/data"},
		{HostPath: ro, ContainerPath: "/config", Readonly: true},
	}
	id := e.start(sb, cfg)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	lines := e.logLines(st.LogPath)
	for _, want := range []string{"stdout: from the host", "stdout: ro-refused"} {
		if !slices.Contains(lines, want) {
			t.Errorf("log %q lacks %q", lines, want)
		}
	}
	if got, err := readTrimmed(rw + "/out"); err != nil || got != "written" {
		t.Errorf("host sees %q, %v in the read-write volume; want written", got, err)
	}
	if st.ExitCode != 0 {
		t.Errorf("%s", fmtStatus(st))
	}
}

func TestContainerRunsOnACopyWithoutOverlayfs(t *testing.T) {
	e := newTestEnv(t)
	e.rt.overlay = false // as on a state directory overlayfs cannot use
	sb := e.runPod("copy")
	cfg := container("app", "sh", "-c", "echo changed > /etc/motd; cat /etc/motd; ls -l /bin/sh")
	id := e.start(sb, cfg)
	if _, err := readTrimmed(e.rt.containerDir(id) + "/copy/bin/busybox"); err != nil {
		t.Fatalf("no copy of the image for the container: %v", err)
	}
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	lines := strings.Join(e.logLines(st.LogPath), "\n")
	if st.ExitCode != 0 || !strings.Contains(lines, "stdout: changed") || !strings.Contains(lines, "/bin/sh -> /bin/busybox") {
		t.Errorf("%s, log %q", fmtStatus(st), lines)
	}
	img, err := e.cfg.Images.Get(testimage.BusyboxRef)
	if err != nil {
		t.Fatal(err)
	}
	_, root, err := e.cfg.Images.Unpack(e.ctx, img.ID, "probe")
	if err != nil {
		t.Fatal(err)
	}
	defer e.cfg.Images.Release(img.ID, "probe")
	if _, err := readTrimmed(root + "/etc/motd"); err == nil {
		t.Error("the container wrote into the image's shared root filesystem")
	}
}

func TestReadonlyRootfs(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("ro")
	cfg := container("app", "sh", "-c", "touch /x 2>/dev/null && echo writable || echo readonly; echo ok > /tmp/t 2>/dev/null || echo tmp-readonly")
	cfg.Linux.SecurityContext.ReadonlyRootfs = true
	id := e.start(sb, cfg)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if lines := e.logLines(st.LogPath); !slices.Contains(lines, "stdout: readonly") {
		t.Errorf("log %q, want the root filesystem read-only", lines)
	}
}

// TestArgsAndEnvironmentReachTheCommandIntact runs a command whose
// arguments and environment hold what JSON escapes (quotes, backslashes,
// control characters, HTML's <&>) and what it may not (non-ASCII, a
// character beyond the BMP): they go through spec.json, which the agent
// writes in Go and the shim reads in C.
func TestArgsAndEnvironmentReachTheCommandIntact(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("args")
	const odd = "a \"quoted\" \\back\\ <&> é 日本 😀 \x01\ttab"
	cfg := container("echo", "sh", "-c", `printf '%s|%s|%s\n' "$1" "$ODD" "$#"`, "sh", odd)
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "ODD", Value: []byte(odd)}}
	id := e.start(sb, cfg)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	want := "stdout: " + odd + "|" + odd + "|1"
	if lines := e.logLines(st.LogPath); st.ExitCode != 0 || len(lines) != 1 || lines[0] != want {
		t.Errorf("status %s, log %q; want %q", fmtStatus(st), lines, want)
	}
}
