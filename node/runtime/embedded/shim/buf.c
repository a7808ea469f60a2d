/* Buffers, strings and paths, the few the shim needs of Go's. */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void out_of_memory(void)
{
	static const char msg[] = "shim: out of memory\n";
	if (write(2, msg, sizeof msg - 1) < 0) {
		/* Nothing left to tell it with. */
	}
	_exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

char *xstrndup(const char *s, size_t n)
{
	char *c = strndup(s, n);
	if (!c)
		out_of_memory();
	return c;
}

/* buf_reserve makes room for n more bytes and buf_cstr's NUL. */
static void buf_reserve(struct buf *b, size_t n)
{
	if (n >= SIZE_MAX - b->len)
		out_of_memory();
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			out_of_memory();
		cap *= 2;
	}
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

void buf_add(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void buf_str(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	if (n < 0)
		out_of_memory();
	buf_reserve(b, (size_t)n + 1);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
	va_end(again);
	b->len += (size_t)n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *buf_cstr(struct buf *b)
{
	buf_reserve(b, 1);
	b->p[b->len] = 0;
	return b->p;
}

void buf_consume(struct buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

char *errf(const char *fmt, ...)
{
	struct buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	return buf_cstr(&b);
}

#include "goerrors.h"

/* estr words errno e as Go does, whichever C library the shim is built
 * with: the agent passes the shim's messages on as its own. */
const char *estr(int e)
{
	static char *unknown[256]; /* made once per errno */
	size_t n = sizeof go_errnos / sizeof go_errnos[0];
	if (e > 0 && (size_t)e < n && go_errnos[e])
		return go_errnos[e];
	if (e < 0 || e >= 256)
		return "unknown error";
	if (!unknown[e])
		unknown[e] = errf("errno %d", e);
	return unknown[e];
}

/* sigstr words signal sig as Go does. */
const char *sigstr(int sig)
{
	static char *numbered[65];
	size_t n = sizeof go_signals / sizeof go_signals[0];
	if (sig > 0 && (size_t)sig < n && go_signals[sig])
		return go_signals[sig];
	if (sig < 1 || sig > 64)
		return "unknown signal";
	if (!numbered[sig])
		numbered[sig] = errf("signal %d", sig);
	return numbered[sig];
}

/* path_clean is Go's path.Clean. */
char *path_clean(const char *p)
{
	size_t n = strlen(p);
	if (n == 0)
		return xstrdup(".");
	int rooted = p[0] == '/';
	char *out = xmalloc(n + 2);
	size_t w = 0, r = 0, dotdot = 0;
	if (rooted) {
		out[w++] = '/';
		r = dotdot = 1;
	}
	while (r < n) {
		if (p[r] == '/') {
			r++;
		} else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
			r++;
		} else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
			r += 2;
			if (w > dotdot) {
				w--;
				while (w > dotdot && out[w] != '/')
					w--;
			} else if (!rooted) {
				if (w > 0)
					out[w++] = '/';
				out[w++] = '.';
				out[w++] = '.';
				dotdot = w;
			}
		} else {
			if ((rooted && w != 1) || (!rooted && w != 0))
				out[w++] = '/';
			for (; r < n && p[r] != '/'; r++)
				out[w++] = p[r];
		}
	}
	if (w == 0)
		out[w++] = '.';
	out[w] = 0;
	return out;
}

/* path_join is Go's filepath.Join of two elements. */
char *path_join(const char *a, const char *b)
{
	if (!*a)
		return path_clean(b);
	if (!*b)
		return path_clean(a);
	char *both = errf("%s/%s", a, b);
	char *c = path_clean(both);
	free(both);
	return c;
}

/* path_dir is Go's filepath.Dir. */
char *path_dir(const char *p)
{
	const char *slash = strrchr(p, '/');
	if (!slash)
		return xstrdup(".");
	size_t n = (size_t)(slash - p) + 1;
	char *d = xmalloc(n + 1);
	memcpy(d, p, n);
	d[n] = 0;
	char *c = path_clean(d);
	free(d);
	return c;
}

/* path_base is the last element of a clean absolute path. */
const char *path_base(const char *p)
{
	const char *slash = strrchr(p, '/');
	return slash && slash[1] ? slash + 1 : p;
}

int has_prefix(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

char *read_file(const char *path, struct buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf("open %s: %s", path, estr(errno));
	for (;;) {
		buf_reserve(out, 4096);
		ssize_t n = read(fd, out->p + out->len, out->cap - out->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return errf("read %s: %s", path, estr(e));
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
	}
	close(fd);
	buf_cstr(out);
	return NULL;
}

int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}
