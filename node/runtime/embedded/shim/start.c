/*
 * The start of the container: its stdio as its spec asks, the files
 * its process needs to place itself in its cgroups and to report its
 * failure, and the launch (see launch.c). Without stdin or tty in the
 * spec, the container's stdin is /dev/null and its stdout and stderr
 * are pipes; with a tty, all three are the terminal.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A pipe's ends; the container gets one of them. */
struct pipe_ends {
	int r, w;
};

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* make_pipe makes a pipe whose shim end, at index mine, is
 * non-blocking for the poll loop; the container's stays blocking. */
static char *make_pipe(struct pipe_ends *p, int mine)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return errf("pipe: %s", estr(errno));
	if (fcntl(fds[mine], F_SETFL, O_NONBLOCK) < 0) {
		char *err = errf("pipe: %s", estr(errno));
		close_all(fds, 2);
		return err;
	}
	p->r = fds[0];
	p->w = fds[1];
	return NULL;
}

/* make_stdio makes the container's stdio; stdio gets the container's
 * ends and s the shim's. */
static char *make_stdio(struct shim *s, int stdio[3])
{
	if (s->sp.tty)
		return NULL; /* the setup thread makes the terminal */
	struct pipe_ends out, errp, in;
	char *err = make_pipe(&out, 0);
	if (err)
		return err;
	if ((err = make_pipe(&errp, 0))) {
		close_all((int[]){out.r, out.w}, 2);
		return err;
	}
	if (s->sp.stdin_) {
		err = make_pipe(&in, 1);
	} else {
		in.w = -1;
		in.r = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (in.r < 0)
			err = errf("open /dev/null: %s", estr(errno));
	}
	if (err) {
		close_all((int[]){out.r, out.w, errp.r, errp.w}, 4);
		return err;
	}
	stdio[0] = in.r;
	stdio[1] = out.w;
	stdio[2] = errp.w;
	s->out[0] = (struct output){.fd = out.r, .stream = "stdout", .kind = FRAME_STDOUT};
	s->out[1] = (struct output){.fd = errp.r, .stream = "stderr", .kind = FRAME_STDERR};
	s->nout = 2;
	s->in = in.w;
	return NULL;
}

/* open_cgroups opens the container's cgroup.procs files, which its
 * process writes to move itself there. */
static char *open_cgroups(const struct spec *sp, int **fds, size_t *n)
{
	struct strv files = cgroup_procs_files(&sp->cg);
	*fds = xmalloc((files.n + 1) * sizeof **fds);
	*n = 0;
	char *err = NULL;
	for (size_t i = 0; i < files.n && !err; i++) {
		int fd = open(files.v[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			err = errf("opening the container's cgroup: open %s: %s", files.v[i], estr(errno));
		else
			(*fds)[(*n)++] = fd;
	}
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	free(files.v);
	return err;
}

/* read_failure reads the child's failure record: 0 bytes when its exec
 * closed the pipe (close-on-exec). */
static ssize_t read_failure(int fd, unsigned char *f)
{
	size_t got = 0;
	while (got < CHILD_FAILURE_SIZE) {
		ssize_t n = read(fd, f + got, CHILD_FAILURE_SIZE - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static void wait_child(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* close_shim_ends closes the shim's side of the stdio of a container
 * that did not start. */
static void close_shim_ends(struct shim *s)
{
	io_close(s);
	s->nout = 0;
}

/* start_container starts the container's process, and returns once it
 * runs the command, with the shim's side of its stdio in s. */
char *start_container(struct shim *s)
{
	int stdio[3] = {-1, -1, -1}, *cgroup_fds = NULL, fail_pipe[2] = {-1, -1};
	size_t ncgroup = 0;
	char *err = make_stdio(s, stdio);
	if (err)
		return err;
	if (!(err = open_cgroups(&s->sp, &cgroup_fds, &ncgroup)) && pipe2(fail_pipe, O_CLOEXEC) < 0)
		err = errf("pipe: %s", estr(errno));
	struct launch l = {
	    .dir = s->dir,
	    .sp = &s->sp,
	    .stdio = {stdio[0], stdio[1], stdio[2]},
	    .cgroup_fds = cgroup_fds,
	    .ncgroup = ncgroup,
	    .fail_fd = fail_pipe[1],
	};
	if (!err)
		err = launch(&l);
	/* The child has its ends, or will never have them. */
	close_all(stdio, 3);
	close_all(cgroup_fds, ncgroup);
	free(cgroup_fds);
	if (fail_pipe[1] >= 0)
		close(fail_pipe[1]);
	if (err) {
		if (fail_pipe[0] >= 0)
			close(fail_pipe[0]);
		close_shim_ends(s);
		return err;
	}
	if (l.master >= 0) {
		s->out[0] = (struct output){.fd = l.master, .stream = "stdout", .kind = FRAME_STDOUT};
		s->nout = 1;
		s->term = l.master;
		s->in = s->sp.stdin_ ? l.master : -1;
	}
	s->pid = l.pid;
	unsigned char failure[CHILD_FAILURE_SIZE];
	ssize_t n = read_failure(fail_pipe[0], failure);
	close(fail_pipe[0]);
	if (n == CHILD_FAILURE_SIZE) {
		wait_child(s->pid);
		close_shim_ends(s);
		return child_failure_describe(failure, &s->sp);
	}
	if (n != 0) {
		kill(s->pid, SIGKILL);
		wait_child(s->pid);
		close_shim_ends(s);
		return errf("the container's process failed to start");
	}
	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	if (s->pidfd < 0) {
		err = errf("watching the container's process: %s", estr(errno));
		kill(s->pid, SIGKILL);
		wait_child(s->pid);
		close_shim_ends(s);
	}
	return err;
}
