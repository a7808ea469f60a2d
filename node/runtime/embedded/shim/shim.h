/*
 * The container shim of the embedded runtime (see doc.go of the Go
 * package helper for its contract with the agent): a small static C
 * program, as every container start runs it once and a Go process costs
 * several milliseconds of CPU just to start.
 *
 * Functions that can fail return NULL or an error message (malloc'd,
 * worded as Go words errors, errno texts in lower case: the agent shows
 * them to users, and its tests match some).
 */
#ifndef SHIM_H
#define SHIM_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* From linux/close_range.h, which a C library's headers need not carry. */
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* buf.c: growable buffers, strings and paths. */

struct buf {
	char *p;
	size_t len, cap;
};

void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void buf_add(struct buf *b, const void *p, size_t n);
void buf_str(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* buf_cstr NUL-terminates the buffer and returns its bytes. */
char *buf_cstr(struct buf *b);
void buf_consume(struct buf *b, size_t n);
char *errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* estr is errno e as Go words it: strerror, lower case. */
const char *estr(int e);
/* sigstr is signal sig as Go words it. */
const char *sigstr(int sig);
char *path_clean(const char *p);
char *path_join(const char *a, const char *b);
char *path_dir(const char *p);
const char *path_base(const char *p);
int has_prefix(const char *s, const char *prefix);
/* read_file reads the whole file at path; the error is Go's os.ReadFile's. */
char *read_file(const char *path, struct buf *out);
int64_t now_ns(void);
/* write_all writes all of p, retrying short writes and EINTR. */
int write_all(int fd, const void *p, size_t n);

/* json.c: a strict JSON reader. */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype t;
	int b;
	/* s holds a string's bytes, or a number's text. */
	char *s;
	size_t slen;
	/* An array's items, an object's values and keys. */
	struct jval *items;
	char **keys;
	size_t n;
};

/* json_parse leaves nothing to free when it fails. */
char *json_parse(const char *text, size_t len, struct jval *out);
void json_free(struct jval *v);
/* json_get returns an object's last member of name, or NULL. */
const struct jval *json_get(const struct jval *obj, const char *name);
char *json_bool(const struct jval *v, const char *name, int *out);
char *json_str(const struct jval *v, const char *name, char **out);
char *json_int(const struct jval *v, const char *name, int64_t min, int64_t max, int64_t *out);
char *json_uint(const struct jval *v, const char *name, uint64_t max, uint64_t *out);
void json_escape(struct buf *b, const char *s);
/* json_error_line adds the agent's one-line error answer, {"error":...}. */
void json_error_line(struct buf *b, const char *error);

/* spec.c: the container's spec.json. */

struct strv {
	/* v is NULL-terminated. */
	char **v;
	size_t n;
};

struct volume {
	char *source, *target, *propagation;
	int readonly;
};

/* The cgroup v1 controllers a container is placed in, in the order of
 * cgroups.V1Controllers. */
enum { CG_MEMORY, CG_CPU, CG_CPUACCT, CG_PIDS, CG_V1 };

struct cgroup_paths {
	/* v1 are the directories per controller, v2 the cgroup2 one; NULL
	 * where there is none. */
	char *v1[CG_V1];
	char *v2;
};

struct spec {
	char *id, *cwd, *hostname, *etc_dir, *netns, *image_root, *log_path;
	char *ipcns, *shm;
	struct strv args, env, masked, readonly;
	uint32_t uid, gid;
	uint32_t *groups;
	size_t ngroups;
	int overlay, readonly_rootfs, privileged, no_new_privs;
	struct volume *mounts;
	size_t nmounts;
	int *caps;
	size_t ncaps;
	struct cgroup_paths cg;
	int64_t oom_score_adj;
	int stdin_, stdin_once, tty, host_pid, host_ipc;
	/* pidns_pid, when not 0, is the process whose PID namespace the
	 * container joins, started at pidns_start. */
	int pidns_pid;
	uint64_t pidns_start;
};

char *spec_read(const char *dir, struct spec *sp);
/* in_proc says whether container path p is /proc or under it. */
int in_proc(const char *p);
/* proc_paths returns the paths of ps in /proc, cleaned. */
struct strv proc_paths(const struct strv *ps);

/* state.c: the container's state.json, and /proc. */

struct state {
	int shim_pid, pid;
	uint64_t shim_start, pid_start;
	int running, socket_reopen_only;
	int64_t started_at, finished_at;
	int32_t exit_code;
	const char *reason;
	char *message;
	int log_reopens;
};

#define REASON_COMPLETED "Completed"
#define REASON_ERROR "Error"
#define REASON_OOMKILLED "OOMKilled"
#define REASON_STARTERROR "StartError"

char *state_write(const char *dir, const struct state *st);
/* proc_start_time is field 22 of /proc/PID/stat; 0 if pid is gone. */
uint64_t proc_start_time(int pid);

/* cgroups.c */

/* cgroup_procs_files returns the cgroup.procs files of every hierarchy. */
struct strv cgroup_procs_files(const struct cgroup_paths *cg);
int cgroup_oom_kills(const struct cgroup_paths *cg);
char *cgroup_kill_all(const struct cgroup_paths *cg, int timeout_ms);

/* mounts.c: the container's filesystem. */

char *setup_rootfs(const char *dir, const char *root, const struct spec *sp);
/* remount_readonly makes the bind mount at path read-only; name is the
 * path errors give. */
char *remount_readonly(const char *path, const char *name);
/* REMOUNT_KEEP are the flags a read-only remount of a bind mount must
 * repeat from its source mount (nosuid, nodev...), or the kernel refuses
 * it or drops them. */
#define REMOUNT_KEEP (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME)

/* launch.c: the container's first process. */

struct launch {
	const char *dir;
	const struct spec *sp;
	/* The process's stdin, stdout and stderr; ignored with a tty. */
	int stdio[3];
	int *cgroup_fds;
	size_t ncgroup;
	int fail_fd;
	/* Filled in: the process, and the terminal's master with a tty. */
	pid_t pid;
	int master;
};

char *launch(struct launch *l);
char *look_path(const char *name, const struct strv *env, char **out);

/* child.c: the container's process between its fork and its exec. */

struct child_plan {
	int *cgroup_fds;
	size_t ncgroup;
	int fail_fd;
	/* oom_score_adj as text, or NULL to keep the shim's. */
	char *oom_score_adj;
	int stdio[3];
	int tty;
	struct strv masked, readonly;
	uint32_t *groups;
	size_t ngroups;
	uint32_t uid, gid;
	char *path;
	char **argv, **envp;
};

/* The record a child writes on its failure pipe: the step, the index of
 * the path or signal for the steps that loop, and the errno. */
#define CHILD_FAILURE_SIZE 8

int child_main(void *plan);
char *child_failure_describe(const unsigned char *f, const struct spec *sp);

/* The signals the shim ignores, and those its child resets to default. */
extern int reset_signals[64];
extern size_t nreset_signals;

/* log.c: the CRI log. */

#define MAX_LOG_LINE (16 * 1024)

struct cri_log {
	const char *path;
	int fd;
};

char *log_open(struct cri_log *l, const char *path);
char *log_reopen(struct cri_log *l);
void log_write(struct cri_log *l, const char *stream, int partial, const char *line, size_t n);

/* attach.c and io.c: the container's stdio, and attached clients. */

enum frame_kind {
	FRAME_STDIN = 1,
	FRAME_STDIN_CLOSE = 2,
	FRAME_RESIZE = 3,
	FRAME_STDOUT = 4,
	FRAME_STDERR = 5,
	FRAME_EXIT = 6,
};

/* A frame queued to attached clients, shared by those it goes to. */
struct frame {
	int refs;
	size_t len;
	char data[];
};

/* ATTACH_QUEUE is how many frames may wait for one client (each at most
 * a pipe or terminal read, some kilobytes). */
#define ATTACH_QUEUE 256

struct client {
	int fd;
	/* attached is set past the handshake; closing once the exit frame
	 * is queued: the client is closed when its queue is sent. */
	int attached, closing;
	int want_stdin, want_stdout, want_stderr, want_tty, reopen_log;
	/* stdin_open says the client may still write to the container. */
	int stdin_open;
	/* in holds what the client sent and was not handled yet. */
	struct buf in;
	struct frame *queue[ATTACH_QUEUE];
	size_t head, queued, sent;
	/* owed has bit kind set while the output of kind waits for room in
	 * the queue (see struct output). */
	unsigned owed;
	/* deadline bounds the handshake. */
	int64_t deadline;
	struct client *next;
};

/* One output of the container, to log and to attach. */
struct output {
	int fd;
	const char *stream;
	enum frame_kind kind;
	/* line holds the start of a line not yet logged. */
	char line[MAX_LOG_LINE];
	size_t len;
	/* pending is output that clients with full queues are owed: the
	 * output is not read again until they took it, or until
	 * pending_since plus the grace, when they are dropped. */
	struct frame *pending;
	int64_t pending_since;
};

struct shim {
	const char *dir;
	struct spec sp;
	struct state st;
	struct cri_log log;
	/* The report pipe to the agent, -1 once sent. */
	int report_fd;
	/* The container's process, and a pidfd that polls its exit. */
	pid_t pid;
	int pidfd, exited, code;
	struct output out[2];
	size_t nout;
	/* in is where attached clients' input goes: the stdin pipe or the
	 * terminal's master; -1 without stdin. term is the master. */
	int in, term;
	struct buf inq;
	/* in_closed is set once the stdin closed for good (StdinOnce);
	 * close_in closes the pipe once inq is written. */
	int in_closed, close_in;
	int listen_fd;
	/* accept_after is when to take clients again after the shim ran
	 * out of descriptors (see ACCEPT_PAUSE). */
	int64_t accept_after;
	/* usr1_fd is a signalfd of SIGUSR1, which reopens the log when
	 * there is no attach socket to ask on; -1 otherwise. */
	int usr1_fd;
	struct client *clients;
	int attached;
};

/* ATTACH_SOCKET is the socket in the container's directory. */
#define ATTACH_SOCKET "attach.sock"

char *attach_listen(const char *dir, int *fd);
void attach_unlink(const char *dir);
void attach_accept(struct shim *s);
void attach_read(struct shim *s, struct client *c);
void attach_write(struct shim *s, struct client *c);
/* attach_handle handles what a client sent, as far as the container's
 * stdin takes it. */
void attach_handle(struct shim *s, struct client *c);
int attach_has_frame(const struct client *c);
void attach_drop(struct shim *s, struct client *c);
void attach_broadcast(struct shim *s, struct output *o, const char *p, size_t n);
/* attach_deliver gives clients the pending output they have room for. */
void attach_deliver(struct shim *s);
void attach_expire(struct shim *s, int64_t now);
void attach_shutdown(struct shim *s, int code);
char *shim_reopen_log(struct shim *s);

/* start.c */

char *start_container(struct shim *s);

/* serve runs the shim's poll loop until done says so or deadline (0 for
 * none) passes. */
void serve(struct shim *s, int (*done)(const struct shim *), int64_t deadline);
void io_write_stdin(struct shim *s);
/* reap waits for the container's process and records its exit code. */
void reap(struct shim *s);
void io_close(struct shim *s);

/* The attach server's grace for a client whose queue is full, and its
 * bound on a handshake, in nanoseconds. */
#define ATTACH_GRACE (250 * 1000000LL)
#define ATTACH_HANDSHAKE (10 * 1000000000LL)
/* ACCEPT_PAUSE is how long the shim takes no client once out of
 * descriptors, in nanoseconds. */
#define ACCEPT_PAUSE (100 * 1000000LL)

#endif
