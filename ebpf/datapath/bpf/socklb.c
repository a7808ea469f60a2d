// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Socket-level load balancing for Service addresses.
 *
 * The programs run in the cgroup hooks of the socket system calls, so a
 * connect() to a Service address:port is rewritten to a backend before the
 * kernel routes anything: there is no per-packet NAT and no conntrack entry.
 * recvmsg() and getpeername() translate the backend back to the Service
 * address, so applications only ever see the address they asked for.
 *
 * Addresses are stored as 16 bytes, IPv4 in its v4-mapped form
 * (::ffff:a.b.c.d), so the IPv4 and IPv6 hooks share every map, and an IPv6
 * dual-stack socket that connects to ::ffff:<ClusterIP> is balanced too.
 *
 * Map layout (see the Go side in ebpf/datapath for how it is written):
 *
 *   cairn_svc       {addr, port, proto, slot 0}  -> master: count, svc_id, flags
 *                   {addr, port, proto, slot n}  -> backend_id   (1 <= n <= count)
 *   cairn_backends  backend_id                   -> {addr, port, owner svc_id}
 *   cairn_revnat    {socket cookie, backend}     -> Service {addr, port}
 *   cairn_affinity  {netns cookie, svc_id}       -> backend_id, last use
 *
 * The writer adds backends, then slots, then the master count, and only
 * then removes stale slots and backends, so a lookup here never follows a
 * slot to a missing entry except during that last step; the fallback to
 * slot 1 covers it.
 */
#include "api.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define SVC_FLAG_AFFINITY 0x1
#define NSEC_PER_SEC 1000000000ULL

struct svc_key {
	__u32 addr[4];
	__be16 port;
	__u16 slot;
	__u8 proto;
	__u8 pad[3];
};

struct svc_value {
	__u32 backend_id;       /* slots 1..count */
	__u32 svc_id;           /* slot 0 */
	__u16 count;            /* slot 0: number of backend slots */
	__u16 flags;            /* slot 0: SVC_FLAG_* */
	__u32 affinity_timeout; /* slot 0: seconds */
};

struct backend {
	__u32 addr[4];
	__be16 port;
	__u8 pad[2];
	__u32 svc_id; /* owner: an affinity entry is only trusted for its own service */
};

struct revnat_key {
	__u64 cookie;
	__u32 addr[4];
	__be16 port;
	__u8 pad[6];
};

struct revnat_value {
	__u32 addr[4];
	__be16 port;
	__u8 pad[2];
};

struct affinity_key {
	__u64 netns_cookie;
	__u32 svc_id;
	__u32 pad;
};

struct affinity_value {
	__u64 last_used_ns;
	__u32 backend_id;
	__u32 pad;
};

/* Sizes are defaults; the loader may change max_entries before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct svc_key);
	__type(value, struct svc_value);
	__uint(max_entries, 65536);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cairn_svc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct backend);
	__uint(max_entries, 65536);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cairn_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct revnat_key);
	__type(value, struct revnat_value);
	__uint(max_entries, 262144);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cairn_revnat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct affinity_key);
	__type(value, struct affinity_value);
	__uint(max_entries, 65536);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cairn_affinity SEC(".maps");

/*
 * refuse_with_errno selects ECONNREFUSED over the default EPERM for a
 * Service without backends. bpf_set_retval() reached cgroup sock_addr
 * programs in Linux 6.1; the loader clears this on older kernels and the
 * verifier then drops the call as dead code.
 */
volatile const __u8 refuse_with_errno = 1;

static __always_inline int refuse(void)
{
	if (refuse_with_errno)
		bpf_set_retval(-ECONNREFUSED);
	return 0;
}

static __always_inline struct backend *
affinity_lookup(struct affinity_key *akey, __u64 now, __u64 timeout_ns,
		__u32 *backend_id)
{
	struct affinity_value *aval;
	struct backend *be;

	aval = bpf_map_lookup_elem(&cairn_affinity, akey);
	if (!aval || now - aval->last_used_ns > timeout_ns)
		return 0;
	*backend_id = aval->backend_id;
	be = bpf_map_lookup_elem(&cairn_backends, backend_id);
	/* The backend may have left the service, and its id be reused. */
	if (!be || be->svc_id != akey->svc_id)
		return 0;
	aval->last_used_ns = now;
	return be;
}

/*
 * select_backend returns the backend for the Service at key, or 0 when key
 * is not a Service (*refused stays 0) or has no backend (*refused = 1).
 */
static __always_inline struct backend *
select_backend(struct bpf_sock_addr *ctx, struct svc_key *key, int *refused)
{
	struct affinity_key akey;
	struct svc_value *svc, *slot;
	struct backend *be;
	__u32 count, svc_id, backend_id = 0;
	__u64 now = 0, timeout_ns = 0;
	__u16 flags;

	svc = bpf_map_lookup_elem(&cairn_svc, key);
	if (!svc)
		return 0;
	count = svc->count;
	svc_id = svc->svc_id;
	flags = svc->flags;
	timeout_ns = (__u64)svc->affinity_timeout * NSEC_PER_SEC;
	if (count == 0) {
		*refused = 1;
		return 0;
	}

	if (flags & SVC_FLAG_AFFINITY) {
		__builtin_memset(&akey, 0, sizeof(akey));
		/* A pod is a network namespace: its cookie stands for the client. */
		akey.netns_cookie = bpf_get_netns_cookie(ctx);
		akey.svc_id = svc_id;
		now = bpf_ktime_get_ns();
		be = affinity_lookup(&akey, now, timeout_ns, &backend_id);
		if (be)
			return be;
	}

	/* UDP keeps one backend per socket so a datagram flow stays together. */
	if (key->proto == IPPROTO_UDP)
		key->slot = (bpf_get_socket_cookie(ctx) % count) + 1;
	else
		key->slot = (bpf_get_prandom_u32() % count) + 1;
	slot = bpf_map_lookup_elem(&cairn_svc, key);
	if (!slot) {
		key->slot = 1;
		slot = bpf_map_lookup_elem(&cairn_svc, key);
	}
	key->slot = 0;
	if (!slot) {
		*refused = 1;
		return 0;
	}
	backend_id = slot->backend_id;
	be = bpf_map_lookup_elem(&cairn_backends, &backend_id);
	if (!be) {
		*refused = 1;
		return 0;
	}

	if (flags & SVC_FLAG_AFFINITY) {
		struct affinity_value aval = {
			.last_used_ns = now,
			.backend_id = backend_id,
		};
		bpf_map_update_elem(&cairn_affinity, &akey, &aval, BPF_ANY);
	}
	return be;
}

/* record_revnat remembers, per socket, which Service a backend stands for. */
static __always_inline void
record_revnat(struct bpf_sock_addr *ctx, const struct svc_key *key,
	      const struct backend *be)
{
	struct revnat_key rkey;
	struct revnat_value rval, *old;

	__builtin_memset(&rkey, 0, sizeof(rkey));
	__builtin_memset(&rval, 0, sizeof(rval));
	rkey.cookie = bpf_get_socket_cookie(ctx);
	__builtin_memcpy(rkey.addr, be->addr, sizeof(rkey.addr));
	rkey.port = be->port;
	__builtin_memcpy(rval.addr, key->addr, sizeof(rval.addr));
	rval.port = key->port;

	/*
	 * Unconnected UDP sockets come here per datagram: skip identical
	 * writes. A TCP socket connects once, so its lookup would always miss.
	 */
	if (key->proto == IPPROTO_UDP) {
		old = bpf_map_lookup_elem(&cairn_revnat, &rkey);
		if (old && old->port == rval.port &&
		    old->addr[0] == rval.addr[0] && old->addr[1] == rval.addr[1] &&
		    old->addr[2] == rval.addr[2] && old->addr[3] == rval.addr[3])
			return;
	}
	bpf_map_update_elem(&cairn_revnat, &rkey, &rval, BPF_ANY);
}

static __always_inline int supported_proto(__u32 proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP;
}

static __always_inline int is_v4mapped(const __u32 *addr)
{
	return addr[0] == 0 && addr[1] == 0 && addr[2] == bpf_htonl(0x0000ffff);
}

static __always_inline void key4(struct bpf_sock_addr *ctx, struct svc_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->addr[2] = bpf_htonl(0x0000ffff);
	key->addr[3] = ctx->user_ip4;
	key->port = (__be16)ctx->user_port;
	key->proto = (__u8)ctx->protocol;
}

static __always_inline void key6(struct bpf_sock_addr *ctx, struct svc_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->addr[0] = ctx->user_ip6[0];
	key->addr[1] = ctx->user_ip6[1];
	key->addr[2] = ctx->user_ip6[2];
	key->addr[3] = ctx->user_ip6[3];
	key->port = (__be16)ctx->user_port;
	key->proto = (__u8)ctx->protocol;
}

static __always_inline int xlate4(struct bpf_sock_addr *ctx)
{
	struct svc_key key;
	struct backend *be;
	int refused = 0;

	if (!supported_proto(ctx->protocol))
		return 1;
	key4(ctx, &key);
	be = select_backend(ctx, &key, &refused);
	if (!be)
		return refused ? refuse() : 1;
	if (!is_v4mapped(be->addr))
		return refuse();
	ctx->user_ip4 = be->addr[3];
	ctx->user_port = be->port;
	record_revnat(ctx, &key, be);
	return 1;
}

static __always_inline int xlate6(struct bpf_sock_addr *ctx)
{
	struct svc_key key;
	struct backend *be;
	int refused = 0;

	if (!supported_proto(ctx->protocol))
		return 1;
	key6(ctx, &key);
	be = select_backend(ctx, &key, &refused);
	if (!be)
		return refused ? refuse() : 1;
	ctx->user_ip6[0] = be->addr[0];
	ctx->user_ip6[1] = be->addr[1];
	ctx->user_ip6[2] = be->addr[2];
	ctx->user_ip6[3] = be->addr[3];
	ctx->user_port = be->port;
	record_revnat(ctx, &key, be);
	return 1;
}

static __always_inline void revnat4(struct bpf_sock_addr *ctx)
{
	struct revnat_key rkey;
	struct revnat_value *rval;

	__builtin_memset(&rkey, 0, sizeof(rkey));
	rkey.cookie = bpf_get_socket_cookie(ctx);
	rkey.addr[2] = bpf_htonl(0x0000ffff);
	rkey.addr[3] = ctx->user_ip4;
	rkey.port = (__be16)ctx->user_port;
	rval = bpf_map_lookup_elem(&cairn_revnat, &rkey);
	if (!rval || !is_v4mapped(rval->addr))
		return;
	ctx->user_ip4 = rval->addr[3];
	ctx->user_port = rval->port;
}

static __always_inline void revnat6(struct bpf_sock_addr *ctx)
{
	struct revnat_key rkey;
	struct revnat_value *rval;

	__builtin_memset(&rkey, 0, sizeof(rkey));
	rkey.cookie = bpf_get_socket_cookie(ctx);
	rkey.addr[0] = ctx->user_ip6[0];
	rkey.addr[1] = ctx->user_ip6[1];
	rkey.addr[2] = ctx->user_ip6[2];
	rkey.addr[3] = ctx->user_ip6[3];
	rkey.port = (__be16)ctx->user_port;
	rval = bpf_map_lookup_elem(&cairn_revnat, &rkey);
	if (!rval)
		return;
	ctx->user_ip6[0] = rval->addr[0];
	ctx->user_ip6[1] = rval->addr[1];
	ctx->user_ip6[2] = rval->addr[2];
	ctx->user_ip6[3] = rval->addr[3];
	ctx->user_port = rval->port;
}

SEC("cgroup/connect4")
int cairn_connect4(struct bpf_sock_addr *ctx)
{
	return xlate4(ctx);
}

SEC("cgroup/sendmsg4")
int cairn_sendmsg4(struct bpf_sock_addr *ctx)
{
	return xlate4(ctx);
}

SEC("cgroup/recvmsg4")
int cairn_recvmsg4(struct bpf_sock_addr *ctx)
{
	revnat4(ctx);
	return 1;
}

SEC("cgroup/getpeername4")
int cairn_getpeername4(struct bpf_sock_addr *ctx)
{
	revnat4(ctx);
	return 1;
}

SEC("cgroup/connect6")
int cairn_connect6(struct bpf_sock_addr *ctx)
{
	return xlate6(ctx);
}

SEC("cgroup/sendmsg6")
int cairn_sendmsg6(struct bpf_sock_addr *ctx)
{
	return xlate6(ctx);
}

SEC("cgroup/recvmsg6")
int cairn_recvmsg6(struct bpf_sock_addr *ctx)
{
	revnat6(ctx);
	return 1;
}

SEC("cgroup/getpeername6")
int cairn_getpeername6(struct bpf_sock_addr *ctx)
{
	revnat6(ctx);
	return 1;
}

char __license[] SEC("license") = "Dual BSD/GPL";
