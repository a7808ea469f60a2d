/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The few kernel UAPI definitions the socket load balancer needs.
 *
 * They are spelled out here instead of including <linux/bpf.h> so that the
 * objects build from the same input on every host: the system headers pull
 * in architecture-specific <asm/...> files that a -target bpf build cannot
 * find without host-dependent include paths. The layouts are kernel ABI and
 * never change.
 */
#ifndef CAIRN_API_H
#define CAIRN_API_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u32 __wsum;

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define ECONNREFUSED 111

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_LRU_HASH = 9,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

/* enum bpf_func_id values are only needed by bpf_helper_defs.h as constants. */
#define __bpf_md_ptr(type, name) \
	union {                  \
		type name;       \
		__u64 : 64;      \
	} __attribute__((aligned(8)))

struct bpf_sock;

/* struct bpf_sock_addr is the context of cgroup/{connect,sendmsg,recvmsg,getpeername}{4,6}. */
struct bpf_sock_addr {
	__u32 user_family;
	__u32 user_ip4;
	__u32 user_ip6[4];
	__u32 user_port;
	__u32 family;
	__u32 type;
	__u32 protocol;
	__u32 msg_src_ip4;
	__u32 msg_src_ip6[4];
	__bpf_md_ptr(struct bpf_sock *, sk);
};

#endif
