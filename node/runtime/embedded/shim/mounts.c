/*
 * The container's filesystem, built at root in the container's own
 * mount namespace: nothing mounted here is visible on the host, and all
 * of it goes away with the container's last process. All but /proc:
 * only a process in the container's PID namespace can mount that one,
 * so the container's first process mounts it, and handles the masked
 * and read-only paths inside it (see child.c).
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* MAX_SYMLINKS bounds the symlinks followed resolving one path, as
 * Linux's MAXSYMLINKS does. */
#define MAX_SYMLINKS 40

/* resolve_in resolves p inside the tree at root, following symlinks as
 * if root were "/": absolute links and ".." never leave root. It returns
 * the result relative to root ("" for root), with no symlink left in
 * it; components that do not exist yet are kept as they are. It is the
 * Go rootfs.ResolveIn. */
static char *resolve_in(const char *root, const char *p, char **out)
{
	struct buf resolved = {0}, pending = {0};
	buf_str(&pending, p);
	int links = 0;
	char *err = NULL;
	buf_cstr(&resolved);
	while (pending.len > 0) {
		char *s = buf_cstr(&pending);
		size_t clen = strcspn(s, "/");
		char *c = xstrndup(s, clen);
		buf_consume(&pending, clen < pending.len ? clen + 1 : clen);
		if (!*c || strcmp(c, ".") == 0) {
			free(c);
			continue;
		}
		if (strcmp(c, "..") == 0) {
			char *last = strrchr(buf_cstr(&resolved), '/');
			resolved.len = last ? (size_t)(last - resolved.p) : 0;
			free(c);
			continue;
		}
		size_t before = resolved.len;
		if (resolved.len)
			buf_add(&resolved, "/", 1);
		buf_str(&resolved, c);
		free(c);
		char *host = path_join(root, buf_cstr(&resolved));
		struct stat st;
		if (lstat(host, &st) < 0 || !S_ISLNK(st.st_mode)) {
			free(host);
			continue;
		}
		if (++links > MAX_SYMLINKS) {
			err = errf("rootfs: resolving %s in %s: %s", p, root, estr(ELOOP));
			free(host);
			break;
		}
		struct buf target = {0};
		for (size_t size = 256;; size *= 2) {
			target.p = xrealloc(target.p, size);
			ssize_t n = readlink(host, target.p, size);
			if (n < 0) {
				err = errf("rootfs: readlink %s: %s", host, estr(errno));
				break;
			}
			if ((size_t)n < size) {
				target.len = (size_t)n;
				target.cap = size;
				break;
			}
		}
		free(host);
		if (err) {
			free(target.p);
			break;
		}
		resolved.len = target.len && target.p[0] == '/' ? 0 : before;
		buf_add(&target, "/", 1);
		buf_add(&target, pending.p, pending.len);
		free(pending.p);
		pending = target;
	}
	free(pending.p);
	if (err)
		free(resolved.p);
	else
		*out = buf_cstr(&resolved);
	return err;
}

/* What open_in_root makes of a path that does not exist. */
enum make { MAKE_NONE, MAKE_DIR, MAKE_FILE };

/* A file of the container's tree, open for mounts on it. */
struct target {
	/* fd is an O_PATH descriptor, -1 for a path that does not exist. */
	int fd;
	/* path is fd's in /proc, which mount(2) takes: it names the file of
	 * fd whatever path leads there by now. It names what a mount on it
	 * covers: after a mount, the path is opened again. */
	char path[32];
};

static int make_at(int dir, const char *name, int is_dir)
{
	if (is_dir)
		return mkdirat(dir, name, 0755);
	int fd = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* open_step opens name in directory dir without following a symlink,
 * made as make says if missing: a directory if is_dir, else a file. It
 * gives -1 in *fd for a path missing that is not to be made. */
static char *open_step(int dir, const char *name, int is_dir, enum make make, const char *host, int *fd)
{
	*fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 && errno == ENOENT && make != MAKE_NONE) {
		if (make_at(dir, name, is_dir) < 0 && errno != EEXIST)
			return errf("%s %s: %s", is_dir ? "mkdir" : "open", host, estr(errno));
		*fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (*fd < 0 && errno == ENOENT && make == MAKE_NONE)
		return NULL;
	if (*fd < 0)
		return errf("open %s: %s", host, estr(errno));
	struct stat st;
	int e = 0;
	if (fstat(*fd, &st) < 0)
		e = errno;
	else if (S_ISLNK(st.st_mode))
		e = ELOOP; /* made a symlink since it was resolved */
	else if (is_dir && !S_ISDIR(st.st_mode))
		e = ENOTDIR;
	if (e) {
		close(*fd);
		*fd = -1;
	}
	if (e == ENOTDIR && make == MAKE_NONE)
		return NULL;
	if (e)
		return errf("%s %s: %s", e == ENOTDIR ? "mkdir" : "open", host, estr(e));
	return NULL;
}

/* open_in_root opens container path p in the tree at root, making it as
 * make says if missing. It resolves p (see resolve_in), then walks the
 * result from a descriptor of root one component at a time, following
 * no symlink: a path changed since it was resolved (in a volume another
 * container writes to) fails the walk instead of leading out of root,
 * and nothing is made or mounted outside it. */
static char *open_in_root(const char *root, const char *p, enum make make, struct target *t)
{
	char *rel, *err = resolve_in(root, p, &rel);
	if (err)
		return err;
	struct buf host = {0};
	buf_str(&host, root);
	t->fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->fd < 0)
		err = errf("open %s: %s", root, estr(errno));
	char *save = NULL, *name = strtok_r(rel, "/", &save);
	while (!err && t->fd >= 0 && name) {
		char *next = strtok_r(NULL, "/", &save);
		int dir = t->fd;
		buf_printf(&host, "/%s", name);
		err = open_step(dir, name, next || make == MAKE_DIR, make, buf_cstr(&host), &t->fd);
		close(dir);
		name = next;
	}
	if (t->fd >= 0)
		snprintf(t->path, sizeof t->path, "/proc/self/fd/%d", t->fd);
	free(rel);
	free(host.p);
	return err;
}

/* reopen_in_root opens what was mounted on container path p, which must
 * exist. */
static char *reopen_in_root(const char *root, const char *p, struct target *t)
{
	char *err = open_in_root(root, p, MAKE_NONE, t);
	if (!err && t->fd < 0)
		err = errf("reopening %s: %s", p, estr(ENOENT));
	return err;
}

static void close_target(struct target *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

/* A device node an unprivileged container gets, with the numbers Linux
 * gives it everywhere. */
static const struct {
	const char *name;
	unsigned major, minor;
} devices[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

static const struct {
	const char *link, *target;
} dev_links[] = {
    {"ptmx", "pts/ptmx"},          {"fd", "/proc/self/fd"},         {"stdin", "/proc/self/fd/0"},
    {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"},
};

/* mount_dev_privileged binds the host's /dev on the container's, open
 * as dev. */
static char *mount_dev_privileged(const char *root, const struct target *dev, const struct spec *sp)
{
	if (mount("/dev", dev->path, NULL, MS_BIND | MS_REC, NULL) < 0)
		return errf("mounting the host's /dev: %s", estr(errno));
	/* Still the pod's /dev/shm, shared with its other containers. */
	if (!*sp->shm)
		return NULL;
	struct target shm;
	char *err = reopen_in_root(root, "/dev/shm", &shm);
	if (!err && mount(sp->shm, shm.path, NULL, MS_BIND, NULL) < 0)
		err = errf("mounting /dev/shm: %s", estr(errno));
	close_target(&shm);
	return err;
}

/* mount_dev_dirs mounts /dev/pts, /dev/shm and /dev/mqueue in the fresh
 * /dev at dev. /dev/shm is the pod's when its containers share an IPC
 * namespace, the host's on the host's, else the container's own. A
 * fresh mqueue shows the queues of the IPC namespace the thread is in. */
static char *mount_dev_dirs(const char *dev, const struct spec *sp)
{
	const char *shm_source = "shm", *shm_type = "tmpfs", *shm_data = "mode=1777,size=65536k";
	if (*sp->shm) {
		shm_source = sp->shm;
		shm_type = NULL;
		shm_data = NULL;
	} else if (sp->host_ipc) {
		shm_source = "/dev/shm";
		shm_type = NULL;
		shm_data = NULL;
	}
	const struct {
		const char *dir, *source, *fstype, *data;
	} mounts[] = {
	    {"pts", "devpts", "devpts", "newinstance,ptmxmode=0666,mode=0620"},
	    {"shm", shm_source, shm_type, shm_data},
	    {"mqueue", "mqueue", "mqueue", NULL},
	};
	for (size_t i = 0; i < sizeof mounts / sizeof mounts[0]; i++) {
		char *target = path_join(dev, mounts[i].dir), *err = NULL;
		unsigned long flags = MS_NOSUID | MS_NOEXEC;
		if (!mounts[i].fstype)
			flags = MS_BIND;
		else if (strcmp(mounts[i].fstype, "devpts") != 0)
			flags |= MS_NODEV;
		if (mkdir(target, 0755) < 0)
			err = errf("mkdir /dev/%s: %s", mounts[i].dir, estr(errno));
		else if (mount(mounts[i].source, target, mounts[i].fstype, flags, mounts[i].data) < 0)
			err = errf("mounting /dev/%s: %s", mounts[i].dir, estr(errno));
		free(target);
		if (err)
			return err;
	}
	return NULL;
}

static char *mount_dev_nodes(const char *dev)
{
	/* Made, not bind mounted from the host: a node costs the kernel far
	 * less than a mount, which copies and locks the mount tree. */
	for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
		char *node = path_join(dev, devices[i].name);
		int rc = mknod(node, S_IFCHR | 0666, makedev(devices[i].major, devices[i].minor));
		free(node);
		if (rc < 0)
			return errf("making /dev/%s: %s", devices[i].name, estr(errno));
	}
	return NULL;
}

static char *mount_dev_links(const char *dev)
{
	for (size_t i = 0; i < sizeof dev_links / sizeof dev_links[0]; i++) {
		char *link = path_join(dev, dev_links[i].link);
		char *err = NULL;
		if (symlink(dev_links[i].target, link) < 0)
			err = errf("symlink %s /dev/%s: %s", dev_links[i].target, dev_links[i].link, estr(errno));
		free(link);
		if (err)
			return err;
	}
	return NULL;
}

/* mount_dev_tmpfs fills the fresh tmpfs mounted on /dev. */
static char *mount_dev_tmpfs(const char *root, const struct spec *sp)
{
	struct target dev;
	char *err = reopen_in_root(root, "/dev", &dev);
	if (err)
		return err;
	/* The umask is this thread's own since its unshare. */
	mode_t saved = umask(0);
	err = mount_dev_nodes(dev.path);
	if (!err)
		err = mount_dev_dirs(dev.path, sp);
	if (!err)
		err = mount_dev_links(dev.path);
	umask(saved);
	close_target(&dev);
	return err;
}

static char *mount_dev(const char *root, const struct spec *sp)
{
	struct target dev;
	char *err = open_in_root(root, "/dev", MAKE_DIR, &dev);
	if (err)
		return err;
	if (sp->privileged)
		err = mount_dev_privileged(root, &dev, sp);
	else if (mount("tmpfs", dev.path, "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k") < 0)
		err = errf("mounting /dev: %s", estr(errno));
	close_target(&dev);
	if (!err && !sp->privileged)
		err = mount_dev_tmpfs(root, sp);
	return err;
}

char *remount_readonly(const char *path, const char *name)
{
	struct statfs st;
	if (statfs(path, &st) < 0)
		return errf("statfs %s: %s", name, estr(errno));
	if (mount("", path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | ((unsigned long)st.f_flags & REMOUNT_KEEP), NULL) < 0)
		return errf("remounting %s read-only: %s", name, estr(errno));
	return NULL;
}

/* remount_readonly_in makes the mount at container path p read-only. */
static char *remount_readonly_in(const char *root, const char *p)
{
	struct target t;
	char *err = reopen_in_root(root, p, &t);
	if (!err)
		err = remount_readonly(t.path, p);
	close_target(&t);
	return err;
}

static char *mount_sys(const char *root, const struct spec *sp)
{
	struct target t;
	char *err = open_in_root(root, "/sys", MAKE_DIR, &t);
	if (err)
		return err;
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (!sp->privileged)
		flags |= MS_RDONLY;
	/* A fresh sysfs shows the network devices of the container's own
	 * namespace; for pods on the host network, the host's. The host's
	 * /sys instead is bound without what is mounted below it (cgroups,
	 * debugfs...), but for a privileged container: a read-only remount
	 * covers only the top mount. */
	int fresh = mount("sysfs", t.path, "sysfs", flags, NULL) == 0;
	if (!fresh && mount("/sys", t.path, NULL, sp->privileged ? MS_BIND | MS_REC : MS_BIND, NULL) < 0)
		err = errf("mounting /sys: %s", estr(errno));
	close_target(&t);
	if (!err && !fresh && !sp->privileged)
		err = remount_readonly_in(root, "/sys");
	return err;
}

/* has_mount says whether a CRI mount targets the container path p. */
static int has_mount(const struct spec *sp, const char *p)
{
	for (size_t i = 0; i < sp->nmounts; i++) {
		const char *t = sp->mounts[i].target;
		char *rooted = errf("/%s", t), *clean = path_clean(rooted);
		size_t n = strlen(t);
		if (n > 0 && t[n - 1] == '/')
			n--;
		int match = strcmp(clean, p) == 0 || (strlen(p) == n && strncmp(t, p, n) == 0);
		free(rooted);
		free(clean);
		if (match)
			return 1;
	}
	return 0;
}

/* mount_etc_files bind mounts the sandbox's hosts, hostname and
 * resolv.conf, unless the kubelet mounts its own. */
static char *mount_etc_files(const char *root, const struct spec *sp)
{
	static const char *const files[] = {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		if (!*sp->etc_dir || has_mount(sp, files[i]))
			continue;
		char *src = path_join(sp->etc_dir, path_base(files[i]));
		struct stat st;
		struct target t = {.fd = -1};
		char *err = NULL;
		if (stat(src, &st) == 0 && !(err = open_in_root(root, files[i], MAKE_FILE, &t)) &&
		    mount(src, t.path, NULL, MS_BIND, NULL) < 0)
			err = errf("mounting %s: %s", files[i], estr(errno));
		free(src);
		close_target(&t);
		if (err)
			return err;
	}
	return NULL;
}

/* bind_volume bind mounts a volume's source on its target. */
static char *bind_volume(const char *root, const struct volume *m, int is_dir)
{
	struct target t;
	char *err = open_in_root(root, m->target, is_dir ? MAKE_DIR : MAKE_FILE, &t);
	if (err) {
		char *wrapped = errf("volume for %s: %s", m->target, err);
		free(err);
		return wrapped;
	}
	if (mount(m->source, t.path, NULL, MS_BIND | MS_REC, NULL) < 0)
		err = errf("mounting %s on %s: %s", m->source, m->target, estr(errno));
	close_target(&t);
	return err;
}

static char *mount_volume(const char *root, const struct volume *m)
{
	struct stat st;
	if (stat(m->source, &st) < 0)
		return errf("volume for %s: stat %s: %s", m->target, m->source, estr(errno));
	char *err = bind_volume(root, m, S_ISDIR(st.st_mode));
	if (err)
		return err;
	unsigned long prop = MS_PRIVATE;
	if (strcmp(m->propagation, "rslave") == 0)
		prop = MS_SLAVE;
	else if (strcmp(m->propagation, "rshared") == 0)
		prop = MS_SHARED;
	struct target t;
	if ((err = reopen_in_root(root, m->target, &t)))
		return err;
	if (mount("", t.path, NULL, MS_REC | prop, NULL) < 0)
		err = errf("setting propagation of %s: %s", m->target, estr(errno));
	close_target(&t);
	if (!err && m->readonly)
		err = remount_readonly_in(root, m->target);
	return err;
}

/* mount_volumes bind mounts the CRI mounts (volumes the kubelet prepared
 * on the host), in order, so that nested ones land on their parents. */
static char *mount_volumes(const char *root, const struct spec *sp)
{
	for (size_t i = 0; i < sp->nmounts; i++) {
		char *err = mount_volume(root, &sp->mounts[i]);
		if (err)
			return err;
	}
	return NULL;
}

/* mask_path hides the file or directory at container path p. */
static char *mask_path(const char *root, const char *p)
{
	struct target t;
	char *err = open_in_root(root, p, MAKE_NONE, &t);
	if (err || t.fd < 0)
		return err; /* nothing to hide */
	struct stat st;
	int rc = fstat(t.fd, &st);
	if (rc == 0 && S_ISDIR(st.st_mode))
		rc = mount("tmpfs", t.path, "tmpfs", MS_RDONLY, "size=0");
	else if (rc == 0)
		rc = mount("/dev/null", t.path, NULL, MS_BIND, NULL);
	if (rc < 0)
		err = errf("masking %s: %s", p, estr(errno));
	close_target(&t);
	return err;
}

/* readonly_path makes the file or directory at container path p
 * read-only, and all below it. */
static char *readonly_path(const char *root, const char *p)
{
	struct target t;
	char *err = open_in_root(root, p, MAKE_NONE, &t);
	if (err || t.fd < 0)
		return err;
	if (mount(t.path, t.path, NULL, MS_BIND | MS_REC, NULL) < 0)
		err = errf("binding %s: %s", p, estr(errno));
	close_target(&t);
	if (!err)
		err = remount_readonly_in(root, p);
	return err;
}

/* mask_paths hides sensitive kernel files and makes others read-only,
 * but for those in /proc, not mounted yet. */
static char *mask_paths(const char *root, const struct spec *sp)
{
	char *err = NULL;
	for (size_t i = 0; !err && i < sp->masked.n; i++)
		if (!in_proc(sp->masked.v[i]))
			err = mask_path(root, sp->masked.v[i]);
	for (size_t i = 0; !err && i < sp->readonly.n; i++)
		if (!in_proc(sp->readonly.v[i]))
			err = readonly_path(root, sp->readonly.v[i]);
	return err;
}

char *setup_rootfs(const char *dir, const char *root, const struct spec *sp)
{
	/* Slave: host mounts still propagate in (volumes asking for
	 * HostToContainer need it), nothing propagates out. */
	if (mount("", "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return errf("making / a slave mount: %s", estr(errno));
	if (sp->overlay) {
		char *upper = path_join(dir, "upper"), *work = path_join(dir, "work");
		char *opts = errf("lowerdir=%s,upperdir=%s,workdir=%s", sp->image_root, upper, work);
		int rc = mount("overlay", root, "overlay", 0, opts);
		int e = errno;
		free(upper);
		free(work);
		free(opts);
		if (rc < 0)
			return errf("mounting the root overlay: %s", estr(e));
	} else {
		char *copy = path_join(dir, "copy");
		int rc = mount(copy, root, NULL, MS_BIND | MS_REC, NULL);
		int e = errno;
		free(copy);
		if (rc < 0)
			return errf("mounting the root filesystem: %s", estr(e));
	}
	struct target proc;
	char *err = open_in_root(root, "/proc", MAKE_DIR, &proc);
	if (err) {
		char *wrapped = errf("making the mount point of /proc: %s", err);
		free(err);
		return wrapped;
	}
	close_target(&proc);
	char *(*steps[])(const char *, const struct spec *) = {mount_dev, mount_sys, mount_etc_files, mount_volumes,
							       mask_paths};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		if ((err = steps[i](root, sp)))
			return err;
	return NULL;
}
