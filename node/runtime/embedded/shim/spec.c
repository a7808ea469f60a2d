/* The container's spec.json: the JSON of the Go helper.Spec. */
#include "shim.h"

#include <stdlib.h>
#include <string.h>

static char *read_strv(const struct jval *v, const char *name, struct strv *out)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_ARR)
		return errf("%s: want an array of strings", name);
	out->n = v->n;
	out->v = xmalloc((v->n + 1) * sizeof *out->v);
	for (size_t i = 0; i < v->n; i++) {
		char *err = json_str(&v->items[i], name, &out->v[i]);
		if (err)
			return err;
		if (v->items[i].t == J_NULL)
			out->v[i] = "";
	}
	out->v[v->n] = NULL;
	return NULL;
}

static char *read_groups(const struct jval *v, struct spec *sp)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_ARR)
		return errf("groups: want an array of numbers");
	sp->ngroups = v->n;
	sp->groups = xmalloc(v->n * sizeof *sp->groups);
	for (size_t i = 0; i < v->n; i++) {
		uint64_t g = 0;
		char *err = json_uint(&v->items[i], "groups", UINT32_MAX, &g);
		if (err)
			return err;
		sp->groups[i] = (uint32_t)g;
	}
	return NULL;
}

static char *read_caps(const struct jval *v, struct spec *sp)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_ARR)
		return errf("caps: want an array of numbers");
	sp->ncaps = v->n;
	sp->caps = xmalloc(v->n * sizeof *sp->caps);
	for (size_t i = 0; i < v->n; i++) {
		int64_t c = 0;
		char *err = json_int(&v->items[i], "caps", INT32_MIN, INT32_MAX, &c);
		if (err)
			return err;
		sp->caps[i] = (int)c;
	}
	return NULL;
}

static char *read_mounts(const struct jval *v, struct spec *sp)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_ARR)
		return errf("mounts: want an array of objects");
	sp->nmounts = v->n;
	sp->mounts = xmalloc(v->n * sizeof *sp->mounts);
	for (size_t i = 0; i < v->n; i++) {
		const struct jval *m = &v->items[i], *f;
		struct volume *vol = &sp->mounts[i];
		*vol = (struct volume){"", "", "", 0};
		if (m->t == J_NULL)
			continue;
		if (m->t != J_OBJ)
			return errf("mounts: want an array of objects");
		char *err = NULL;
		if (!err && (f = json_get(m, "source")))
			err = json_str(f, "mounts.source", &vol->source);
		if (!err && (f = json_get(m, "target")))
			err = json_str(f, "mounts.target", &vol->target);
		if (!err && (f = json_get(m, "readonly")))
			err = json_bool(f, "mounts.readonly", &vol->readonly);
		if (!err && (f = json_get(m, "propagation")))
			err = json_str(f, "mounts.propagation", &vol->propagation);
		if (err)
			return err;
	}
	return NULL;
}

static char *read_cgroups(const struct jval *v, struct cgroup_paths *cg)
{
	static const char *const controllers[CG_V1] = {"memory", "cpu", "cpuacct", "pids"};
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_OBJ)
		return errf("cgroups: want an object");
	const struct jval *f;
	if ((f = json_get(v, "v2"))) {
		char *err = json_str(f, "cgroups.v2", &cg->v2);
		if (err)
			return err;
	}
	if (cg->v2 && !*cg->v2)
		cg->v2 = NULL;
	const struct jval *v1 = json_get(v, "v1");
	if (!v1 || v1->t == J_NULL)
		return NULL;
	if (v1->t != J_OBJ)
		return errf("cgroups.v1: want an object");
	for (int c = 0; c < CG_V1; c++) {
		if ((f = json_get(v1, controllers[c]))) {
			char *err = json_str(f, "cgroups.v1", &cg->v1[c]);
			if (err)
				return err;
		}
	}
	return NULL;
}

static char *read_pidns(const struct jval *v, struct spec *sp)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_OBJ)
		return errf("pidNamespaceOf: want an object");
	const struct jval *f;
	int64_t pid = 0;
	char *err = NULL;
	if ((f = json_get(v, "pid")))
		err = json_int(f, "pidNamespaceOf.pid", INT32_MIN, INT32_MAX, &pid);
	if (!err && (f = json_get(v, "start")))
		err = json_uint(f, "pidNamespaceOf.start", UINT64_MAX, &sp->pidns_start);
	if (err)
		return err;
	/* A target named by pid 0 is no process: joining it fails as a gone
	 * one does. */
	sp->pidns_pid = pid ? (int)pid : -1;
	return NULL;
}

/* read_spec fills sp from the top-level object; fields absent or null
 * keep their zero values, unknown ones are ignored, as Go does. */
static char *read_spec(const struct jval *root, struct spec *sp)
{
	static const struct {
		const char *name;
		size_t off;
	} strs[] = {
	    {"id", offsetof(struct spec, id)},
	    {"cwd", offsetof(struct spec, cwd)},
	    {"hostname", offsetof(struct spec, hostname)},
	    {"etcDir", offsetof(struct spec, etc_dir)},
	    {"netns", offsetof(struct spec, netns)},
	    {"imageRoot", offsetof(struct spec, image_root)},
	    {"logPath", offsetof(struct spec, log_path)},
	    {"ipcns", offsetof(struct spec, ipcns)},
	    {"shm", offsetof(struct spec, shm)},
	}, bools[] = {
	    {"overlay", offsetof(struct spec, overlay)},
	    {"readonlyRootfs", offsetof(struct spec, readonly_rootfs)},
	    {"privileged", offsetof(struct spec, privileged)},
	    {"noNewPrivs", offsetof(struct spec, no_new_privs)},
	    {"stdin", offsetof(struct spec, stdin_)},
	    {"stdinOnce", offsetof(struct spec, stdin_once)},
	    {"tty", offsetof(struct spec, tty)},
	    {"hostPID", offsetof(struct spec, host_pid)},
	    {"hostIPC", offsetof(struct spec, host_ipc)},
	}, strvs[] = {
	    {"args", offsetof(struct spec, args)},
	    {"env", offsetof(struct spec, env)},
	    {"maskedPaths", offsetof(struct spec, masked)},
	    {"readonlyPaths", offsetof(struct spec, readonly)},
	};
	if (root->t != J_OBJ)
		return errf("want an object");
	const struct jval *f;
	char *err = NULL;
	for (size_t i = 0; !err && i < sizeof strs / sizeof strs[0]; i++) {
		char **field = (char **)((char *)sp + strs[i].off);
		*field = "";
		if ((f = json_get(root, strs[i].name)))
			err = json_str(f, strs[i].name, field);
	}
	for (size_t i = 0; !err && i < sizeof bools / sizeof bools[0]; i++)
		if ((f = json_get(root, bools[i].name)))
			err = json_bool(f, bools[i].name, (int *)((char *)sp + bools[i].off));
	for (size_t i = 0; !err && i < sizeof strvs / sizeof strvs[0]; i++) {
		struct strv *field = (struct strv *)((char *)sp + strvs[i].off);
		static char *none[] = {NULL};
		*field = (struct strv){none, 0};
		if ((f = json_get(root, strvs[i].name)))
			err = read_strv(f, strvs[i].name, field);
	}
	uint64_t id = 0;
	int64_t adj = 0;
	if (!err && (f = json_get(root, "uid")) && !(err = json_uint(f, "uid", UINT32_MAX, &id)))
		sp->uid = (uint32_t)id;
	id = 0;
	if (!err && (f = json_get(root, "gid")) && !(err = json_uint(f, "gid", UINT32_MAX, &id)))
		sp->gid = (uint32_t)id;
	if (!err && (f = json_get(root, "oomScoreAdj")) && !(err = json_int(f, "oomScoreAdj", INT64_MIN, INT64_MAX, &adj)))
		sp->oom_score_adj = adj;
	if (!err && (f = json_get(root, "groups")))
		err = read_groups(f, sp);
	if (!err && (f = json_get(root, "caps")))
		err = read_caps(f, sp);
	if (!err && (f = json_get(root, "mounts")))
		err = read_mounts(f, sp);
	if (!err && (f = json_get(root, "cgroups")))
		err = read_cgroups(f, &sp->cg);
	if (!err && (f = json_get(root, "pidNamespaceOf")))
		err = read_pidns(f, sp);
	return err;
}

char *spec_read(const char *dir, struct spec *sp)
{
	char *path = path_join(dir, "spec.json");
	struct buf raw = {0};
	char *err = read_file(path, &raw);
	struct jval root;
	memset(sp, 0, sizeof *sp);
	if (!err && (err = json_parse(raw.p, raw.len, &root)) == NULL)
		err = read_spec(&root, sp);
	if (err && raw.p) {
		char *wrapped = errf("helper: %s: %s", path, err);
		free(err);
		err = wrapped;
	}
	if (!err && sp->args.n == 0)
		err = errf("helper: %s: the container has no command", path);
	free(path);
	free(raw.p);
	return err;
}

int in_proc(const char *p)
{
	char *rooted = errf("/%s", p);
	char *c = path_clean(rooted);
	int in = strcmp(c, "/proc") == 0 || has_prefix(c, "/proc/");
	free(rooted);
	free(c);
	return in;
}

struct strv proc_paths(const struct strv *ps)
{
	struct strv out = {xmalloc((ps->n + 1) * sizeof *out.v), 0};
	for (size_t i = 0; i < ps->n; i++) {
		if (in_proc(ps->v[i])) {
			char *rooted = errf("/%s", ps->v[i]);
			out.v[out.n++] = path_clean(rooted);
			free(rooted);
		}
	}
	out.v[out.n] = NULL;
	return out;
}
