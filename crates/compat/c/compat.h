/*
 * Shared helpers of the libibumad differential test programs (crates/compat/c).
 *
 * Every program prints a deterministic transcript: one line per call with the call's text, its
 * return value and errno, followed by the visible effects (struct contents, buffer bytes).
 * stderr is merged into stdout (dup2) and stdout is unbuffered, so libibumad's own `ibwarn:`
 * lines appear in the transcript exactly where they were emitted.
 *
 * The first line is always `LIB <path>`: the file that `umad_size` was resolved from
 * (dladdr), so the Rust side can prove which libibumad.so.3 answered. Pointer values are never
 * printed (only NULL / non-NULL); the Rust side masks pids and pointers inside libibumad's own
 * messages.
 */
#ifndef UMADRS_COMPAT_H
#define UMADRS_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_str.h>
#include <infiniband/umad_types.h>

/* errno is set to this before every call, so "untouched" is visible. */
#define ERRNO_SENTINEL 4242

static inline const char *compat_errno(int e)
{
	static char buf[64];
	const char *name;

	if (e == ERRNO_SENTINEL)
		return "untouched";
	if (e == 0)
		return "0";
	name = strerrorname_np(e);
	snprintf(buf, sizeof(buf), "%d(%s)", e, name ? name : "?");
	return buf;
}

/* Evaluates `expr` (an integer expression) with errno = sentinel, stores it in `var` and prints
 * "<expr> = <value> errno=<errno>". */
#define CALL(var, expr)                                                        \
	do {                                                                   \
		errno = ERRNO_SENTINEL;                                        \
		var = (expr);                                                  \
		int e_ = errno;                                                \
		printf("%s = %ld errno=%s\n", #expr, (long)(var),              \
		       compat_errno(e_));                                      \
	} while (0)

/* Like CALL, but prints the call as described by a printf format (for calls in loops, where
 * the expression text would only show variable names):
 * CALLD(r, umad_get_ca(name, &ca), "umad_get_ca(%s, &ca)", qname(name)). */
#define CALLD(var, expr, ...)                                                  \
	do {                                                                   \
		errno = ERRNO_SENTINEL;                                        \
		var = (expr);                                                  \
		int e_ = errno;                                                \
		printf(__VA_ARGS__);                                           \
		printf(" = %ld errno=%s\n", (long)(var), compat_errno(e_));    \
	} while (0)

/* Same for a call whose value is not needed afterwards. */
#define CALLV(expr)                                                            \
	do {                                                                   \
		long v_;                                                       \
		CALL(v_, expr);                                                \
	} while (0)

/* A void call: prints "<expr> errno=<errno>". */
#define CALL_VOID(expr)                                                        \
	do {                                                                   \
		errno = ERRNO_SENTINEL;                                        \
		expr;                                                          \
		int e_ = errno;                                                \
		printf("%s errno=%s\n", #expr, compat_errno(e_));              \
	} while (0)

/* A call returning a string (or NULL). */
#define CALL_STR(expr)                                                         \
	do {                                                                   \
		const char *s_ = (expr);                                       \
		printf("%s = %s%s%s\n", #expr, s_ ? "\"" : "",                 \
		       s_ ? s_ : "NULL", s_ ? "\"" : "");                      \
	} while (0)

/* Prints `n` bytes as text: printable ASCII as is, everything else as \xNN. */
static inline void show_bytes(const char *label, const void *p, size_t n)
{
	const unsigned char *b = p;

	printf("  %s=\"", label);
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '"' || b[i] == '\\')
			printf("\\%c", b[i]);
		else if (isprint(b[i]))
			putchar(b[i]);
		else
			printf("\\x%02x", b[i]);
	}
	printf("\"\n");
}

/* A C string field of a struct: up to the first NUL, then how many bytes follow it that are
 * not the fill byte (so both "was it NUL-terminated" and "was the tail touched" show). */
static inline void show_field(const char *label, const char *p, size_t n)
{
	size_t len = strnlen(p, n);

	printf("  %s=\"", label);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		if (isprint(c) && c != '"' && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	printf("\"%s", len == n ? " (unterminated)" : "");
	if (len < n) {
		printf(" tail=");
		for (size_t i = len + 1; i < n; i++)
			printf("%02x", (unsigned char)p[i]);
	}
	printf("\n");
}

/* Hex dump, 16 bytes a line, with offsets. */
static inline void hexdump(const char *label, const void *p, size_t n)
{
	const unsigned char *b = p;

	printf("  %s (%zu bytes):\n", label, n);
	for (size_t i = 0; i < n; i += 16) {
		printf("    %04zx:", i);
		for (size_t j = i; j < i + 16 && j < n; j++)
			printf(" %02x", b[j]);
		printf("\n");
	}
}

static inline const char *nullness(const void *p)
{
	return p ? "non-NULL" : "NULL";
}

static inline void dump_port(const char *indent, const umad_port_t *p)
{
	printf("%sport:\n", indent);
	show_field("ca_name", p->ca_name, sizeof(p->ca_name));
	printf("  portnum=%d base_lid=%u lmc=%u sm_lid=%u sm_sl=%u state=%u phys_state=%u rate=%u\n",
	       p->portnum, p->base_lid, p->lmc, p->sm_lid, p->sm_sl, p->state, p->phys_state,
	       p->rate);
	printf("  capmask(be)=0x%08x gid_prefix(be)=0x%016llx port_guid(be)=0x%016llx\n",
	       be32toh(p->capmask), (unsigned long long)be64toh(p->gid_prefix),
	       (unsigned long long)be64toh(p->port_guid));
	printf("  pkeys_size=%u pkeys=%s\n", p->pkeys_size, nullness(p->pkeys));
	if (p->pkeys) {
		printf("  pkeys:");
		for (unsigned i = 0; i < p->pkeys_size && i < 64; i++)
			printf(" %04x", p->pkeys[i]);
		printf("\n");
	}
	show_field("link_layer", p->link_layer, sizeof(p->link_layer));
}

static inline void dump_ca(const umad_ca_t *ca)
{
	printf("  ca:\n");
	show_field("ca_name", ca->ca_name, sizeof(ca->ca_name));
	printf("  node_type=%u numports=%d\n", ca->node_type, ca->numports);
	show_field("fw_ver", ca->fw_ver, sizeof(ca->fw_ver));
	show_field("ca_type", ca->ca_type, sizeof(ca->ca_type));
	show_field("hw_ver", ca->hw_ver, sizeof(ca->hw_ver));
	printf("  node_guid(be)=0x%016llx system_guid(be)=0x%016llx\n",
	       (unsigned long long)be64toh(ca->node_guid),
	       (unsigned long long)be64toh(ca->system_guid));
	for (int i = 0; i < UMAD_CA_MAX_PORTS; i++) {
		if (!ca->ports[i])
			continue;
		printf("  ports[%d]: ", i);
		dump_port("", ca->ports[i]);
	}
}

/* Which ports[] entries are non-NULL (after a failure or a release). */
static inline void show_ports_nullness(const umad_ca_t *ca)
{
	printf("  numports=%d ports:", ca->numports);
	for (int i = 0; i < UMAD_CA_MAX_PORTS; i++)
		printf(" %s", ca->ports[i] ? "P" : "-");
	printf("\n");
}

/* `struct umad_ca_pair` of rdma-core >= 56 (not in the Debian 44.0 headers). */
struct compat_ca_pair {
	char smi_name[UMAD_CA_NAME_LEN];
	uint32_t smi_preferred_port;
	char gsi_name[UMAD_CA_NAME_LEN];
	uint32_t gsi_preferred_port;
};

static inline void dump_pair(const char *label, const struct compat_ca_pair *p)
{
	printf("  %s:\n", label);
	show_field("smi_name", p->smi_name, sizeof(p->smi_name));
	printf("  smi_preferred_port=%u\n", p->smi_preferred_port);
	show_field("gsi_name", p->gsi_name, sizeof(p->gsi_name));
	printf("  gsi_preferred_port=%u\n", p->gsi_preferred_port);
}

/* Unbuffered stdout, stderr merged into it, and the `LIB <path>` line. */
static inline void compat_start(void)
{
	Dl_info info;
	void *sym;

	setvbuf(stdout, NULL, _IONBF, 0);
	dup2(1, 2);
	sym = dlsym(RTLD_DEFAULT, "umad_size");
	if (sym && dladdr(sym, &info) && info.dli_fname)
		printf("LIB %s\n", info.dli_fname);
	else
		printf("LIB ?\n");
}

/* Resolves a symbol that the Debian 44.0 library does not have (HEAD-only API). */
static inline void *head_sym(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);

	if (!p)
		printf("%s: absent\n", name);
	return p;
}

#endif
