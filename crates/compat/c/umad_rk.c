/*
 * Real-kernel differential test program: drives a Linux kernel's ib_umad GSI path through
 * libibumad, between two Soft-RoCE devices rxe0 and rxe1 (one port each, RoCE v2, LID 0) that
 * are connected by a veth pair inside a QEMU guest (see docs/real-kernel.md). Each argument
 * names a section to run, in order, within one process (`all` runs every section):
 *
 *   ports gsi rmpp satable unserved refusals userrmpp
 *
 * The program runs twice in the same boot, once on the system libibumad and once on the
 * drop-in (LD_LIBRARY_PATH), and the two transcripts (after the `LIB` line) must be identical.
 * So nothing that changes from run to run is printed: no GIDs or GUIDs (random veth MACs), no
 * timings, pointers, fds or raw TIDs (the kernel puts a global agent counter into the TID's
 * high 32 bits); only relations ("tid_hi nonzero", "same as request", "blocked>=0.5s yes") and
 * values the program chose itself.
 *
 * Every assertion prints one line, `  [ok] ...` or `  [FAIL] ...`; the last line is
 * `checks: N passed, M failed`, and the exit status is 1 if any check failed. Calls are printed
 * as in the other programs (compat.h): `call = value errno=...`.
 *
 * Each section opens its own ports and closes them (which unregisters what is left), so any
 * subset of the sections runs on its own.
 *
 * Build: cc -std=gnu11 -O1 -g -Wall -Wextra -o umad_rk umad_rk.c -libumad -ldl
 */
#include "compat.h"

#include <stdarg.h>
#include <time.h>

#define CA0 "rxe0"
#define CA1 "rxe1"
#define QP1_QKEY 0x80010000u
#define TMO 5000		/* receive timeout, ms: the guest CPU is emulated */
#define MAD_LEN 256
#define VENDOR_HDR 40		/* common 24 + RMPP 12 + reserved 1 + OUI 3 */
/* SA: common 24 + RMPP 12 + SM_Key 8 + AttributeOffset 2 + reserved 2 + ComponentMask 8 */
#define SA_HDR 56
#define RMPP_HDR_END 36		/* common 24 + RMPP 12 */

/* Methods. */
#define M_GET 0x01
#define M_SET 0x02
#define M_GETRESP 0x81
#define M_GETTABLE 0x12
#define M_GETTABLERESP 0x92

/* RMPP header (offset 24). */
#define RMPP_TYPE_DATA 1
#define RMPP_ACTIVE 0x1
#define RMPP_FIRST 0x2
#define RMPP_LAST 0x4

static const uint8_t OUI[3] = { 0x00, 0x14, 0x05 };
static const uint8_t zero12[12];

static int passed, failed;

/* Like compat.h's CALLD, but keeps the errno the call left in `last_errno` (the printf that
 * shows it could change errno). */
static int last_errno;
#define RCALL(var, expr, ...)                                                  \
	do {                                                                   \
		errno = ERRNO_SENTINEL;                                        \
		var = (expr);                                                  \
		last_errno = errno;                                            \
		printf(__VA_ARGS__);                                           \
		printf(" = %ld errno=%s\n", (long)(var), compat_errno(last_errno)); \
	} while (0)

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("  %s ", ok ? "[ok]" : "[FAIL]");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (ok)
		passed++;
	else
		failed++;
}

static const char *yesno(int b)
{
	return b ? "yes" : "no";
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- big-endian fields of a MAD ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t tid_hi(const uint8_t *m)
{
	return get32(m + 8);
}

static uint32_t tid_lo(const uint8_t *m)
{
	return get32(m + 12);
}

/* The 24-byte common MAD header; the TID's high half is left 0 (the kernel fills it in). */
static void mad_hdr(uint8_t *m, uint8_t cls, uint8_t cls_ver, uint8_t method, uint32_t tid,
		    uint16_t attr)
{
	m[0] = 1;		/* base version */
	m[1] = cls;
	m[2] = cls_ver;
	m[3] = method;
	put16(m + 4, 0);	/* status */
	put16(m + 6, 0);	/* class specific */
	put32(m + 8, 0);
	put32(m + 12, tid);
	put16(m + 16, attr);
	put16(m + 18, 0);
	put32(m + 20, 0);	/* attribute modifier */
}

static void rmpp_hdr(uint8_t *m, uint8_t type, uint8_t flags)
{
	m[24] = 1;		/* RMPP version */
	m[25] = type;
	m[26] = flags;		/* resp time 0, flags */
	m[27] = 0;		/* status */
	put32(m + 28, 0);	/* segment number: the kernel's */
	put32(m + 32, 0);	/* paylen: the kernel's */
}

/* paylen of the first segment as the kernel writes it: segments x 220 - pad. */
static uint32_t want_paylen(size_t hdr, size_t data)
{
	size_t seg = MAD_LEN - hdr, n = (data + seg - 1) / seg, pad = n * seg - data;

	return (uint32_t)(n * (MAD_LEN - RMPP_HDR_END) - pad);
}

static void show_rmpp(const uint8_t *m)
{
	printf("  rmpp: version=%u type=%u flags=0x%x status=%u seg=%u paylen=%u\n", m[24], m[25],
	       m[26] & 0x7, m[27], get32(m + 28), get32(m + 32));
}

/* The RMPP header of a reassembled message (or of its first segment): the first segment's,
 * DATA, Active|First, segment 1, paylen as the sender's kernel computed it. */
static void check_rmpp_first(const uint8_t *m, size_t hdr, size_t data)
{
	show_rmpp(m);
	check(m[24] == 1 && m[25] == RMPP_TYPE_DATA, "rmpp version=%u type=%u", m[24], m[25]);
	check((m[26] & 7) == (RMPP_ACTIVE | RMPP_FIRST), "rmpp flags=0x%x", m[26] & 7);
	check(get32(m + 28) == 1, "rmpp seg=%u", get32(m + 28));
	check(get32(m + 32) == want_paylen(hdr, data), "rmpp paylen=%u (want %u)", get32(m + 32),
	      want_paylen(hdr, data));
}

/* ---- data patterns ---- */

static uint8_t pat(size_t i, unsigned seed)
{
	return (uint8_t)(i + (i >> 8) * 7 + (i >> 16) * 13 + seed * 37);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(i, seed);
}

/* The first offset that breaks the pattern, or -1. */
static long bad_at(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(i, seed))
			return (long)i;
	return -1;
}

static void check_pattern(const char *what, const uint8_t *p, size_t n, unsigned seed)
{
	long b = bad_at(p, n, seed);

	if (b < 0)
		check(1, "%s: %zu data bytes, pattern intact", what, n);
	else
		check(0, "%s: %zu data bytes, pattern broken at offset %ld", what, n, b);
}

/* ---- ports, agents, addresses ---- */

struct gid {
	__be64 prefix, guid;	/* network order, as umad_get_port gives them */
};

static void set_mask(long *mask, int method)
{
	mask[method / (8 * (int)sizeof(long))] |= 1L << (method % (8 * (int)sizeof(long)));
}

static int open_port(const char *ca)
{
	int fd, e;

	errno = ERRNO_SENTINEL;
	fd = umad_open_port(ca, 1);
	e = errno;
	if (fd >= 0)
		printf("umad_open_port(\"%s\", 1) = fd errno=%s\n", ca, compat_errno(e));
	else
		printf("umad_open_port(\"%s\", 1) = %d errno=%s\n", ca, fd, compat_errno(e));
	check(fd >= 0, "%s port 1 opened", ca);
	return fd;
}

static void close_port(const char *ca, int fd)
{
	int r;

	if (fd < 0)
		return;
	RCALL(r, umad_close_port(fd), "umad_close_port(%s fd)", ca);
	check(r == 0, "%s port closed", ca);
}

static void unregister(const char *ca, int fd, int id)
{
	int r;

	if (fd < 0 || id < 0)
		return;
	RCALL(r, umad_unregister(fd, id), "%s umad_unregister(fd, %d)", ca, id);
	check(r == 0, "%s agent %d unregistered", ca, id);
}

static int port_gid(const char *ca, struct gid *g)
{
	umad_port_t p;
	int r;

	memset(&p, 0, sizeof(p));
	memset(g, 0, sizeof(*g));
	RCALL(r, umad_get_port(ca, 1, &p), "umad_get_port(\"%s\", 1, &p)", ca);
	check(r == 0, "GID of %s port 1 read", ca);
	if (r == 0) {
		g->prefix = p.gid_prefix;
		g->guid = p.port_guid;
		umad_release_port(&p);
	}
	return r;
}

/* Opens port 1 of both CAs and reads the GIDs asked for (g0 may be NULL): the start of every
 * two-port section. 0 when all of it worked. */
static int open_peers(int *fd0, int *fd1, struct gid *g0, struct gid *g1)
{
	*fd0 = open_port(CA0);
	*fd1 = open_port(CA1);
	if (*fd0 < 0 || *fd1 < 0)
		return -1;
	if (g0 && port_gid(CA0, g0))
		return -1;
	return port_gid(CA1, g1);
}

static int same_gid(const ib_mad_addr_t *a, const struct gid *g)
{
	return !memcmp(a->gid, &g->prefix, 8) && !memcmp(a->gid + 8, &g->guid, 8);
}

/* QP1, LID 0, the QP1 Q_Key, and a GRH to `g` (umad_set_grh copies the GID as it is, in
 * network order; only the flow label is taken in host order). */
static void set_dest(void *umad, const struct gid *g)
{
	ib_mad_addr_t a;

	umad_set_addr(umad, 0, 1, 0, (int)QP1_QKEY);
	memset(&a, 0, sizeof(a));
	memcpy(a.gid, &g->prefix, 8);
	memcpy(a.gid + 8, &g->guid, 8);
	a.hop_limit = 64;
	umad_set_grh(umad, &a);
	umad_set_pkey(umad, 0);
}

static uint8_t *new_umad(size_t len)
{
	uint8_t *p = umad_alloc(1, umad_size() + len);

	if (!p) {
		printf("out of memory\n");
		exit(2);
	}
	return p;
}

static int send_mad(const char *ca, int fd, int id, void *umad, int len, int tmo, int retries)
{
	int r;

	RCALL(r, umad_send(fd, id, umad, len, tmo, retries),
	      "%s umad_send(fd, %d, umad, %d, %d, %d)", ca, id, len, tmo, retries);
	check(r == 0, "%s sent %d bytes", ca, len);
	return r;
}

/* umad_recv with room for `room` bytes; prints the call, *length, and the header's status and
 * length fields when a MAD came. */
static int recv_mad(const char *ca, int fd, void *umad, int room, int *len, int tmo)
{
	int r;

	*len = room;
	RCALL(r, umad_recv(fd, umad, len, tmo), "%s umad_recv(fd, umad, &len=%d, %d)", ca, room,
	      tmo);
	printf("  len=%d\n", *len);
	return r;
}

/* The receive address that the kernel reports on RoCE. */
static void check_addr(void *umad, const char *peer, const struct gid *src)
{
	ib_mad_addr_t *a = umad_get_mad_addr(umad);
	int pk = umad_get_pkey(umad);

	check(a->grh_present == 1, "grh_present=%u", a->grh_present);
	check(be32toh(a->qpn) == 1, "qpn=%u (host order)", be32toh(a->qpn));
	check(be16toh(a->lid) == 0, "lid=%u", be16toh(a->lid));
	check(a->sl == 0, "sl=%u", a->sl);
	check(a->gid_index == 0, "gid_index=%u", a->gid_index);
	check(a->hop_limit == 64, "hop_limit=%u", a->hop_limit);
	check(a->traffic_class == 0, "traffic_class=%u", a->traffic_class);
	check(be32toh(a->flow_label) == 0, "flow_label=%u", be32toh(a->flow_label));
	check(pk == 0, "umad_get_pkey=%d", pk);
	check(same_gid(a, src), "source GID is %s's: %s", peer, yesno(same_gid(a, src)));
}

/* Nothing more is queued on `fd` (a short receive times out). */
static void check_quiet(const char *ca, int fd, int tmo)
{
	uint8_t *b = new_umad(MAD_LEN);
	int len, r;

	r = recv_mad(ca, fd, b, MAD_LEN, &len, tmo);
	check(r == -ETIMEDOUT, "%s: nothing more queued", ca);
	free(b);
}

/* ============================== ports ============================== */

static void check_port_attrs(const char *ca_name, const umad_ca_t *ca)
{
	const umad_port_t *p = ca->ports[1];

	check(ca->ports[0] == NULL && p != NULL, "%s ports[0]=%s ports[1]=%s", ca_name,
	      nullness(ca->ports[0]), nullness(p));
	if (!p)
		return;
	check(p->portnum == 1, "portnum=%d", p->portnum);
	check(!strcmp(p->ca_name, ca_name), "port ca_name=\"%s\"", p->ca_name);
	check(p->base_lid == 0, "base_lid=%u", p->base_lid);
	check(p->lmc == 0, "lmc=%u", p->lmc);
	check(p->sm_lid == 0, "sm_lid=%u", p->sm_lid);
	check(p->sm_sl == 0, "sm_sl=%u", p->sm_sl);
	check(p->state == 4, "state=%u", p->state);
	check(p->phys_state == 5, "phys_state=%u", p->phys_state);
	check(p->rate == 10, "rate=%u", p->rate);
	check(be32toh(p->capmask) == 0x00010000, "capmask=0x%08x (host order)",
	      be32toh(p->capmask));
	check(!strcmp(p->link_layer, "Ethernet"), "link_layer=\"%s\"", p->link_layer);
	check(p->pkeys_size == 1, "pkeys_size=%u", p->pkeys_size);
	if (p->pkeys && p->pkeys_size > 0)
		check(p->pkeys[0] == 0xffff, "pkeys[0]=0x%04x", p->pkeys[0]);
	else
		check(0, "pkeys=%s", nullness(p->pkeys));
	check(be64toh(p->gid_prefix) == 0xfe80000000000000ull, "gid_prefix == fe80:: %s",
	      yesno(be64toh(p->gid_prefix) == 0xfe80000000000000ull));
	check(p->port_guid == ca->node_guid, "port_guid == node_guid %s",
	      yesno(p->port_guid == ca->node_guid));
	check(ca->system_guid == ca->node_guid, "system_guid == node_guid %s",
	      yesno(ca->system_guid == ca->node_guid));
	check(p->port_guid != 0, "port_guid nonzero %s", yesno(p->port_guid != 0));
}

static void sec_ports(void)
{
	char cas[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
	const char *names[2] = { CA0, CA1 };
	umad_ca_t ca;
	int n, r, fd;
	size_t sz;

	RCALL(r, umad_init(), "umad_init()");
	check(r == 0, "umad_init");

	memset(cas, 0, sizeof(cas));
	RCALL(n, umad_get_cas_names(cas, UMAD_MAX_DEVICES), "umad_get_cas_names(cas, %d)",
	      UMAD_MAX_DEVICES);
	for (int i = 0; i < n && i < UMAD_MAX_DEVICES; i++)
		printf("  cas[%d]=\"%s\"\n", i, cas[i]);
	check(n == 2 && !strcmp(cas[0], CA0) && !strcmp(cas[1], CA1), "two CAs, rxe0 and rxe1");

	for (int k = 0; k < 2; k++) {
		memset(&ca, 0, sizeof(ca));
		RCALL(r, umad_get_ca(names[k], &ca), "umad_get_ca(\"%s\", &ca)", names[k]);
		check(r == 0, "%s found", names[k]);
		if (r)
			continue;
		check(!strcmp(ca.ca_name, names[k]), "ca_name=\"%s\"", ca.ca_name);
		check(ca.numports == 1, "numports=%d", ca.numports);
		check(ca.node_type == 1, "node_type=%u", ca.node_type);
		check(ca.fw_ver[0] == 0, "fw_ver=\"%s\"", ca.fw_ver);
		check(ca.ca_type[0] == 0, "ca_type=\"%s\"", ca.ca_type);
		check(ca.hw_ver[0] == 0, "hw_ver=\"%s\"", ca.hw_ver);
		check_port_attrs(names[k], &ca);
		RCALL(r, umad_release_ca(&ca), "umad_release_ca(&ca)");
		check(r == 0 && ca.ports[1] == NULL, "released, ports[1]=%s",
		      nullness(ca.ports[1]));
	}

	/* umad_size depends on whether an open port enabled pkey_index (the kernel always can). */
	sz = umad_size();
	printf("umad_size() = %zu (before umad_open_port in this section)\n", sz);
	fd = open_port(CA0);
	sz = umad_size();
	printf("umad_size() = %zu\n", sz);
	check(sz == 64, "umad_size()=%zu after umad_open_port", sz);
	close_port(CA0, fd);
}

/* ============================== gsi ============================== */

static void sec_gsi(void)
{
	long mask[16 / sizeof(long)] = { 0 };
	struct gid g0, g1;
	int fd0, fd1, id0 = -1, id1 = -1, r, len;
	uint8_t *req = NULL, *in = NULL, *resp = NULL, *back = NULL, *m;
	uint32_t hi = 0;

	if (open_peers(&fd0, &fd1, &g0, &g1))
		goto out;

	set_mask(mask, M_GET);
	set_mask(mask, M_SET);
	RCALL(id1, umad_register(fd1, 0x09, 1, 0, mask),
	      "%s umad_register(fd, 0x09, 1, 0, Get|Set)", CA1);
	check(id1 >= 0, "%s agent registered", CA1);
	RCALL(id0, umad_register(fd0, 0x09, 1, 0, NULL), "%s umad_register(fd, 0x09, 1, 0, NULL)",
	      CA0);
	check(id0 >= 0, "%s agent registered", CA0);
	if (id0 < 0 || id1 < 0)
		goto out;

	req = new_umad(MAD_LEN);
	m = umad_get_mad(req);
	mad_hdr(m, 0x09, 1, M_GET, 0x1001, 0x0010);
	fill(m + 24, MAD_LEN - 24, 1);
	RCALL(r, umad_set_addr(req, 0, 1, 0, (int)QP1_QKEY), "umad_set_addr(req, 0, 1, 0, 0x%x)",
	      QP1_QKEY);
	set_dest(req, &g1);
	if (send_mad(CA0, fd0, id0, req, MAD_LEN, TMO, 0))
		goto out;

	in = new_umad(MAD_LEN);
	r = recv_mad(CA1, fd1, in, MAD_LEN, &len, TMO);
	check(r == id1, "received by %s's agent %d", CA1, id1);
	if (r < 0)
		goto out;
	m = umad_get_mad(in);
	check(umad_status(in) == 0, "status=%d", umad_status(in));
	check(len == MAD_LEN, "length=%d", len);
	check_addr(in, CA0, &g0);
	check(m[1] == 0x09 && m[2] == 1 && m[3] == M_GET, "class=0x%02x version=%u method=0x%02x",
	      m[1], m[2], m[3]);
	check(get16(m + 16) == 0x0010, "attr_id=0x%04x", get16(m + 16));
	check(tid_lo(m) == 0x1001, "tid_lo=0x%08x", tid_lo(m));
	hi = tid_hi(m);
	check(hi != 0, "tid_hi nonzero %s", yesno(hi != 0));
	check_pattern("request", m + 24, MAD_LEN - 24, 1);

	/* The reply: the received address block as is, the method flipped. */
	resp = new_umad(MAD_LEN);
	memcpy(resp, in, umad_size() + MAD_LEN);
	m = umad_get_mad(resp);
	m[3] = M_GETRESP;
	fill(m + 24, MAD_LEN - 24, 2);
	if (send_mad(CA1, fd1, id1, resp, MAD_LEN, 0, 0))
		goto out;

	back = new_umad(MAD_LEN);
	r = recv_mad(CA0, fd0, back, MAD_LEN, &len, TMO);
	check(r == id0, "received by %s's agent %d", CA0, id0);
	if (r < 0)
		goto out;
	m = umad_get_mad(back);
	check(umad_status(back) == 0, "status=%d", umad_status(back));
	check(len == MAD_LEN, "length=%d", len);
	check_addr(back, CA1, &g1);
	check(m[3] == M_GETRESP, "method=0x%02x", m[3]);
	check(get16(m + 4) == 0, "mad status=0x%04x", get16(m + 4));
	check(tid_lo(m) == 0x1001, "tid_lo=0x%08x", tid_lo(m));
	check(tid_hi(m) == hi, "tid_hi same as request %s", yesno(tid_hi(m) == hi));
	check_pattern("response", m + 24, MAD_LEN - 24, 2);
	/* The response matched the request (no timeout report), and the reply sent with
	 * timeout 0 left nothing on rxe1. */
	check_quiet(CA0, fd0, 200);
	check_quiet(CA1, fd1, 200);

out:
	free(req);
	free(in);
	free(resp);
	free(back);
	unregister(CA0, fd0, id0);
	unregister(CA1, fd1, id1);
	close_port(CA0, fd0);
	close_port(CA1, fd1);
}

/* ============================== rmpp ============================== */

static void rmpp_one(int fd0, int id0, int fd1, int id1, const struct gid *g1, size_t size,
		     unsigned k)
{
	int total = (int)(VENDOR_HDR + size), r, len;
	uint32_t tid = 0x2000 + k, hi;
	uint8_t *req, *in, *resp, *m;

	printf("-- %zu data bytes --\n", size);
	req = new_umad((size_t)total);
	m = umad_get_mad(req);
	mad_hdr(m, 0x30, 1, M_SET, tid, 0x0020);
	rmpp_hdr(m, RMPP_TYPE_DATA, RMPP_ACTIVE);
	memcpy(m + 37, OUI, 3);
	fill(m + VENDOR_HDR, size, 10 + k);
	set_dest(req, g1);
	r = send_mad(CA0, fd0, id0, req, total, TMO, 0);
	free(req);
	if (r)
		return;

	/* Too small a buffer: -ENOSPC, *length = the whole message, which stays queued. */
	in = new_umad((size_t)total);
	r = recv_mad(CA1, fd1, in, MAD_LEN, &len, TMO);
	check(r == -ENOSPC && last_errno == ENOSPC, "room for %d: -ENOSPC", MAD_LEN);
	check(len == total, "*length set to %d (40 + %zu)", len, size);

	r = recv_mad(CA1, fd1, in, total, &len, TMO);
	check(r == id1, "received by %s's agent %d", CA1, id1);
	if (r < 0) {
		free(in);
		return;
	}
	m = umad_get_mad(in);
	check(umad_status(in) == 0, "status=%d", umad_status(in));
	check(len == total, "length=%d", len);
	check(m[1] == 0x30 && m[3] == M_SET, "class=0x%02x method=0x%02x", m[1], m[3]);
	check(tid_lo(m) == tid, "tid_lo=0x%08x", tid_lo(m));
	hi = tid_hi(m);
	check(hi != 0, "tid_hi nonzero %s", yesno(hi != 0));
	check_rmpp_first(m, VENDOR_HDR, size);
	check(!memcmp(m + 37, OUI, 3), "OUI %02x%02x%02x", m[37], m[38], m[39]);
	check_pattern("request", m + VENDOR_HDR, size, 10 + k);

	/* The answer: the address block and the headers copied, GetResp, a new RMPP header. */
	resp = new_umad((size_t)total);
	memcpy(resp, in, umad_size() + VENDOR_HDR);
	m = umad_get_mad(resp);
	m[3] = M_GETRESP;
	rmpp_hdr(m, RMPP_TYPE_DATA, RMPP_ACTIVE);
	fill(m + VENDOR_HDR, size, 20 + k);
	r = send_mad(CA1, fd1, id1, resp, total, 0, 0);
	free(resp);
	if (r) {
		free(in);
		return;
	}

	memset(in, 0, umad_size() + (size_t)total);
	r = recv_mad(CA0, fd0, in, total, &len, TMO);
	check(r == id0, "received by %s's agent %d", CA0, id0);
	if (r >= 0) {
		m = umad_get_mad(in);
		check(umad_status(in) == 0, "status=%d", umad_status(in));
		check(len == total, "length=%d", len);
		check(m[3] == M_GETRESP, "method=0x%02x", m[3]);
		check(tid_lo(m) == tid, "tid_lo=0x%08x", tid_lo(m));
		check(tid_hi(m) == hi, "tid_hi same as request %s", yesno(tid_hi(m) == hi));
		check_rmpp_first(m, VENDOR_HDR, size);
		check_pattern("response", m + VENDOR_HDR, size, 20 + k);
	}
	free(in);
}

static void sec_rmpp(void)
{
	static const size_t sizes[] = { 10 * 1024, 100 * 1024, 1024 * 1024 };
	long mask[16 / sizeof(long)] = { 0 };
	uint8_t oui[3];
	struct gid g1;
	int fd0, fd1, id0 = -1, id1 = -1;

	memcpy(oui, OUI, 3);
	if (open_peers(&fd0, &fd1, NULL, &g1))
		goto out;
	set_mask(mask, M_GET);
	set_mask(mask, M_SET);
	RCALL(id1, umad_register_oui(fd1, 0x30, 1, oui, mask),
	      "%s umad_register_oui(fd, 0x30, 1, 001405, Get|Set)", CA1);
	check(id1 >= 0, "%s agent registered", CA1);
	RCALL(id0, umad_register_oui(fd0, 0x30, 1, oui, NULL),
	      "%s umad_register_oui(fd, 0x30, 1, 001405, NULL)", CA0);
	check(id0 >= 0, "%s agent registered", CA0);
	if (id0 < 0 || id1 < 0)
		goto out;
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		rmpp_one(fd0, id0, fd1, id1, &g1, sizes[k], k);
	check_quiet(CA0, fd0, 200);
	check_quiet(CA1, fd1, 200);
out:
	unregister(CA0, fd0, id0);
	unregister(CA1, fd1, id1);
	close_port(CA0, fd0);
	close_port(CA1, fd1);
}

/* ============================== satable ============================== */

#define SA_RECORDS 200
#define SA_RECLEN 64

static void sec_satable(void)
{
	long mask[16 / sizeof(long)] = { 0 };
	struct gid g0, g1;
	int fd0, fd1, id0 = -1, id1 = -1, r, len, total = SA_HDR + SA_RECORDS * SA_RECLEN;
	uint8_t *req = NULL, *in = NULL, *resp = NULL, *back = NULL, *m;
	uint32_t hi = 0;

	if (open_peers(&fd0, &fd1, &g0, &g1))
		goto out;
	set_mask(mask, M_GETTABLE);
	RCALL(id1, umad_register(fd1, 0x03, 2, 1, mask),
	      "%s umad_register(fd, 0x03, 2, 1, GetTable)", CA1);
	check(id1 >= 0, "%s SA agent registered", CA1);
	RCALL(id0, umad_register(fd0, 0x03, 2, 1, NULL), "%s umad_register(fd, 0x03, 2, 1, NULL)",
	      CA0);
	check(id0 >= 0, "%s agent registered", CA0);
	if (id0 < 0 || id1 < 0)
		goto out;

	/* SubnAdmGetTable(NodeRecord), one MAD: the RMPP header is all zero but the version. */
	req = new_umad(MAD_LEN);
	m = umad_get_mad(req);
	mad_hdr(m, 0x03, 2, M_GETTABLE, 0x4001, 0x0011);
	rmpp_hdr(m, 0, 0);
	set_dest(req, &g1);
	if (send_mad(CA0, fd0, id0, req, MAD_LEN, TMO, 0))
		goto out;

	in = new_umad(MAD_LEN);
	r = recv_mad(CA1, fd1, in, MAD_LEN, &len, TMO);
	check(r == id1, "received by %s's agent %d", CA1, id1);
	if (r < 0)
		goto out;
	m = umad_get_mad(in);
	check(umad_status(in) == 0, "status=%d", umad_status(in));
	check(len == MAD_LEN, "length=%d", len);
	check(m[1] == 0x03 && m[2] == 2 && m[3] == M_GETTABLE,
	      "class=0x%02x version=%u method=0x%02x", m[1], m[2], m[3]);
	check(tid_lo(m) == 0x4001, "tid_lo=0x%08x", tid_lo(m));
	hi = tid_hi(m);
	check(hi != 0, "tid_hi nonzero %s", yesno(hi != 0));
	show_rmpp(m);
	/* The kernel copies only the 24-byte common header of a non-active MAD from a kernel-RMPP
	 * agent: the RMPP header (version 1 as sent) arrives all zero. */
	check(!memcmp(m + 24, zero12, 12), "rmpp header all zero: %s",
	      yesno(!memcmp(m + 24, zero12, 12)));
	check(same_gid(umad_get_mad_addr(in), &g0), "source GID is %s's: %s", CA0,
	      yesno(same_gid(umad_get_mad_addr(in), &g0)));

	/* GetTableResp: 200 records of 64 bytes, AttributeOffset 8 (8-byte words). */
	resp = new_umad((size_t)total);
	memcpy(resp, in, umad_size() + 24);
	m = umad_get_mad(resp);
	m[3] = M_GETTABLERESP;
	rmpp_hdr(m, RMPP_TYPE_DATA, RMPP_ACTIVE);
	put16(m + 44, SA_RECLEN / 8);
	for (int i = 0; i < SA_RECORDS; i++) {
		uint8_t *rec = m + SA_HDR + i * SA_RECLEN;

		fill(rec, SA_RECLEN, 40 + (unsigned)i);
		put16(rec, (uint16_t)i);
	}
	if (send_mad(CA1, fd1, id1, resp, total, 0, 0))
		goto out;

	back = new_umad(65536);
	r = recv_mad(CA0, fd0, back, 65536, &len, TMO);
	check(r == id0, "received by %s's agent %d", CA0, id0);
	if (r >= 0) {
		int good = 0, first_bad = -1, n = (len - SA_HDR) / SA_RECLEN;

		m = umad_get_mad(back);
		check(umad_status(back) == 0, "status=%d", umad_status(back));
		check(len == total, "length=%d", len);
		check(m[3] == M_GETTABLERESP, "method=0x%02x", m[3]);
		check(tid_lo(m) == 0x4001, "tid_lo=0x%08x", tid_lo(m));
		check(tid_hi(m) == hi, "tid_hi same as request %s", yesno(tid_hi(m) == hi));
		check_rmpp_first(m, SA_HDR, SA_RECORDS * SA_RECLEN);
		check(get16(m + 44) == 8, "AttributeOffset=%u", get16(m + 44));
		check(n == SA_RECORDS, "records=(len-56)/64=%d", n);
		for (int i = 0; i < n; i++) {
			const uint8_t *rec = m + SA_HDR + i * SA_RECLEN;
			int ok = get16(rec) == i;

			for (int j = 2; j < SA_RECLEN && ok; j++)
				ok = rec[j] == pat((size_t)j, 40 + (unsigned)i);
			if (ok)
				good++;
			else if (first_bad < 0)
				first_bad = i;
		}
		check(good == SA_RECORDS, "records intact: %d (first bad %d)", good, first_bad);
	}
	check_quiet(CA0, fd0, 200);
	check_quiet(CA1, fd1, 200);

out:
	free(req);
	free(in);
	free(resp);
	free(back);
	unregister(CA0, fd0, id0);
	unregister(CA1, fd1, id1);
	close_port(CA0, fd0);
	close_port(CA1, fd1);
}

/* ============================== unserved ============================== */

static void sec_unserved(void)
{
	struct gid g1;
	int fd0, fd1, ida = -1, ids = -1, r, len;
	uint8_t *req = NULL, *in = NULL, *m;
	double t;

	/* rxe1 is open but has no agent at all. */
	if (open_peers(&fd0, &fd1, NULL, &g1))
		goto out;
	RCALL(ida, umad_register(fd0, 0x0a, 1, 0, NULL), "%s umad_register(fd, 0x0a, 1, 0, NULL)",
	      CA0);
	check(ida >= 0, "%s agent registered", CA0);
	RCALL(ids, umad_register(fd0, 0x03, 2, 1, NULL), "%s umad_register(fd, 0x03, 2, 1, NULL)",
	      CA0);
	check(ids >= 0, "%s SA-class agent registered", CA0);
	if (ida < 0 || ids < 0)
		goto out;

	/* A Get nobody serves: the peer's kernel answers. */
	req = new_umad(MAD_LEN);
	in = new_umad(MAD_LEN);
	m = umad_get_mad(req);
	mad_hdr(m, 0x0a, 1, M_GET, 0x5001, 0x0010);
	fill(m + 24, MAD_LEN - 24, 3);
	set_dest(req, &g1);
	t = now();
	if (send_mad(CA0, fd0, ida, req, MAD_LEN, TMO, 0))
		goto out;
	r = recv_mad(CA0, fd0, in, MAD_LEN, &len, TMO);
	t = now() - t;
	check(r == ida, "received by %s's agent %d", CA0, ida);
	if (r >= 0) {
		m = umad_get_mad(in);
		check(umad_status(in) == 0, "status=%d", umad_status(in));
		check(len == MAD_LEN, "length=%d", len);
		check(m[1] == 0x0a && m[3] == M_GETRESP, "class=0x%02x method=0x%02x", m[1], m[3]);
		check(get16(m + 4) == 0x000c, "mad status=0x%04x (host order)", get16(m + 4));
		check(tid_lo(m) == 0x5001, "tid_lo=0x%08x", tid_lo(m));
		check(tid_hi(m) != 0, "tid_hi nonzero %s", yesno(tid_hi(m) != 0));
		check(t < 2.5, "answered in <2.5s (timeout 5s): %s", yesno(t < 2.5));
	}
	check_quiet(CA1, fd1, 100);

	/* A GetTable nobody serves: no answer, the send times out. */
	memset(req, 0, umad_size() + MAD_LEN);
	m = umad_get_mad(req);
	mad_hdr(m, 0x03, 2, M_GETTABLE, 0x5002, 0x0011);
	rmpp_hdr(m, 0, 0);
	set_dest(req, &g1);
	t = now();
	if (send_mad(CA0, fd0, ids, req, MAD_LEN, 200, 1))
		goto out;
	memset(in, 0, umad_size() + MAD_LEN);
	r = recv_mad(CA0, fd0, in, MAD_LEN, &len, TMO);
	t = now() - t;
	check(r == ids, "report for %s's agent %d", CA0, ids);
	if (r >= 0) {
		m = umad_get_mad(in);
		check(umad_status(in) == ETIMEDOUT, "umad_status=%d", umad_status(in));
		check(len == 24, "length=%d (the common header)", len);
		check(m[3] == M_GETTABLE && tid_lo(m) == 0x5002, "method=0x%02x tid_lo=0x%08x",
		      m[3], tid_lo(m));
		check(t >= 0.3, "took>=0.3s (200 ms x 2 tries): %s", yesno(t >= 0.3));
	}

out:
	free(req);
	free(in);
	unregister(CA0, fd0, ida);
	unregister(CA0, fd0, ids);
	close_port(CA0, fd0);
	close_port(CA1, fd1);
}

/* ============================== refusals ============================== */

static void sec_refusals(void)
{
	long mask[16 / sizeof(long)] = { 0 };
	uint8_t oui0[3] = { 0, 0, 0 };
	struct umad_reg_attr attr;
	uint32_t agent = 0xdeadbeef;
	struct gid g1, nowhere;
	int fd, id = -1, r, e;
	uint8_t *req = NULL, *m;
	double t;

	fd = open_port(CA0);
	if (fd < 0 || port_gid(CA1, &g1))
		goto out;
	set_mask(mask, M_GET);

	/* SMP classes need QP0, which RoCE does not have. */
	RCALL(r, umad_register(fd, 0x01, 1, 0, mask), "umad_register(fd, 0x01, 1, 0, Get)");
	e = last_errno;
	check(r < 0 && e == EPROTONOSUPPORT, "class 0x01 refused: EPROTONOSUPPORT");
	RCALL(r, umad_register(fd, 0x81, 1, 0, mask), "umad_register(fd, 0x81, 1, 0, Get)");
	e = last_errno;
	check(r < 0 && e == EPROTONOSUPPORT, "class 0x81 refused: EPROTONOSUPPORT");
	/* RMPP on a class without RMPP. */
	RCALL(r, umad_register(fd, 0x09, 1, 1, mask), "umad_register(fd, 0x09, 1, 1, Get)");
	e = last_errno;
	check(r < 0 && e == EINVAL, "class 0x09 with RMPP refused: EINVAL");
	/* A vendor range 2 class with OUI 0. */
	RCALL(r, umad_register_oui(fd, 0x30, 1, oui0, mask),
	      "umad_register_oui(fd, 0x30, 1, 000000, Get)");
	e = last_errno;
	check(r < 0 && e == EINVAL, "class 0x30 with OUI 0 refused: EINVAL");
	/* An unknown registration flag. */
	memset(&attr, 0, sizeof(attr));
	attr.mgmt_class = 0x30;
	attr.mgmt_class_version = 1;
	attr.flags = 0x80000000u;
	attr.oui = 0x001405;
	attr.rmpp_version = 1;
	RCALL(r, umad_register2(fd, &attr, &agent),
	      "umad_register2(fd, {0x30, 1, flags 0x80000000, 001405, rmpp 1}, &agent)");
	printf("  attr.flags=0x%x agent_id %s\n", attr.flags,
	       agent == 0xdeadbeef ? "untouched" : "written");
	check(r == EINVAL, "umad_register2 returns %d", r);
	check(attr.flags == 0, "attr.flags=0x%x afterwards", attr.flags);
	check(agent == 0xdeadbeef, "agent_id untouched %s", yesno(agent == 0xdeadbeef));

	/* Sends the kernel refuses. */
	RCALL(id, umad_register(fd, 0x09, 1, 0, NULL), "umad_register(fd, 0x09, 1, 0, NULL)");
	check(id >= 0, "agent registered");
	if (id < 0)
		goto out;
	req = new_umad(MAD_LEN);
	m = umad_get_mad(req);
	mad_hdr(m, 0x09, 1, M_GET, 0x6001, 0x0010);
	RCALL(r, umad_set_addr(req, 0, 1, 0, (int)QP1_QKEY), "umad_set_addr(req, 0, 1, 0, 0x%x)",
	      QP1_QKEY);
	RCALL(r, umad_set_grh(req, NULL), "umad_set_grh(req, NULL)");
	RCALL(r, umad_send(fd, id, req, MAD_LEN, 1000, 0),
	      "umad_send(fd, %d, req (no GRH), 256, 1000, 0)", id);
	e = last_errno;
	check(r < 0 && e == EINVAL, "no GRH on RoCE: rc=%d errno=%d", r, e);

	nowhere.prefix = htobe64(0xfe80000000000000ull);
	nowhere.guid = htobe64(0x000000fffe001234ull);
	set_dest(req, &nowhere);
	mad_hdr(m, 0x09, 1, M_GET, 0x6002, 0x0010);
	t = now();
	RCALL(r, umad_send(fd, id, req, MAD_LEN, 1000, 0),
	      "umad_send(fd, %d, req (GID fe80::ff:fe00:1234), 256, 1000, 0)", id);
	e = last_errno;
	t = now() - t;
	check(r < 0 && e == ETIMEDOUT, "unreachable GID: rc=%d errno=%d", r, e);
	check(t >= 0.5, "blocked>=0.5s %s", yesno(t >= 0.5));
	/* Neither failed write left a report. */
	check_quiet(CA0, fd, 300);

	/* The reachable peer still works after all that. */
	set_dest(req, &g1);
	mad_hdr(m, 0x09, 1, M_GET, 0x6003, 0x0010);
	if (!send_mad(CA0, fd, id, req, MAD_LEN, TMO, 0)) {
		int len;

		r = recv_mad(CA0, fd, req, MAD_LEN, &len, TMO);
		check(r == id, "answered");
		check(r >= 0 && get16(m + 4) == 0x000c && tid_lo(m) == 0x6003,
		      "kernel GetResp status=0x%04x tid_lo=0x%08x", get16(m + 4), tid_lo(m));
	}

out:
	free(req);
	unregister(CA0, fd, id);
	close_port(CA0, fd);
}

/* ============================== userrmpp ============================== */

static void sec_userrmpp(void)
{
	const size_t size = 10 * 1024;
	int total = (int)(VENDOR_HDR + size), fd0, fd1, id0 = -1, r, len;
	struct umad_reg_attr attr;
	uint32_t id1 = 0xdeadbeef;
	uint8_t oui[3], *req = NULL, *in = NULL, *m;
	struct gid g1;
	double t;

	memcpy(oui, OUI, 3);
	if (open_peers(&fd0, &fd1, NULL, &g1))
		goto out;
	memset(&attr, 0, sizeof(attr));
	attr.mgmt_class = 0x30;
	attr.mgmt_class_version = 1;
	attr.flags = UMAD_USER_RMPP;
	attr.method_mask[0] = 1ull << M_SET;
	attr.oui = 0x001405;
	attr.rmpp_version = 1;
	RCALL(r, umad_register2(fd1, &attr, &id1),
	      "%s umad_register2(fd, {0x30, 1, UMAD_USER_RMPP, Set, 001405, rmpp 1}, &id)", CA1);
	printf("  agent_id=%u attr.flags=0x%x\n", id1, attr.flags);
	check(r == 0, "%s user-RMPP agent registered", CA1);
	check(attr.flags == UMAD_USER_RMPP, "attr.flags=0x%x afterwards", attr.flags);
	if (r) {
		id1 = 0xdeadbeef;
		goto out;
	}
	RCALL(id0, umad_register_oui(fd0, 0x30, 1, oui, NULL),
	      "%s umad_register_oui(fd, 0x30, 1, 001405, NULL)", CA0);
	check(id0 >= 0, "%s kernel-RMPP agent registered", CA0);
	if (id0 < 0)
		goto out;

	req = new_umad((size_t)total);
	m = umad_get_mad(req);
	mad_hdr(m, 0x30, 1, M_SET, 0x7001, 0x0020);
	rmpp_hdr(m, RMPP_TYPE_DATA, RMPP_ACTIVE);
	memcpy(m + 37, OUI, 3);
	fill(m + VENDOR_HDR, size, 30);
	set_dest(req, &g1);
	t = now();
	if (send_mad(CA0, fd0, id0, req, total, 300, 0))
		goto out;

	/* The receiver gets the first segment as it came off the wire. */
	in = new_umad((size_t)total);
	r = recv_mad(CA1, fd1, in, total, &len, TMO);
	check(r == (int)id1, "received by %s's agent %u", CA1, id1);
	if (r >= 0) {
		m = umad_get_mad(in);
		check(umad_status(in) == 0, "status=%d", umad_status(in));
		check(len == MAD_LEN, "length=%d (one raw segment)", len);
		check(m[3] == M_SET && tid_lo(m) == 0x7001, "method=0x%02x tid_lo=0x%08x", m[3],
		      tid_lo(m));
		check_rmpp_first(m, VENDOR_HDR, size);
		check_pattern("segment 1", m + VENDOR_HDR, MAD_LEN - VENDOR_HDR, 30);
	}

	/* Nobody ACKs: the sender's kernel RMPP gives up. */
	memset(in, 0, umad_size() + (size_t)total);
	r = recv_mad(CA0, fd0, in, total, &len, TMO);
	t = now() - t;
	check(r == id0, "report for %s's agent %d", CA0, id0);
	if (r >= 0) {
		m = umad_get_mad(in);
		check(umad_status(in) == ETIMEDOUT, "umad_status=%d", umad_status(in));
		check(len == 24, "length=%d (the common header)", len);
		check(m[3] == M_SET && tid_lo(m) == 0x7001, "method=0x%02x tid_lo=0x%08x", m[3],
		      tid_lo(m));
		check(t >= 0.25, "took>=0.25s (timeout 300 ms): %s", yesno(t >= 0.25));
	}
	check_quiet(CA1, fd1, 200);

out:
	free(req);
	free(in);
	unregister(CA0, fd0, id0);
	if (id1 != 0xdeadbeef)
		unregister(CA1, fd1, (int)id1);
	close_port(CA0, fd0);
	close_port(CA1, fd1);
}

static const struct {
	const char *name;
	void (*fn)(void);
} SECTIONS[] = {
	{ "ports", sec_ports },
	{ "gsi", sec_gsi },
	{ "rmpp", sec_rmpp },
	{ "satable", sec_satable },
	{ "unserved", sec_unserved },
	{ "refusals", sec_refusals },
	{ "userrmpp", sec_userrmpp },
};

#define NSECTIONS (sizeof(SECTIONS) / sizeof(SECTIONS[0]))

int main(int argc, char **argv)
{
	compat_start();
	for (int i = 1; i < argc; i++) {
		unsigned k;

		if (!strcmp(argv[i], "all")) {
			for (k = 0; k < NSECTIONS; k++) {
				printf("== %s ==\n", SECTIONS[k].name);
				SECTIONS[k].fn();
			}
			continue;
		}
		for (k = 0; k < NSECTIONS; k++)
			if (!strcmp(argv[i], SECTIONS[k].name))
				break;
		if (k == NSECTIONS) {
			fprintf(stderr, "unknown section %s\n", argv[i]);
			return 2;
		}
		printf("== %s ==\n", argv[i]);
		SECTIONS[k].fn();
	}
	printf("== end ==\n");
	printf("checks: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
