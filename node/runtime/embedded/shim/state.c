/* The container's state.json, with the JSON names of the Go helper.State,
 * and the start times of processes that tell them from later ones. */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void state_json(struct buf *b, const struct state *st)
{
	/* As Go's json.MarshalIndent writes it, omitempty fields included. */
	buf_printf(b, "{\n  \"shimPid\": %d,\n  \"shimStart\": %" PRIu64 ",\n", st->shim_pid, st->shim_start);
	if (st->pid)
		buf_printf(b, "  \"pid\": %d,\n", st->pid);
	if (st->pid_start)
		buf_printf(b, "  \"pidStart\": %" PRIu64 ",\n", st->pid_start);
	buf_printf(b, "  \"running\": %s,\n", st->running ? "true" : "false");
	if (st->started_at)
		buf_printf(b, "  \"startedAt\": %" PRId64 ",\n", st->started_at);
	if (st->finished_at)
		buf_printf(b, "  \"finishedAt\": %" PRId64 ",\n", st->finished_at);
	buf_printf(b, "  \"exitCode\": %" PRId32 ",\n", st->exit_code);
	if (st->reason && *st->reason) {
		buf_str(b, "  \"reason\": ");
		json_escape(b, st->reason);
		buf_str(b, ",\n");
	}
	if (st->message && *st->message) {
		buf_str(b, "  \"message\": ");
		json_escape(b, st->message);
		buf_str(b, ",\n");
	}
	buf_printf(b, "  \"logReopens\": %d", st->log_reopens);
	if (st->socket_reopen_only)
		buf_str(b, ",\n  \"socketReopenOnly\": true");
	buf_str(b, "\n}");
}

/* state_write replaces state.json atomically: the agent, reading it at
 * any time, sees the old file or the new one, never half of one. */
char *state_write(const char *dir, const struct state *st)
{
	char *path = path_join(dir, "state.json");
	char *tmp = path_join(dir, ".state.json-XXXXXX");
	struct buf b = {0};
	state_json(&b, st);
	char *err = NULL;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = errf("atomicfile: open %s: %s", tmp, estr(errno));
		goto out;
	}
	if (fchmod(fd, 0600) < 0 || write_all(fd, b.p, b.len) < 0) {
		err = errf("atomicfile: writing %s: %s", path, estr(errno));
		close(fd);
	} else if (close(fd) < 0 || rename(tmp, path) < 0) {
		err = errf("atomicfile: writing %s: %s", path, estr(errno));
	}
	if (err)
		unlink(tmp);
out:
	free(b.p);
	free(tmp);
	free(path);
	return err;
}

uint64_t proc_start_time(int pid)
{
	char path[32];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	struct buf raw = {0};
	char *err = read_file(path, &raw);
	uint64_t start = 0;
	/* The command name, field 2, may hold spaces and parentheses: the
	 * fields after it start after the last ')'. */
	char *after = err ? NULL : strrchr(raw.p, ')');
	if (after) {
		char *field = after + 1, *save = NULL;
		char *tok = strtok_r(field, " \n", &save);
		for (int i = 0; tok && i < 19; i++)
			tok = strtok_r(NULL, " \n", &save);
		char state = after[2];
		if (tok && state != 'Z' && state != 'X')
			start = strtoull(tok, NULL, 10);
	}
	free(err);
	free(raw.p);
	return start;
}
