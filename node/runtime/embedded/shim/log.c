/*
 * The CRI log: the container's output, one entry per line,
 * "<RFC3339Nano time> <stdout|stderr> <F|P> <line>". Lines longer than
 * MAX_LOG_LINE are split into partial (P) entries, as containerd does.
 * Without a path, output is read and discarded.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *log_open(struct cri_log *l, const char *path)
{
	l->path = path;
	l->fd = -1;
	return log_reopen(l);
}

/* mkdir_parents makes the directories of path, as Go's os.MkdirAll. */
static int mkdir_parents(const char *dir)
{
	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -1;
	char *parent = path_dir(dir);
	int rc = strcmp(parent, dir) != 0 ? mkdir_parents(parent) : -1;
	free(parent);
	if (rc < 0)
		return -1;
	return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* log_reopen closes the log file and opens its path anew, creating it:
 * after the kubelet rotated the old file away, output goes to a fresh
 * one. */
char *log_reopen(struct cri_log *l)
{
	if (!*l->path)
		return NULL;
	char *dir = path_dir(l->path);
	int rc = mkdir_parents(dir);
	int e = errno;
	char *err = rc < 0 ? errf("helper: mkdir %s: %s", dir, estr(e)) : NULL;
	free(dir);
	if (err)
		return err;
	int fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		return errf("helper: opening log %s: open %s: %s", l->path, l->path, estr(errno));
	if (l->fd >= 0)
		close(l->fd);
	l->fd = fd;
	return NULL;
}

/* timestamp appends the time as Go's time.RFC3339Nano in UTC: trailing
 * zeros of the fraction dropped, and the fraction with them if nothing
 * is left. */
static void timestamp(struct buf *b)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	buf_printf(b, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		   tm.tm_min, tm.tm_sec);
	if (ts.tv_nsec) {
		long ns = ts.tv_nsec;
		int digits = 9;
		while (ns % 10 == 0) {
			ns /= 10;
			digits--;
		}
		buf_printf(b, ".%0*ld", digits, ns);
	}
	buf_add(b, "Z", 1);
}

/* log_write appends one entry in one write(2), so that entries of
 * stdout and stderr never interleave within a line. */
void log_write(struct cri_log *l, const char *stream, int partial, const char *line, size_t n)
{
	if (l->fd < 0)
		return;
	struct buf b = {0};
	timestamp(&b);
	buf_printf(&b, " %s %s ", stream, partial ? "P" : "F");
	buf_add(&b, line, n);
	buf_add(&b, "\n", 1);
	/* A full disk loses output, as it would in any runtime: the
	 * container must not stop for it. */
	if (write_all(l->fd, b.p, b.len) < 0) {
		/* Dropped. */
	}
	free(b.p);
}
