/*
 * The shim's poll loop: the container's output to the log and to
 * attached clients, their input to its stdin, the attach socket, the
 * container's exit, and SIGUSR1 where it reopens the log. One thread
 * does it all: the shim costs a container start no thread of its own.
 */
#include "shim.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

/* exit_code is a wait status as shells report it: the code the process
 * exited with, or 128 plus the signal that killed it. */
static int exit_code(int ws)
{
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	return 255;
}

void reap(struct shim *s)
{
	int ws;
	pid_t rc;
	while ((rc = waitpid(s->pid, &ws, 0)) < 0 && errno == EINTR)
		;
	s->code = rc < 0 ? 255 : exit_code(ws);
	s->exited = 1;
	close(s->pidfd);
	s->pidfd = -1;
}

/* log_lines logs the complete lines of o, and the whole of it as a
 * partial entry once it is full without one. */
static void log_lines(struct shim *s, struct output *o)
{
	size_t start = 0;
	for (char *nl; (nl = memchr(o->line + start, '\n', o->len - start));) {
		log_write(&s->log, o->stream, 0, o->line + start, (size_t)(nl - o->line) - start);
		start = (size_t)(nl - o->line) + 1;
	}
	if (start == 0 && o->len == MAX_LOG_LINE) {
		log_write(&s->log, o->stream, 1, o->line, o->len);
		start = o->len;
	}
	memmove(o->line, o->line + start, o->len - start);
	o->len -= start;
}

static void read_output(struct shim *s, struct output *o)
{
	ssize_t n = read(o->fd, o->line + o->len, MAX_LOG_LINE - o->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* The end, or EIO from a terminal whose last slave closed. A
		 * last line without a newline is logged as full. */
		if (o->len > 0)
			log_write(&s->log, o->stream, 0, o->line, o->len);
		o->len = 0;
		close(o->fd);
		if (o->fd == s->term)
			s->term = s->in = -1;
		o->fd = -1;
		return;
	}
	attach_broadcast(s, o, o->line + o->len, (size_t)n);
	o->len += (size_t)n;
	log_lines(s, o);
}

void io_write_stdin(struct shim *s)
{
	while (s->in >= 0 && s->inq.len > 0) {
		ssize_t n = write(s->in, s->inq.p, s->inq.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			/* The process closed its stdin or exited. */
			s->inq.len = 0;
			break;
		}
		buf_consume(&s->inq, (size_t)n);
	}
	if (s->close_in && s->inq.len == 0 && s->in >= 0) {
		close(s->in);
		s->in = -1;
		s->close_in = 0;
	}
}

static void read_usr1(struct shim *s)
{
	struct signalfd_siginfo si;
	while (read(s->usr1_fd, &si, sizeof si) == sizeof si) {
		char *err = shim_reopen_log(s);
		if (err) {
			dprintf(2, "shim: reopening the log: %s\n", err);
			free(err);
		}
	}
}

/* What one pollfd stands for. */
enum source { SRC_PROC, SRC_USR1, SRC_LISTEN, SRC_OUTPUT, SRC_STDIN, SRC_CLIENT };

struct polled {
	enum source src;
	void *what;
};

struct pollset {
	struct pollfd *fds;
	struct polled *of;
	size_t n, cap;
};

static void add(struct pollset *ps, int fd, short events, enum source src, void *what)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 16;
		ps->fds = xrealloc(ps->fds, ps->cap * sizeof *ps->fds);
		ps->of = xrealloc(ps->of, ps->cap * sizeof *ps->of);
	}
	ps->fds[ps->n] = (struct pollfd){fd, events, 0};
	ps->of[ps->n] = (struct polled){src, what};
	ps->n++;
}

/* next_deadline is the earliest time the loop must wake at. */
static int64_t next_deadline(const struct shim *s, int64_t deadline, int64_t now)
{
	int64_t next = deadline;
	if (s->listen_fd >= 0 && s->accept_after > now && (!next || s->accept_after < next))
		next = s->accept_after;
	for (size_t i = 0; i < s->nout; i++)
		if (s->out[i].pending && (!next || s->out[i].pending_since + ATTACH_GRACE < next))
			next = s->out[i].pending_since + ATTACH_GRACE;
	for (const struct client *c = s->clients; c; c = c->next)
		if (!c->attached && (!next || c->deadline < next))
			next = c->deadline;
	return next;
}

static void gather(struct shim *s, struct pollset *ps, int64_t now)
{
	ps->n = 0;
	if (s->pidfd >= 0)
		add(ps, s->pidfd, POLLIN, SRC_PROC, NULL);
	if (s->usr1_fd >= 0)
		add(ps, s->usr1_fd, POLLIN, SRC_USR1, NULL);
	if (s->listen_fd >= 0 && now >= s->accept_after)
		add(ps, s->listen_fd, POLLIN, SRC_LISTEN, NULL);
	for (size_t i = 0; i < s->nout; i++)
		if (s->out[i].fd >= 0 && !s->out[i].pending)
			add(ps, s->out[i].fd, POLLIN, SRC_OUTPUT, &s->out[i]);
	if (s->in >= 0 && s->inq.len > 0)
		add(ps, s->in, POLLOUT, SRC_STDIN, NULL);
	for (struct client *c = s->clients; c; c = c->next) {
		short events = attach_has_frame(c) ? 0 : POLLIN;
		if (c->queued > 0)
			events |= POLLOUT;
		add(ps, c->fd, events, SRC_CLIENT, c);
	}
}

/* alive says whether client c, polled on fd, is still in the shim's
 * list: handling one pollfd may drop clients another one names. */
static int alive(const struct shim *s, const struct client *c, int fd)
{
	for (const struct client *k = s->clients; k; k = k->next)
		if (k == c)
			return c->fd == fd;
	return 0;
}

static void dispatch(struct shim *s, const struct pollfd *fd, const struct polled *of)
{
	if (!fd->revents)
		return;
	switch (of->src) {
	case SRC_PROC:
		reap(s);
		break;
	case SRC_USR1:
		read_usr1(s);
		break;
	case SRC_LISTEN:
		attach_accept(s);
		break;
	case SRC_OUTPUT:
		if (((struct output *)of->what)->fd == fd->fd)
			read_output(s, of->what);
		break;
	case SRC_STDIN:
		io_write_stdin(s);
		break;
	case SRC_CLIENT: {
		struct client *c = of->what;
		if (alive(s, c, fd->fd) && (fd->revents & POLLOUT))
			attach_write(s, c);
		if (alive(s, c, fd->fd) && (fd->revents & (POLLIN | POLLHUP | POLLERR)))
			attach_read(s, c);
		break;
	}
	}
}

void serve(struct shim *s, int (*done)(const struct shim *), int64_t deadline)
{
	struct pollset ps = {0};
	while (!done(s)) {
		int64_t now = now_ns();
		if (deadline && now >= deadline)
			break;
		attach_expire(s, now);
		attach_deliver(s);
		for (struct client *c = s->clients, *next; c; c = next) {
			next = c->next;
			if (attach_has_frame(c))
				attach_handle(s, c);
		}
		gather(s, &ps, now);
		int64_t wake = next_deadline(s, deadline, now);
		int timeout = -1;
		if (wake)
			timeout = wake <= now ? 0 : (int)((wake - now) / 1000000 + 1);
		int n = poll(ps.fds, ps.n, timeout);
		if (n < 0 && errno != EINTR) {
			dprintf(2, "shim: poll: %s\n", estr(errno));
			break;
		}
		for (size_t i = 0; n > 0 && i < ps.n; i++)
			dispatch(s, &ps.fds[i], &ps.of[i]);
	}
	free(ps.fds);
	free(ps.of);
}

/* io_close closes the shim's ends of the container's stdio, which ends
 * copies still reading them. */
void io_close(struct shim *s)
{
	for (size_t i = 0; i < s->nout; i++) {
		if (s->out[i].fd >= 0)
			close(s->out[i].fd);
		s->out[i].fd = -1;
	}
	if (s->in >= 0 && s->in != s->term)
		close(s->in);
	s->in = s->term = -1;
}
