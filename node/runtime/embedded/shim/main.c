/*
 * cairn-shim supervises one container: `cairn-shim __container-shim DIR`,
 * run by the agent's helper.StartShim in a session of its own, with the
 * report pipe as fd 3 and stdout and stderr going to DIR/shim.log. It
 * starts the container that DIR/spec.json describes, sends the agent one
 * report on fd 3, {"pid":N} or {"error":"..."}, copies the container's
 * output into the CRI log, serves attached clients, and records the
 * container's life in DIR/state.json until its exit.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHIM_COMMAND "__container-shim"

/* COPY_DRAIN bounds the wait for the output to close after the
 * container's process died (the kernel kills the rest of its PID
 * namespace asynchronously); ATTACH_FLUSH the wait for attached clients
 * to take their last output and the exit frame. */
#define COPY_DRAIN (2 * 1000000000LL)
#define ATTACH_FLUSH (2 * 1000000000LL)
/* LEFTOVER_KILL_MS bounds the wait for the processes a container left
 * in a shared PID namespace to die of SIGKILL. */
#define LEFTOVER_KILL_MS 5000

/* The signals the shim ignores: the agent's stop or a terminal's ^C
 * must not end the supervision of running containers. */
static const int shim_ignored[] = {SIGHUP, SIGINT, SIGTERM, SIGPIPE, SIGUSR1};

/* read_ignored_signals sets reset_signals to the signals the process
 * ignores, as the kernel has them: the shim's own, and any it inherited
 * ignored from whoever started the agent. */
static char *read_ignored_signals(void)
{
	nreset_signals = 0;
	for (int sig = 1; sig <= 64; sig++) {
		/* The kernel's struct sigaction starts with the handler. */
		unsigned long old[4];
		if (syscall(SYS_rt_sigaction, sig, NULL, old, 8) < 0)
			return errf("helper: reading the action of %s: %s", sigstr(sig), estr(errno));
		if (old[0] == (unsigned long)SIG_IGN)
			reset_signals[nreset_signals++] = sig;
	}
	return NULL;
}

static char *ignore_signals(void)
{
	struct sigaction sa = {.sa_handler = SIG_IGN}, dfl = {.sa_handler = SIG_DFL};
	for (size_t i = 0; i < sizeof shim_ignored / sizeof shim_ignored[0]; i++)
		if (sigaction(shim_ignored[i], &sa, NULL) < 0)
			return errf("ignoring %s: %s", sigstr(shim_ignored[i]), estr(errno));
	/* An ignored SIGCHLD, inherited ignored as exec keeps it, has the
	 * kernel reap the container's process: its exit code would be lost. */
	if (sigaction(SIGCHLD, &dfl, NULL) < 0)
		return errf("handling %s: %s", sigstr(SIGCHLD), estr(errno));
	return NULL;
}

/* send_report tells the agent how the start went, once. */
static void send_report(struct shim *s, const char *error)
{
	if (s->report_fd < 0)
		return;
	struct buf b = {0};
	if (error)
		json_error_line(&b, error);
	else
		buf_printf(&b, "{\"pid\":%d}\n", s->pid);
	if (write_all(s->report_fd, b.p, b.len) < 0)
		dprintf(2, "shim: sending the report: %s\n", estr(errno));
	close(s->report_fd);
	s->report_fd = -1;
	free(b.p);
}

static int save_state(struct shim *s)
{
	char *err = state_write(s->dir, &s->st);
	if (!err)
		return 0;
	dprintf(2, "shim: %s\n", err);
	free(err);
	return -1;
}

/* fail records a failed start and tells the agent. */
static int fail(struct shim *s, char *err)
{
	s->st.running = 0;
	s->st.finished_at = now_ns();
	s->st.exit_code = 128;
	s->st.reason = REASON_STARTERROR;
	s->st.message = err;
	char *serr = state_write(s->dir, &s->st);
	free(serr);
	send_report(s, err);
	dprintf(2, "shim: %s\n", err);
	return 1;
}

char *shim_reopen_log(struct shim *s)
{
	char *err = log_reopen(&s->log);
	if (err)
		return err;
	s->st.log_reopens++;
	return state_write(s->dir, &s->st);
}

/* reopen_on_signal has SIGUSR1, which the shim otherwise ignores, reopen
 * the log: the agent cannot ask over a socket the shim could not make. */
static char *reopen_on_signal(struct shim *s)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	struct sigaction sa = {.sa_handler = SIG_DFL};
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 || sigaction(SIGUSR1, &sa, NULL) < 0)
		return errf("handling SIGUSR1: %s", estr(errno));
	s->usr1_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->usr1_fd < 0)
		return errf("handling SIGUSR1: %s", estr(errno));
	return NULL;
}

static int exited(const struct shim *s) { return s->exited; }

static int drained(const struct shim *s)
{
	for (size_t i = 0; i < s->nout; i++)
		if (s->out[i].fd >= 0)
			return 0;
	return 1;
}

static int flushed(const struct shim *s) { return s->clients == NULL; }

/* finish serves the container until its exit, and records it. */
static int finish(struct shim *s)
{
	serve(s, exited, 0);
	if (!s->exited)
		reap(s); /* the loop failed: the exit is still the container's */
	if (s->sp.pidns_pid || s->sp.host_pid) {
		/* The kernel ends the rest of a PID namespace with its first
		 * process; in a shared one, what the command left would run. */
		char *err = cgroup_kill_all(&s->sp.cg, LEFTOVER_KILL_MS);
		if (err) {
			dprintf(2, "shim: %s\n", err);
			free(err);
		}
	}
	/* Something may still hold the pipes (or the terminal): the output
	 * after the exit of the container's main process is not worth
	 * blocking for. */
	serve(s, drained, now_ns() + COPY_DRAIN);
	io_close(s);
	s->st.reason = REASON_COMPLETED;
	if (cgroup_oom_kills(&s->sp.cg) > 0)
		s->st.reason = REASON_OOMKILLED;
	else if (s->code != 0)
		s->st.reason = REASON_ERROR;
	s->st.running = 0;
	s->st.finished_at = now_ns();
	s->st.exit_code = s->code;
	int rc = save_state(s);
	/* Attached clients learn of the exit once it is recorded; the
	 * shim's exit closes the connections of those too slow to take it. */
	attach_shutdown(s, s->code);
	serve(s, flushed, now_ns() + ATTACH_FLUSH);
	return rc < 0 ? 1 : 0;
}

static int run(struct shim *s)
{
	char *err = ignore_signals();
	if (!err)
		err = read_ignored_signals();
	if (err) {
		dprintf(2, "shim: %s\n", err);
		free(err);
		nreset_signals = 0;
		for (size_t i = 0; i < sizeof shim_ignored / sizeof shim_ignored[0]; i++)
			reset_signals[nreset_signals++] = shim_ignored[i];
	}
	s->st.shim_pid = getpid();
	s->st.shim_start = proc_start_time(s->st.shim_pid);
	if ((err = spec_read(s->dir, &s->sp)))
		return fail(s, err);
	if ((err = log_open(&s->log, s->sp.log_path)))
		return fail(s, err);
	/* The socket exists before the container is recorded running, so
	 * that an attach never finds a running container without it. The
	 * container runs all the same if it cannot be made. */
	if ((err = attach_listen(s->dir, &s->listen_fd))) {
		dprintf(2, "shim: no attach socket: %s\n", err);
		free(err);
	}
	if ((err = start_container(s))) {
		if (s->listen_fd >= 0) {
			close(s->listen_fd);
			s->listen_fd = -1;
			attach_unlink(s->dir);
		}
		return fail(s, err);
	}
	if (s->listen_fd < 0 && (err = reopen_on_signal(s))) {
		dprintf(2, "shim: %s\n", err);
		free(err);
	}
	s->st.pid = s->pid;
	s->st.pid_start = proc_start_time(s->pid);
	s->st.running = 1;
	s->st.started_at = now_ns();
	s->st.socket_reopen_only = s->listen_fd >= 0;
	if ((err = state_write(s->dir, &s->st))) {
		kill(s->pid, SIGKILL);
		reap(s);
		attach_shutdown(s, s->code);
		return fail(s, err);
	}
	send_report(s, NULL);
	return finish(s);
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], SHIM_COMMAND) != 0) {
		fprintf(stderr, "cairn-shim: this is an internal helper of the cairn agent's container runtime; it is "
				"not run by hand\n");
		return 2;
	}
	if (argc != 3) {
		fprintf(stderr, "%s: unexpected arguments (this is an internal command of the container runtime)\n",
			SHIM_COMMAND);
		return 2;
	}
#ifdef __GLIBC__
	/* The setup thread's allocations come from the main arena: a second
	 * one would cost the start its own mapping and page faults. (musl's
	 * malloc has one heap.) */
	mallopt(M_ARENA_MAX, 1);
#endif
	static struct shim s;
	s.dir = argv[2];
	/* The report pipe, inherited, is the shim's alone. Whatever else the
	 * agent inherited without close-on-exec came along too, and would
	 * stay open as long as the container runs (a supervisor's pipe would
	 * never see its end): closed, where the kernel has the call (5.9). */
	s.report_fd = fcntl(3, F_SETFD, FD_CLOEXEC) == 0 ? 3 : -1;
	syscall(SYS_close_range, 4, ~0U, 0);
	s.pidfd = s.listen_fd = s.usr1_fd = s.in = s.term = -1;
	s.out[0].fd = s.out[1].fd = -1;
	return run(&s);
}
