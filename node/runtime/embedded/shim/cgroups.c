/* The container's cgroups, as the Go package cgroups names them. */
#include "shim.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* cgroup_dirs lists the directories, v1 in controller order, then v2. */
static size_t cgroup_dirs(const struct cgroup_paths *cg, const char *dirs[CG_V1 + 1])
{
	size_t n = 0;
	for (int c = 0; c < CG_V1; c++)
		if (cg->v1[c])
			dirs[n++] = cg->v1[c];
	if (cg->v2)
		dirs[n++] = cg->v2;
	return n;
}

struct strv cgroup_procs_files(const struct cgroup_paths *cg)
{
	const char *dirs[CG_V1 + 1];
	size_t n = cgroup_dirs(cg, dirs);
	struct strv out = {xmalloc((n + 1) * sizeof *out.v), n};
	for (size_t i = 0; i < n; i++)
		out.v[i] = path_join(dirs[i], "cgroup.procs");
	out.v[n] = NULL;
	return out;
}

/* counter reads "key value" from a flat-keyed cgroup file, 0 if absent. */
static int counter(const char *dir, const char *file, const char *key)
{
	char *path = path_join(dir, file);
	struct buf raw = {0};
	char *err = read_file(path, &raw);
	int n = 0;
	size_t klen = strlen(key);
	for (char *line = err ? NULL : raw.p; line && *line;) {
		char *next = strchr(line, '\n');
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			n = atoi(line + klen + 1);
			break;
		}
		line = next ? next + 1 : NULL;
	}
	free(err);
	free(raw.p);
	free(path);
	return n;
}

int cgroup_oom_kills(const struct cgroup_paths *cg)
{
	if (cg->v1[CG_MEMORY])
		return counter(cg->v1[CG_MEMORY], "memory.oom_control", "oom_kill");
	if (cg->v2)
		return counter(cg->v2, "memory.events", "oom_kill");
	return 0;
}

/* cgroup_pids lists the processes in the cgroup, each once. */
static void cgroup_pids(const struct cgroup_paths *cg, struct buf *pids)
{
	const char *dirs[CG_V1 + 1];
	size_t n = cgroup_dirs(cg, dirs);
	pids->len = 0;
	for (size_t i = 0; i < n; i++) {
		char *path = path_join(dirs[i], "cgroup.procs");
		struct buf raw = {0};
		char *err = read_file(path, &raw);
		for (char *p = err ? NULL : raw.p; p && *p;) {
			char *end;
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			int seen = 0;
			for (size_t j = 0; j < pids->len / sizeof(int); j++)
				seen |= ((int *)pids->p)[j] == pid;
			int v = (int)pid;
			if (!seen)
				buf_add(pids, &v, sizeof v);
			p = end;
		}
		free(err);
		free(raw.p);
		free(path);
	}
}

/* cgroup_kill_all SIGKILLs every process left in the cgroup, e.g. one
 * that escaped its container's PID namespace teardown by setsid'ing
 * into another session, and waits until they are gone. */
char *cgroup_kill_all(const struct cgroup_paths *cg, int timeout_ms)
{
	struct buf pids = {0};
	int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
	char *err = NULL;
	for (;;) {
		cgroup_pids(cg, &pids);
		size_t n = pids.len / sizeof(int);
		if (n == 0)
			break;
		int *list = (int *)pids.p;
		if (now_ns() > deadline) {
			struct buf msg = {0};
			buf_str(&msg, "cgroups: processes [");
			for (size_t i = 0; i < n; i++)
				buf_printf(&msg, "%s%d", i ? " " : "", list[i]);
			buf_printf(&msg, "] survive SIGKILL in cgroup %s", cg->v2 ? cg->v2 : "");
			err = buf_cstr(&msg);
			break;
		}
		for (size_t i = 0; i < n; i++)
			kill(list[i], SIGKILL);
		nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
	}
	free(pids.p);
	return err;
}
