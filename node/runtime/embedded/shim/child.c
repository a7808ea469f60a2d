/*
 * The container's first process, between its fork and its exec. The
 * fork is a vfork (CLONE_VM|CLONE_VFORK, see launch.c): the child
 * borrows the shim's memory while the forking thread sleeps until the
 * exec, so nothing of the shim is copied. It makes system calls only, on
 * values the shim prepared, and allocates nothing. It does what only it
 * can: it moves itself into the container's cgroups, mounts the /proc
 * of its new PID namespace, and drops the privileges the shim keeps.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef STATX_TYPE
/* linux/stat.h's statx, for C libraries without it (musl before 1.2.5):
 * the child calls the system call itself. */
#define STATX_TYPE 0x1U
struct statx_timestamp {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t reserved;
};
struct statx {
	uint32_t stx_mask, stx_blksize;
	uint64_t stx_attributes;
	uint32_t stx_nlink, stx_uid, stx_gid;
	uint16_t stx_mode, spare0;
	uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
	struct statx_timestamp stx_atime, stx_btime, stx_ctime, stx_mtime;
	uint32_t stx_rdev_major, stx_rdev_minor, stx_dev_major, stx_dev_minor;
	uint64_t spare2[14];
};
_Static_assert(sizeof(struct statx) == 256, "struct statx is the kernel's");
#endif

int reset_signals[64];
size_t nreset_signals;

/* The steps of the child that can fail, as it reports them. */
enum {
	STEP_SIGNALS = 1,
	STEP_CGROUP,
	STEP_STDIO,
	STEP_SESSION,
	STEP_TERMINAL,
	STEP_PROC,
	STEP_MASK,
	STEP_READONLY,
	STEP_GROUPS,
	STEP_GID,
	STEP_UID,
	STEP_EXEC,
};

/* sys makes a system call and returns its errno, 0 on success. The C
 * library's wrappers may do more than the call (setresuid signals every
 * thread of the shim); syscall(2) does only that. The errno it sets is
 * the forking thread's, which sleeps until the exec. */
static long sys(long nr, long a, long b, long c, long d, long e)
{
	return syscall(nr, a, b, c, d, e) < 0 ? errno : 0;
}

/* set_ids sets the real, effective and saved IDs of setresuid or
 * setresgid (nr) to id. The kernel takes an ID of -1 as "leave it as it
 * is", which would leave the command root: it is refused as the kernel
 * refuses an ID it cannot map. */
static long set_ids(long nr, uint32_t id)
{
	if (id == UINT32_MAX)
		return EINVAL;
	return sys(nr, id, id, id, 0, 0);
}

/* kernel_sigaction is the kernel's struct sigaction, for SIG_DFL. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

static int fail(const struct child_plan *p, int step, size_t index, long errno_)
{
	unsigned char f[CHILD_FAILURE_SIZE] = {(unsigned char)step, (unsigned char)index, (unsigned char)(index >> 8), 0,
					       (unsigned char)errno_, (unsigned char)(errno_ >> 8),
					       (unsigned char)(errno_ >> 16), (unsigned char)(errno_ >> 24)};
	sys(SYS_write, p->fail_fd, (long)f, sizeof f, 0, 0);
	return 1;
}

/* mask_proc_paths hides and makes read-only the paths in /proc, which
 * exist only once the child has mounted it. */
static int mask_proc_paths(const struct child_plan *p)
{
	struct statx stx;
	struct statfs sfs;
	long e;
	for (size_t i = 0; i < p->masked.n; i++) {
		const char *target = p->masked.v[i];
		if (sys(SYS_statx, AT_FDCWD, (long)target, 0, STATX_TYPE, (long)&stx))
			continue; /* nothing to hide */
		if (S_ISDIR(stx.stx_mode))
			e = sys(SYS_mount, (long)"tmpfs", (long)target, (long)"tmpfs", MS_RDONLY, (long)"size=0");
		else
			e = sys(SYS_mount, (long)"/dev/null", (long)target, (long)"", MS_BIND, 0);
		if (e)
			return fail(p, STEP_MASK, i, e);
	}
	for (size_t i = 0; i < p->readonly.n; i++) {
		const char *target = p->readonly.v[i];
		if (sys(SYS_statx, AT_FDCWD, (long)target, 0, STATX_TYPE, (long)&stx))
			continue;
		e = sys(SYS_mount, (long)target, (long)target, (long)"", MS_BIND | MS_REC, 0);
		if (!e)
			e = sys(SYS_statfs, (long)target, (long)&sfs, 0, 0, 0);
		if (!e)
			e = sys(SYS_mount, (long)"", (long)target, (long)"", MS_BIND | MS_REMOUNT | MS_RDONLY | (sfs.f_flags & REMOUNT_KEEP), 0);
		if (e)
			return fail(p, STEP_READONLY, i, e);
	}
	return 0;
}

int child_main(void *arg)
{
	const struct child_plan *p = arg;
	long e;
	/* What the shim ignores, the command gets at its default; and no
	 * signal blocked. */
	struct kernel_sigaction dfl = {0};
	unsigned long none = 0;
	for (size_t i = 0; i < nreset_signals; i++)
		if ((e = sys(SYS_rt_sigaction, reset_signals[i], (long)&dfl, 0, sizeof dfl.mask, 0)))
			return fail(p, STEP_SIGNALS, i, e);
	if ((e = sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof none, 0)))
		return fail(p, STEP_SIGNALS, nreset_signals, e);
	/* Into the container's cgroups before anything else: the command
	 * must never run outside their limits. */
	for (size_t i = 0; i < p->ncgroup; i++)
		if ((e = sys(SYS_write, p->cgroup_fds[i], (long)"0", 1, 0, 0)))
			return fail(p, STEP_CGROUP, i, e);
	for (int fd = 0; fd < 3; fd++) {
		if (p->stdio[fd] == fd)
			e = sys(SYS_fcntl, fd, F_SETFD, 0, 0, 0);
		else
			e = sys(SYS_dup3, p->stdio[fd], fd, 0, 0, 0);
		if (e)
			return fail(p, STEP_STDIO, 0, e);
	}
	/* With a tty the command leads its session with the terminal as its
	 * controlling one: a shell runs interactively with job control, and
	 * ^C signals its foreground job. */
	if ((e = sys(SYS_setsid, 0, 0, 0, 0, 0)))
		return fail(p, STEP_SESSION, 0, e);
	if (p->tty && (e = sys(SYS_ioctl, 0, TIOCSCTTY, 0, 0, 0)))
		return fail(p, STEP_TERMINAL, 0, e);
	/* A /proc of the new PID namespace: only a process inside it can
	 * mount one. */
	if ((e = sys(SYS_mount, (long)"proc", (long)"/proc", (long)"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0)))
		return fail(p, STEP_PROC, 0, e);
	if (p->oom_score_adj) {
		/* Best effort: lowering it needs CAP_SYS_RESOURCE, which root
		 * lacks in some VMs; the kubelet's values are advisory anyway. */
		long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			syscall(SYS_write, fd, p->oom_score_adj, strlen(p->oom_score_adj));
			syscall(SYS_close, fd);
		}
	}
	if (mask_proc_paths(p))
		return 1;
	/* Nothing of the shim's but stdio reaches the command, whatever it
	 * opened without close-on-exec (kernels before 5.11 lack the call). */
	sys(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC, 0, 0);
	/* Credentials last: after them the child may no longer mount. */
	if ((e = sys(SYS_setgroups, (long)p->ngroups, (long)p->groups, 0, 0, 0)))
		return fail(p, STEP_GROUPS, 0, e);
	if ((e = set_ids(SYS_setresgid, p->gid)))
		return fail(p, STEP_GID, 0, e);
	if ((e = set_ids(SYS_setresuid, p->uid)))
		return fail(p, STEP_UID, 0, e);
	e = sys(SYS_execve, (long)p->path, (long)p->argv, (long)p->envp, 0, 0);
	return fail(p, STEP_EXEC, 0, e);
}

/* child_failure_describe turns a child's failure record into the error
 * it stands for. */
char *child_failure_describe(const unsigned char *f, const struct spec *sp)
{
	size_t index = (size_t)f[1] | (size_t)f[2] << 8;
	int e = (int)((uint32_t)f[4] | (uint32_t)f[5] << 8 | (uint32_t)f[6] << 16 | (uint32_t)f[7] << 24);
	const char *es = estr(e);
	struct strv paths;
	switch (f[0]) {
	case STEP_SIGNALS:
		if (index < nreset_signals)
			return errf("setting %s back to its default action: %s", sigstr(reset_signals[index]), es);
		return errf("setting the signals back to their defaults: %s", es);
	case STEP_CGROUP:
		paths = cgroup_procs_files(&sp->cg);
		if (index < paths.n)
			return errf("placing the container's process in its cgroup (%s): %s", paths.v[index], es);
		return errf("placing the container's process in its cgroups: %s", es);
	case STEP_STDIO:
		return errf("setting up the container's stdin, stdout and stderr: %s", es);
	case STEP_SESSION:
		return errf("starting the container's session: %s", es);
	case STEP_TERMINAL:
		return errf("making the terminal the controlling one: %s", es);
	case STEP_PROC:
		return errf("mounting /proc: %s", es);
	case STEP_MASK:
		paths = proc_paths(&sp->masked);
		return errf("masking %s: %s", index < paths.n ? paths.v[index] : "?", es);
	case STEP_READONLY:
		paths = proc_paths(&sp->readonly);
		return errf("making %s read-only: %s", index < paths.n ? paths.v[index] : "?", es);
	case STEP_GROUPS: {
		struct buf b = {0};
		buf_str(&b, "setgroups [");
		for (size_t i = 0; i < sp->ngroups; i++)
			buf_printf(&b, "%s%u", i ? " " : "", sp->groups[i]);
		buf_printf(&b, "]: %s", es);
		return buf_cstr(&b);
	}
	case STEP_GID:
		return errf("setresgid %u: %s", sp->gid, es);
	case STEP_UID:
		return errf("setresuid %u: %s", sp->uid, es);
	case STEP_EXEC:
		return errf("exec %s: %s", sp->args.v[0], es);
	}
	return errf("the container's process failed to start (step %d): %s", f[0], es);
}
