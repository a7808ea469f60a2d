/*
 * The start of the container's first process. On a thread of its own,
 * the shim enters the sandbox's network namespace and new mount, UTS
 * and IPC namespaces, builds the container's filesystem there and
 * pivots into it, then vforks the process (see child.c). Namespaces,
 * root, umask and capabilities are per thread in Linux: the rest of the
 * shim stays on the host, where it keeps writing the state and the log.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* CHILD_STACK is the stack of the vforked child, which makes system
 * calls only. It lies in the forking thread's frame: that thread sleeps
 * until the child's exec. */
#define CHILD_STACK (64 * 1024)
/* SETUP_STACK holds the setup thread's frames and the child's stack. */
#define SETUP_STACK (256 * 1024)

/* join_namespace moves the thread into the sandbox's namespace at path,
 * of the kind of flag. */
static char *join_namespace(const char *path, int flag, const char *what)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf("opening the sandbox's %s namespace: %s", what, estr(errno));
	char *err = NULL;
	if (setns(fd, flag) < 0)
		err = errf("entering the sandbox's %s namespace: %s", what, estr(errno));
	close(fd);
	return err;
}

/* join_pid_namespace makes the thread's next child start in the PID
 * namespace of the spec's target, which must still be the process it
 * names. */
static char *join_pid_namespace(const struct spec *sp)
{
	char path[48];
	snprintf(path, sizeof path, "/proc/%d/ns/pid", sp->pidns_pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf("the target container is not running: %s", estr(errno));
	char *err = NULL;
	/* Checked once the namespace is open: the file then holds the
	 * namespace of the process named, not of one that took its PID. */
	uint64_t start = proc_start_time(sp->pidns_pid);
	if (start == 0 || start != sp->pidns_start)
		err = errf("the target container is not running (process %d is gone)", sp->pidns_pid);
	else if (setns(fd, CLONE_NEWPID) < 0)
		err = errf("joining the target container's PID namespace: %s", estr(errno));
	close(fd);
	return err;
}

static int last_cap(void)
{
	struct buf raw = {0};
	char *err = read_file("/proc/sys/kernel/cap_last_cap", &raw);
	int last = err ? 40 : atoi(raw.p);
	free(err);
	free(raw.p);
	return last > 0 ? last : 40;
}

/* drop_bounding_caps removes every capability outside the spec's from
 * the thread's bounding set, so that nothing it execs can ever hold
 * them. */
static char *drop_bounding_caps(const struct spec *sp)
{
	int last = last_cap();
	for (int c = 0; c <= last; c++) {
		int keep = 0;
		for (size_t i = 0; i < sp->ncaps; i++)
			keep |= sp->caps[i] == c;
		if (!keep && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return errf("dropping capability %d: %s", c, estr(errno));
	}
	return NULL;
}

/* pivot_into makes root the root of the mount namespace and detaches the
 * old one, so that no host path stays reachable. */
static char *pivot_into(const char *root)
{
	if (chdir(root) < 0)
		return errf("chdir %s: %s", root, estr(errno));
	/* pivot_root(".", ".") stacks the old root on top of the new one,
	 * where unmounting "." removes it. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return errf("pivot_root into %s: %s", root, estr(errno));
	if (umount2(".", MNT_DETACH) < 0)
		return errf("detaching the old root: %s", estr(errno));
	if (chdir("/") < 0)
		return errf("chdir /: %s", estr(errno));
	return NULL;
}

/* open_terminal makes a terminal in the container's own devpts, so that
 * the name of the command's tty exists in the container. The master is
 * non-blocking, for the shim's poll loop. */
static char *open_terminal(int *master, int *slave)
{
	int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (m < 0)
		return errf("making the container's terminal: opening /dev/ptmx: %s", estr(errno));
	int unlock = 0;
	if (ioctl(m, TIOCSPTLCK, &unlock) < 0) {
		char *err = errf("making the container's terminal: unlocking the terminal: %s", estr(errno));
		close(m);
		return err;
	}
	/* The peer of this master, with no lookup of its name. */
	int s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		char *err = errf("making the container's terminal: opening the terminal's slave: %s", estr(errno));
		close(m);
		return err;
	}
	*master = m;
	*slave = s;
	return NULL;
}

/* look_path finds a command in the PATH of env. The caller has pivoted
 * into the container's root, where the kernel resolves paths as exec
 * will: one stat per PATH entry does. */
char *look_path(const char *name, const struct strv *env, char **out)
{
	if (strchr(name, '/')) {
		*out = xstrdup(name);
		return NULL;
	}
	const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (size_t i = 0; i < env->n; i++)
		if (has_prefix(env->v[i], "PATH="))
			path = env->v[i] + 5;
	/* d is the entry looked at, NULL past the last; an empty entry is
	 * ".", as in Go, and an empty PATH has none. */
	for (const char *d = *path ? path : NULL; d;) {
		size_t n = strcspn(d, ":");
		char *dir = n ? xstrndup(d, n) : xstrdup(".");
		char *p = path_join(dir, name);
		free(dir);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
			*out = p;
			return NULL;
		}
		free(p);
		d = d[n] ? d + n + 1 : NULL;
	}
	struct buf quoted = {0};
	json_escape(&quoted, name);
	char *err = errf("exec: %s: executable file not found in $PATH", buf_cstr(&quoted));
	free(quoted.p);
	return err;
}

/* enter_container does everything before the fork, on the setup
 * thread: it returns with the thread in the container's namespaces and
 * root. */
static char *enter_container(const struct launch *l)
{
	const struct spec *sp = l->sp;
	char *err;
	if (*sp->netns && (err = join_namespace(sp->netns, CLONE_NEWNET, "network")))
		return err;
	int flags = CLONE_NEWNS | CLONE_NEWUTS;
	if (*sp->ipcns) {
		if ((err = join_namespace(sp->ipcns, CLONE_NEWIPC, "IPC")))
			return err;
	} else if (!sp->host_ipc) {
		flags |= CLONE_NEWIPC;
	}
	if (sp->pidns_pid && (err = join_pid_namespace(sp)))
		return err;
	/* A new mount namespace implies this thread's own root, working
	 * directory and umask: none of it is the rest of the shim's. */
	if (unshare(flags) < 0)
		return errf("making the container's namespaces: %s", estr(errno));
	char *root = path_join(l->dir, "rootfs");
	err = setup_rootfs(l->dir, root, sp);
	if (!err && sethostname(sp->hostname, strlen(sp->hostname)) < 0)
		err = errf("setting the hostname: %s", estr(errno));
	/* What this thread keeps in its bounding set is all the command can
	 * ever get. */
	if (!err)
		err = drop_bounding_caps(sp);
	if (!err && sp->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		err = errf("setting no_new_privs: %s", estr(errno));
	if (!err)
		err = pivot_into(root);
	if (!err && sp->readonly_rootfs)
		err = remount_readonly("/", "the root filesystem");
	free(root);
	return err;
}

/* fork_child vforks the container's process from the setup thread, into
 * a new PID namespace unless it shares one, and returns once it has
 * exec'd or failed to (it tells why on the failure pipe). */
static char *fork_child(struct launch *l, struct child_plan *plan)
{
	_Alignas(16) char stack[CHILD_STACK];
	int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
	if (!l->sp->pidns_pid && !l->sp->host_pid)
		flags |= CLONE_NEWPID;
	pid_t pid = clone(child_main, stack + sizeof stack, flags, plan);
	if (pid < 0)
		return errf("forking the container's process: %s", estr(errno));
	l->pid = pid;
	return NULL;
}

static char *plan_and_fork(struct launch *l, const int stdio[3])
{
	const struct spec *sp = l->sp;
	if (chdir(sp->cwd) < 0)
		return errf("changing to the working directory %s: chdir %s: %s", sp->cwd, sp->cwd, estr(errno));
	umask(022);
	char *path, *err = look_path(sp->args.v[0], &sp->env, &path);
	if (err)
		return err;
	struct child_plan plan = {
	    .cgroup_fds = l->cgroup_fds,
	    .ncgroup = l->ncgroup,
	    .fail_fd = l->fail_fd,
	    .stdio = {stdio[0], stdio[1], stdio[2]},
	    .tty = sp->tty,
	    .masked = proc_paths(&sp->masked),
	    .readonly = proc_paths(&sp->readonly),
	    .groups = sp->groups,
	    .ngroups = sp->ngroups,
	    .uid = sp->uid,
	    .gid = sp->gid,
	    .path = path,
	    .argv = sp->args.v,
	    .envp = sp->env.v,
	};
	/* The failure record has 16 bits for the index of a path. */
	if (plan.masked.n > 0xffff || plan.readonly.n > 0xffff || l->ncgroup > 0xffff)
		err = errf("too many masked or read-only paths");
	if (!err && sp->oom_score_adj)
		plan.oom_score_adj = errf("%lld", (long long)sp->oom_score_adj);
	if (!err)
		err = fork_child(l, &plan);
	free(plan.oom_score_adj);
	free(plan.masked.v);
	free(plan.readonly.v);
	free(path);
	return err;
}

static void *setup_thread(void *arg)
{
	struct launch *l = arg;
	char *err = enter_container(l);
	int slave = -1;
	if (!err && l->sp->tty)
		err = open_terminal(&l->master, &slave);
	int tty_stdio[3] = {slave, slave, slave};
	if (!err)
		err = plan_and_fork(l, slave >= 0 ? tty_stdio : l->stdio);
	if (slave >= 0)
		close(slave);
	if (err && l->master >= 0) {
		close(l->master);
		l->master = -1;
	}
	return err;
}

/* launch starts the container's process (see the top of this file) and
 * returns once it has exec'd the command, or failed to. */
char *launch(struct launch *l)
{
	pthread_attr_t attr;
	pthread_t thread;
	void *err;
	l->pid = 0;
	l->master = -1;
	int rc = pthread_attr_init(&attr);
	if (!rc)
		rc = pthread_attr_setstacksize(&attr, SETUP_STACK);
	if (!rc)
		rc = pthread_create(&thread, &attr, setup_thread, l);
	if (rc)
		return errf("starting the container's setup thread: %s", estr(rc));
	pthread_attr_destroy(&attr);
	if ((rc = pthread_join(thread, &err)))
		return errf("waiting for the container's setup thread: %s", estr(rc));
	return err;
}
