/*
 * The shim's side of the attach protocol (see AttachSocket in the Go
 * package helper, whose client the agent runs): it serves the socket,
 * copies the container's output to attached clients and their input to
 * its stdin, and reopens the log when asked.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

/* MAX_FRAME_DATA bounds the data of one frame; a client sending more is
 * cut off. MAX_HEADER bounds the header line. */
#define MAX_FRAME_DATA (1 << 20)
#define MAX_HEADER 4096
#define FRAME_HEADER 5
/* MAX_INPUT bounds the input waiting for the container's stdin: past
 * it, clients' input waits in their sockets. */
#define MAX_INPUT (64 * 1024)
/* EOT is ^D, which a terminal in canonical mode turns into an end of
 * file for the process reading it. */
#define EOT 0x04

/* socket_path is a short path of name in the directory open as dirfd:
 * the path of a unix socket is limited to 107 bytes, less than a
 * container's directory may take. */
static void socket_path(struct sockaddr_un *addr, int dirfd)
{
	memset(addr, 0, sizeof *addr);
	addr->sun_family = AF_UNIX;
	snprintf(addr->sun_path, sizeof addr->sun_path, "/proc/self/fd/%d/%s", dirfd, ATTACH_SOCKET);
}

/* attach_listen makes the container's attach socket, of mode 0600,
 * replacing any file of that name. */
char *attach_listen(const char *dir, int *fd)
{
	char *full = path_join(dir, ATTACH_SOCKET);
	char *err = NULL;
	int dirfd = -1, sock = -1;
	if (unlink(full) < 0 && errno != ENOENT) {
		err = errf("remove %s: %s", full, estr(errno));
		goto out;
	}
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		err = errf("open %s: %s", dir, estr(errno));
		goto out;
	}
	struct sockaddr_un addr;
	socket_path(&addr, dirfd);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock < 0) {
		err = errf("socket: %s", estr(errno));
		goto out;
	}
	if (bind(sock, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(sock, SOMAXCONN) < 0) {
		err = errf("listen unix %s: %s", full, estr(errno));
		goto out;
	}
	if (chmod(full, 0600) < 0) {
		err = errf("chmod %s: %s", full, estr(errno));
		unlink(full);
		goto out;
	}
	*fd = sock;
	sock = -1;
out:
	if (sock >= 0)
		close(sock);
	if (dirfd >= 0)
		close(dirfd);
	free(full);
	return err;
}

void attach_unlink(const char *dir)
{
	char *full = path_join(dir, ATTACH_SOCKET);
	unlink(full);
	free(full);
}

static struct frame *frame_new(enum frame_kind kind, const void *data, size_t n)
{
	struct frame *f = xmalloc(sizeof *f + FRAME_HEADER + n);
	f->refs = 1;
	f->len = FRAME_HEADER + n;
	f->data[0] = (char)kind;
	f->data[1] = (char)(n >> 24);
	f->data[2] = (char)(n >> 16);
	f->data[3] = (char)(n >> 8);
	f->data[4] = (char)n;
	memcpy(f->data + FRAME_HEADER, data, n);
	return f;
}

static void frame_unref(struct frame *f)
{
	if (f && --f->refs == 0)
		free(f);
}

static int queue_full(const struct client *c) { return c->queued == ATTACH_QUEUE; }

static void queue_push(struct client *c, struct frame *f)
{
	f->refs++;
	c->queue[(c->head + c->queued) % ATTACH_QUEUE] = f;
	c->queued++;
}

static int wants(const struct client *c, enum frame_kind kind)
{
	return kind == FRAME_STDOUT ? c->want_stdout : kind == FRAME_STDERR ? c->want_stderr : 1;
}

/* input_ended is the end of an attached client's input: with StdinOnce,
 * it closes the container's stdin for good. A pipe is closed; a
 * terminal, which cannot be closed without hanging up the process, gets
 * ^D, which a shell or cat in canonical mode takes as end of file at the
 * start of a line. Input queued before goes first. */
static void input_ended(struct shim *s)
{
	if (s->in < 0 || !s->sp.stdin_once || s->in_closed)
		return;
	s->in_closed = 1;
	if (s->term < 0) {
		s->close_in = 1;
	} else {
		char eot = EOT;
		buf_add(&s->inq, &eot, 1);
	}
	io_write_stdin(s);
}

/* attach_drop disconnects a client at once, dropping the output it has
 * not taken. An input it had not closed ends all the same, whether the
 * client hung up or was dropped for its slowness or a failed write: with
 * StdinOnce, the container's stdin would otherwise never close. */
void attach_drop(struct shim *s, struct client *c)
{
	if (c->stdin_open)
		input_ended(s);
	for (struct client **p = &s->clients; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	if (c->attached && !c->closing)
		s->attached--;
	for (; c->queued > 0; c->queued--, c->head = (c->head + 1) % ATTACH_QUEUE)
		frame_unref(c->queue[c->head]);
	close(c->fd);
	free(c->in.p);
	free(c);
}

/* reply sends a client its one-line answer and closes it. */
static void reply(struct shim *s, struct client *c, const char *error)
{
	struct buf b = {0};
	if (error)
		json_error_line(&b, error);
	else
		buf_str(&b, "{}\n");
	/* A fresh socket's buffer takes a line: a client that did not read
	 * it has gone anyway. */
	if (send(c->fd, b.p, b.len, MSG_NOSIGNAL) < 0) {
		/* Nothing to tell it with. */
	}
	free(b.p);
	attach_drop(s, c);
}

void attach_accept(struct shim *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			/* The connection stays queued, and the socket readable:
			 * polled at once, it would spin the loop. */
			s->accept_after = now_ns() + ACCEPT_PAUSE;
			return;
		}
		if (fd < 0)
			return; /* EAGAIN, or a connection aborted */
		struct client *c = xmalloc(sizeof *c);
		memset(c, 0, sizeof *c);
		c->fd = fd;
		c->deadline = now_ns() + ATTACH_HANDSHAKE;
		c->next = s->clients;
		s->clients = c;
	}
}

static char *parse_header(struct client *c, const char *line, size_t n)
{
	struct jval h;
	char *err = json_parse(line, n, &h);
	if (!err && h.t != J_OBJ && h.t != J_NULL)
		err = errf("not an object");
	const struct {
		const char *name;
		int *field;
	} fields[] = {
	    {"stdin", &c->want_stdin}, {"stdout", &c->want_stdout}, {"stderr", &c->want_stderr},
	    {"tty", &c->want_tty},     {"reopenLog", &c->reopen_log},
	};
	const struct jval *f;
	for (size_t i = 0; !err && h.t == J_OBJ && i < sizeof fields / sizeof fields[0]; i++)
		if ((f = json_get(&h, fields[i].name)))
			err = json_bool(f, fields[i].name, fields[i].field);
	json_free(&h);
	return err;
}

/* check_attach says why the container cannot take the client's attach,
 * as the Go CheckAttach, which the agent checks first. */
static const char *check_attach(const struct spec *sp, const struct client *c)
{
	if (c->want_stdin && !sp->stdin_)
		return "stdin is not enabled for this container: it must be created with stdin (stdin: true in the "
		       "pod's container spec) to attach to its input";
	if (c->want_tty && !sp->tty)
		return "the container has no tty: it must be created with one (tty: true in the pod's container spec) "
		       "to attach with a terminal";
	/* A client without a terminal may attach to a container with one:
	 * the terminal's output comes as stdout, its input goes to it. */
	return NULL;
}

/* handshake handles the client's header line once it has it; it
 * returns 0 if the client is gone. */
static int handshake(struct shim *s, struct client *c)
{
	size_t scan = c->in.len < MAX_HEADER ? c->in.len : MAX_HEADER;
	char *nl = memchr(c->in.p, '\n', scan);
	if (!nl) {
		if (c->in.len >= MAX_HEADER) {
			reply(s, c, "helper: malformed attach header");
			return 0;
		}
		return 1;
	}
	size_t n = (size_t)(nl - c->in.p) + 1;
	char *err = parse_header(c, c->in.p, n);
	if (err) {
		free(err);
		reply(s, c, "helper: malformed attach header");
		return 0;
	}
	buf_consume(&c->in, n);
	const char *refusal;
	if (c->reopen_log) {
		err = shim_reopen_log(s);
		reply(s, c, err);
		free(err);
		return 0;
	}
	if ((refusal = check_attach(&s->sp, c))) {
		reply(s, c, refusal);
		return 0;
	}
	if (s->listen_fd < 0) {
		reply(s, c, "the container has exited");
		return 0;
	}
	struct frame *accepted = xmalloc(sizeof *accepted + 3);
	accepted->refs = 0;
	accepted->len = 3;
	memcpy(accepted->data, "{}\n", 3);
	queue_push(c, accepted);
	c->attached = 1;
	c->stdin_open = c->want_stdin;
	s->attached++;
	return 1;
}

/* input queues a client's input for the container's stdin; it returns 0
 * when the queue is too long to take it now. A process that does not
 * read its stdin holds up the clients writing to it, not the container.
 */
static int input(struct shim *s, const char *p, size_t n)
{
	if (s->in < 0 || s->in_closed)
		return 1;
	if (s->inq.len > MAX_INPUT)
		return 0;
	buf_add(&s->inq, p, n);
	return 1;
}

static void resize(struct shim *s, const char *p, size_t n)
{
	struct jval v;
	const struct jval *f;
	int64_t width = 0, height = 0;
	char *err = json_parse(p, n, &v);
	if (!err && v.t == J_OBJ && (f = json_get(&v, "width")))
		err = json_int(f, "width", 0, UINT16_MAX, &width);
	if (!err && v.t == J_OBJ && (f = json_get(&v, "height")))
		err = json_int(f, "height", 0, UINT16_MAX, &height);
	if (!err && s->term >= 0) {
		struct winsize ws = {.ws_row = (unsigned short)height, .ws_col = (unsigned short)width};
		if (ioctl(s->term, TIOCSWINSZ, &ws) < 0) {
			/* A terminal hung up by the container's exit. */
		}
	}
	json_free(&v);
	free(err);
}

int attach_has_frame(const struct client *c)
{
	if (!c->attached || c->in.len < FRAME_HEADER)
		return 0;
	const unsigned char *h = (const unsigned char *)c->in.p;
	size_t n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
	return n > MAX_FRAME_DATA || c->in.len >= FRAME_HEADER + n;
}

void attach_handle(struct shim *s, struct client *c)
{
	if (!c->attached && !handshake(s, c))
		return;
	while (attach_has_frame(c)) {
		const unsigned char *h = (const unsigned char *)c->in.p;
		size_t n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
		if (n > MAX_FRAME_DATA) {
			attach_drop(s, c);
			return;
		}
		const char *data = c->in.p + FRAME_HEADER;
		switch (h[0]) {
		case FRAME_STDIN:
			if (c->stdin_open && !input(s, data, n))
				return; /* again once the stdin took some */
			break;
		case FRAME_STDIN_CLOSE:
			if (c->stdin_open) {
				c->stdin_open = 0;
				input_ended(s);
			}
			break;
		case FRAME_RESIZE:
			resize(s, data, n);
			break;
		}
		/* Other kinds are for newer shims: ignored. */
		buf_consume(&c->in, FRAME_HEADER + n);
	}
	io_write_stdin(s);
}

void attach_read(struct shim *s, struct client *c)
{
	for (;;) {
		if (c->in.cap - c->in.len < 65536) {
			c->in.p = xrealloc(c->in.p, c->in.len + 65536);
			c->in.cap = c->in.len + 65536;
		}
		ssize_t n = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			if (c->attached)
				attach_drop(s, c);
			else
				reply(s, c, "helper: malformed attach header");
			return;
		}
		c->in.len += (size_t)n;
		if (attach_has_frame(c) || !c->attached)
			break;
	}
	attach_handle(s, c);
}

void attach_write(struct shim *s, struct client *c)
{
	while (c->queued > 0) {
		struct frame *f = c->queue[c->head];
		/* No SIGPIPE from a client gone, even if it was not ignored. */
		ssize_t n = send(c->fd, f->data + c->sent, f->len - c->sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			attach_drop(s, c);
			return;
		}
		c->sent += (size_t)n;
		if (c->sent < f->len)
			continue;
		frame_unref(f);
		c->sent = 0;
		c->head = (c->head + 1) % ATTACH_QUEUE;
		c->queued--;
	}
	if (c->closing)
		attach_drop(s, c);
}

/* attach_broadcast queues output of the container to the clients that
 * asked for it. A client whose queue is full is owed it (see struct
 * output). */
void attach_broadcast(struct shim *s, struct output *o, const char *p, size_t n)
{
	if (s->attached == 0)
		return;
	struct frame *f = NULL;
	for (struct client *c = s->clients; c; c = c->next) {
		if (!c->attached || c->closing || !wants(c, o->kind))
			continue;
		if (!f)
			f = frame_new(o->kind, p, n);
		if (!queue_full(c)) {
			queue_push(c, f);
			continue;
		}
		c->owed |= 1u << o->kind;
		if (!o->pending) {
			f->refs++;
			o->pending = f;
			o->pending_since = now_ns();
		}
	}
	frame_unref(f);
}

void attach_deliver(struct shim *s)
{
	for (size_t i = 0; i < s->nout; i++) {
		struct output *o = &s->out[i];
		if (!o->pending)
			continue;
		int owed = 0;
		for (struct client *c = s->clients; c; c = c->next) {
			if (!(c->owed & 1u << o->kind))
				continue;
			if (queue_full(c)) {
				owed = 1;
				continue;
			}
			queue_push(c, o->pending);
			c->owed &= ~(1u << o->kind);
		}
		if (!owed) {
			frame_unref(o->pending);
			o->pending = NULL;
		}
	}
}

/* attach_expire drops clients that took no output for the grace while
 * output waited for them, and those whose handshake took too long. */
void attach_expire(struct shim *s, int64_t now)
{
	for (size_t i = 0; i < s->nout; i++) {
		struct output *o = &s->out[i];
		if (!o->pending || now < o->pending_since + ATTACH_GRACE)
			continue;
		for (struct client *c = s->clients, *next; c; c = next) {
			next = c->next;
			if (c->owed & 1u << o->kind)
				attach_drop(s, c);
		}
		frame_unref(o->pending);
		o->pending = NULL;
	}
	for (struct client *c = s->clients, *next; c; c = next) {
		next = c->next;
		if (!c->attached && now >= c->deadline)
			reply(s, c, "helper: malformed attach header");
	}
}

/* attach_shutdown, once the container exited and its output was copied,
 * stops taking clients and queues each its exit frame; the caller then
 * serves them until they have it. */
void attach_shutdown(struct shim *s, int code)
{
	if (s->listen_fd < 0)
		return;
	close(s->listen_fd);
	s->listen_fd = -1;
	attach_unlink(s->dir);
	s->in_closed = 1;
	char exit[32];
	int n = snprintf(exit, sizeof exit, "{\"exitCode\":%d}", code);
	struct frame *f = frame_new(FRAME_EXIT, exit, (size_t)n);
	for (struct client *c = s->clients, *next; c; c = next) {
		next = c->next;
		if (!c->attached || queue_full(c) || c->owed) {
			attach_drop(s, c);
			continue;
		}
		queue_push(c, f);
		c->closing = 1;
		s->attached--;
	}
	frame_unref(f);
}
