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
#include <limits.h>
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

/* resolve_in returns the host path of p inside the tree at root,
 * following symlinks as if root were "/": absolute links and ".." never
 * leave root. Components that do not exist yet are kept as they are.
 * It is the Go rootfs.ResolveIn. */
char *resolve_in(const char *root, const char *p, char **out)
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
		resolved.len = target.p[0] == '/' ? 0 : before;
		buf_add(&target, "/", 1);
		buf_add(&target, pending.p, pending.len);
		free(pending.p);
		pending = target;
	}
	if (!err)
		*out = path_join(root, buf_cstr(&resolved));
	free(resolved.p);
	free(pending.p);
	return err;
}

/* mkdir_all is Go's os.MkdirAll. */
static char *mkdir_all(const char *path, mode_t mode)
{
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return NULL;
		return errf("mkdir %s: %s", path, estr(ENOTDIR));
	}
	char *parent = path_dir(path);
	char *err = strcmp(parent, path) != 0 ? mkdir_all(parent, mode) : NULL;
	free(parent);
	if (err)
		return err;
	if (mkdir(path, mode) < 0) {
		int e = errno;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return NULL;
		return errf("mkdir %s: %s", path, estr(e));
	}
	return NULL;
}

/* in_root resolves a container path to a host path inside root, making
 * it as a directory or an empty file if missing. */
static char *in_root(const char *root, const char *p, int dir, char **out)
{
	char *target, *err = resolve_in(root, p, &target);
	if (err)
		return err;
	if (dir) {
		err = mkdir_all(target, 0755);
	} else {
		char *parent = path_dir(target);
		err = mkdir_all(parent, 0755);
		free(parent);
		struct stat st;
		if (!err && stat(target, &st) < 0 && errno == ENOENT) {
			int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0)
				err = errf("open %s: %s", target, estr(errno));
			else
				close(fd);
		}
	}
	if (err)
		free(target);
	else
		*out = target;
	return err;
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

static char *mount_dev_privileged(const char *dev, const struct spec *sp)
{
	if (mount("/dev", dev, NULL, MS_BIND | MS_REC, NULL) < 0)
		return errf("mounting the host's /dev: %s", estr(errno));
	/* Still the pod's /dev/shm, shared with its other containers. */
	if (*sp->shm) {
		char *shm = path_join(dev, "shm");
		int rc = mount(sp->shm, shm, NULL, MS_BIND, NULL);
		free(shm);
		if (rc < 0)
			return errf("mounting /dev/shm: %s", estr(errno));
	}
	return NULL;
}

/* mount_dev_dirs mounts /dev/pts, /dev/shm and /dev/mqueue. /dev/shm is
 * the pod's when its containers share an IPC namespace, the host's on
 * the host's, else the container's own. A fresh mqueue shows the queues
 * of the IPC namespace the thread is in. */
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
		char *target = path_join(dev, mounts[i].dir);
		char *err = mkdir_all(target, 0755);
		unsigned long flags = MS_NOSUID | MS_NOEXEC;
		if (!mounts[i].fstype)
			flags = MS_BIND;
		else if (strcmp(mounts[i].fstype, "devpts") != 0)
			flags |= MS_NODEV;
		if (!err && mount(mounts[i].source, target, mounts[i].fstype, flags, mounts[i].data) < 0)
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
			err = errf("symlink %s %s: %s", dev_links[i].target, link, estr(errno));
		free(link);
		if (err)
			return err;
	}
	return NULL;
}

static char *mount_dev(const char *root, const struct spec *sp)
{
	char *dev, *err = in_root(root, "/dev", 1, &dev);
	if (err)
		return err;
	if (sp->privileged) {
		err = mount_dev_privileged(dev, sp);
	} else if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k") < 0) {
		err = errf("mounting /dev: %s", estr(errno));
	} else {
		/* The umask is this thread's own since its unshare. */
		mode_t saved = umask(0);
		err = mount_dev_nodes(dev);
		if (!err)
			err = mount_dev_dirs(dev, sp);
		if (!err)
			err = mount_dev_links(dev);
		umask(saved);
	}
	free(dev);
	return err;
}

char *remount_readonly(const char *target)
{
	struct statfs st;
	if (statfs(target, &st) < 0)
		return errf("statfs %s: %s", target, estr(errno));
	/* A read-only remount of a bind mount must keep the flags the source
	 * mount has (nosuid, nodev...), or the kernel refuses it. */
	unsigned long keep = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME;
	if (mount("", target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | ((unsigned long)st.f_flags & keep), NULL) < 0)
		return errf("remounting %s read-only: %s", target, estr(errno));
	return NULL;
}

static char *mount_sys(const char *root, const struct spec *sp)
{
	char *target, *err = in_root(root, "/sys", 1, &target);
	if (err)
		return err;
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (!sp->privileged)
		flags |= MS_RDONLY;
	/* A fresh sysfs shows the network devices of the container's own
	 * namespace; for pods on the host network, the host's. */
	if (mount("sysfs", target, "sysfs", flags, NULL) < 0) {
		if (mount("/sys", target, NULL, MS_BIND | MS_REC, NULL) < 0)
			err = errf("mounting /sys: %s", estr(errno));
		else if (!sp->privileged)
			err = remount_readonly(target);
	}
	free(target);
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
		char *target = NULL, *err = NULL;
		if (stat(src, &st) == 0 && !(err = in_root(root, files[i], 0, &target)) &&
		    mount(src, target, NULL, MS_BIND, NULL) < 0)
			err = errf("mounting %s: %s", files[i], estr(errno));
		free(src);
		free(target);
		if (err)
			return err;
	}
	return NULL;
}

static char *mount_volume(const char *root, const struct volume *m)
{
	struct stat st;
	if (stat(m->source, &st) < 0)
		return errf("volume for %s: stat %s: %s", m->target, m->source, estr(errno));
	char *target, *err = in_root(root, m->target, S_ISDIR(st.st_mode), &target);
	if (err) {
		char *wrapped = errf("volume for %s: %s", m->target, err);
		free(err);
		return wrapped;
	}
	unsigned long prop = MS_PRIVATE;
	if (strcmp(m->propagation, "rslave") == 0)
		prop = MS_SLAVE;
	else if (strcmp(m->propagation, "rshared") == 0)
		prop = MS_SHARED;
	if (mount(m->source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
		err = errf("mounting %s on %s: %s", m->source, m->target, estr(errno));
	else if (mount("", target, NULL, MS_REC | prop, NULL) < 0)
		err = errf("setting propagation of %s: %s", m->target, estr(errno));
	else if (m->readonly)
		err = remount_readonly(target);
	free(target);
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

/* mask_paths hides sensitive kernel files and makes others read-only,
 * but for those in /proc, not mounted yet. */
static char *mask_paths(const char *root, const struct spec *sp)
{
	for (size_t i = 0; i < sp->masked.n; i++) {
		const char *p = sp->masked.v[i];
		if (in_proc(p))
			continue;
		char *target, *err = resolve_in(root, p, &target);
		if (err)
			return err;
		struct stat st;
		int rc = 0;
		if (stat(target, &st) == 0) {
			if (S_ISDIR(st.st_mode))
				rc = mount("tmpfs", target, "tmpfs", MS_RDONLY, "size=0");
			else
				rc = mount("/dev/null", target, NULL, MS_BIND, NULL);
		}
		free(target);
		if (rc < 0)
			return errf("masking %s: %s", p, estr(errno));
	}
	for (size_t i = 0; i < sp->readonly.n; i++) {
		const char *p = sp->readonly.v[i];
		if (in_proc(p))
			continue;
		char *target, *err = resolve_in(root, p, &target);
		if (err)
			return err;
		struct stat st;
		if (stat(target, &st) == 0) {
			if (mount(target, target, NULL, MS_BIND | MS_REC, NULL) < 0)
				err = errf("binding %s: %s", p, estr(errno));
			else
				err = remount_readonly(target);
		}
		free(target);
		if (err)
			return err;
	}
	return NULL;
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
	char *proc, *err = in_root(root, "/proc", 1, &proc);
	if (err) {
		char *wrapped = errf("making the mount point of /proc: %s", err);
		free(err);
		return wrapped;
	}
	free(proc);
	char *(*steps[])(const char *, const struct spec *) = {mount_dev, mount_sys, mount_etc_files, mount_volumes,
							       mask_paths};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		if ((err = steps[i](root, sp)))
			return err;
	return NULL;
}
