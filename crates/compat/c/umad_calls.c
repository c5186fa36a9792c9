/*
 * Differential test program: calls every libibumad function with ordinary and error inputs and
 * prints a deterministic transcript (see compat.h). Each argument names a section to run, in
 * order, within one process (so process-global state such as the header layout flag or the
 * debug level carries over from one section to the next):
 *
 *   init cas portguids ca port issm devlist sort open addr dump sendrecv register debug str head
 *   simio simreg simmany
 *
 * The sections up to `head` run anywhere (with no IB device at all or under umad2sim); the
 * `sim*` sections need a umad device (umad2sim + ibsim).
 *
 * Build: cc -o umad_calls umad_calls.c -libumad -ldl
 */
#include "compat.h"

static const char *const NAMES[] = { NULL, "", "nosuchca", "ibsim0", "mthca0" };

static const char *qname(const char *s)
{
	static char buf[2][64];
	static int k;

	k ^= 1;
	if (!s)
		return "NULL";
	snprintf(buf[k], sizeof(buf[k]), "\"%s\"", s);
	return buf[k];
}

static void sec_init(void)
{
	CALLV(umad_init());
	CALLV(umad_init());
	CALLV(umad_done());
	CALLV(umad_done());
}

static void sec_cas(void)
{
	char cas[UMAD_MAX_DEVICES + 1][UMAD_CA_NAME_LEN];
	int maxes[] = { -1, 0, 1, 2, UMAD_MAX_DEVICES };

	for (unsigned k = 0; k < sizeof(maxes) / sizeof(maxes[0]); k++) {
		int max = maxes[k], n;

		memset(cas, 'X', sizeof(cas));
		CALLD(n, umad_get_cas_names(cas, max), "umad_get_cas_names(cas, %d)", max);
		for (int i = 0; i < n && i < UMAD_MAX_DEVICES; i++)
			show_field("name", cas[i], UMAD_CA_NAME_LEN);
		/* Slots the call should not have written. */
		show_bytes("cas[0]", cas[0], UMAD_CA_NAME_LEN);
		show_bytes("cas[n]", cas[n >= 0 && n <= UMAD_MAX_DEVICES ? n : 0], 4);
	}
}

static void sec_portguids(void)
{
	__be64 g[16];
	struct {
		const char *name;
		int array;
		int max;
	} cases[] = {
		{ NULL, 1, 16 }, { NULL, 1, 2 }, { NULL, 1, 1 }, { NULL, 1, 0 }, { NULL, 1, -1 },
		{ NULL, 0, 16 }, { NULL, 0, 0 }, { "nosuchca", 1, 16 }, { "nosuchca", 0, 0 },
		{ "", 1, 16 }, { "ibsim0", 1, 16 }, { "ibsim0", 1, 1 }, { "ibsim0", 0, 16 },
	};

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int n;

		memset(g, 0xAA, sizeof(g));
		CALLD(n,
		      umad_get_ca_portguids(cases[k].name, cases[k].array ? g : NULL,
					    cases[k].max),
		      "umad_get_ca_portguids(%s, %s, %d)", qname(cases[k].name),
		      cases[k].array ? "g" : "NULL", cases[k].max);
		printf("  guids:");
		for (int i = 0; i < (n > 0 ? n : 0) + 1 && i < 16; i++)
			printf(" %016llx", (unsigned long long)be64toh(g[i]));
		printf("\n");
	}
}

static void sec_ca(void)
{
	umad_ca_t ca;
	int r;

	for (unsigned k = 0; k < sizeof(NAMES) / sizeof(NAMES[0]); k++) {
		memset(&ca, 0x5a, sizeof(ca));
		CALLD(r, umad_get_ca(NAMES[k], &ca), "umad_get_ca(%s, &ca)", qname(NAMES[k]));
		if (r == 0) {
			dump_ca(&ca);
			CALLV(umad_release_ca(&ca));
			show_ports_nullness(&ca);
		} else {
			/* The visible partial state after a failure. */
			show_field("ca_name", ca.ca_name, sizeof(ca.ca_name));
			show_ports_nullness(&ca);
		}
	}
	memset(&ca, 0, sizeof(ca));
	CALLV(umad_release_ca(&ca));
	CALLV(umad_release_ca(NULL));
}

static void sec_port(void)
{
	umad_port_t p;
	struct {
		const char *name;
		int port;
	} cases[] = {
		{ NULL, 0 }, { NULL, 1 }, { NULL, 2 }, { NULL, -1 }, { NULL, 10 },
		{ "nosuchca", 0 }, { "nosuchca", 1 }, { "", 1 }, { "ibsim0", 0 },
		{ "ibsim0", 1 }, { "ibsim0", 2 }, { "mthca0", 1 },
	};
	int r;

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		memset(&p, 0x5a, sizeof(p));
		CALLD(r, umad_get_port(cases[k].name, cases[k].port, &p),
		      "umad_get_port(%s, %d, &p)", qname(cases[k].name), cases[k].port);
		if (r == 0) {
			dump_port("  ", &p);
			CALLV(umad_release_port(&p));
			printf("  after release: pkeys=%s pkeys_size=%u\n", nullness(p.pkeys),
			       p.pkeys_size);
		} else {
			show_field("ca_name", p.ca_name, sizeof(p.ca_name));
			printf("  portnum=%d\n", p.portnum);
		}
	}
	memset(&p, 0, sizeof(p));
	CALLV(umad_release_port(&p));
	printf("  after release: pkeys=%s pkeys_size=%u\n", nullness(p.pkeys), p.pkeys_size);
	CALLV(umad_release_port(NULL));
}

static void sec_issm(void)
{
	char path[64];
	int r;
	struct {
		const char *name;
		int port;
		int max;
	} cases[] = {
		{ NULL, 0, 64 }, { NULL, 0, 20 }, { NULL, 0, 5 }, { NULL, 0, 1 }, { NULL, 0, 0 },
		{ NULL, 1, 64 }, { NULL, 2, 64 }, { "nosuchca", 0, 64 }, { "nosuchca", 1, 64 },
		{ "ibsim0", 0, 64 }, { "ibsim0", 1, 64 }, { "ibsim0", 1, 16 }, { "ibsim0", 2, 64 },
	};

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		memset(path, 'X', sizeof(path));
		CALLD(r, umad_get_issm_path(cases[k].name, cases[k].port, path, cases[k].max),
		      "umad_get_issm_path(%s, %d, path, %d)", qname(cases[k].name), cases[k].port,
		      cases[k].max);
		show_bytes("path", path, 24);
	}
}

static void show_list(struct umad_device_node *l)
{
	printf("  list:");
	if (!l)
		printf(" (empty)");
	for (; l; l = l->next)
		printf(" %s", l->ca_name);
	printf("\n");
}

static void sec_devlist(void)
{
	struct umad_device_node *l;

	errno = ERRNO_SENTINEL;
	l = umad_get_ca_device_list();
	printf("umad_get_ca_device_list() = %s errno=%s\n", nullness(l), compat_errno(errno));
	show_list(l);
	CALL_VOID(umad_free_ca_device_list(l));
	CALL_VOID(umad_free_ca_device_list(NULL));
	/* Twice: nothing is cached. */
	errno = ERRNO_SENTINEL;
	l = umad_get_ca_device_list();
	printf("umad_get_ca_device_list() = %s errno=%s\n", nullness(l), compat_errno(errno));
	show_list(l);
	if (l) {
		CALLV(umad_sort_ca_device_list(&l, 0));
		show_list(l);
	}
	umad_free_ca_device_list(l);
}

/* Builds a caller-owned list with the given names (the library must not free it). */
static struct umad_device_node *make_list(struct umad_device_node *nodes, const char **names,
					  int n)
{
	for (int i = 0; i < n; i++) {
		nodes[i].ca_name = names[i];
		nodes[i].next = i + 1 < n ? &nodes[i + 1] : NULL;
	}
	return n ? &nodes[0] : NULL;
}

static void sec_sort(void)
{
	static const char *names[] = { "mlx5_10", "mlx5_1", "ibsim0", "mlx5_2", "mlx4_0" };
	struct umad_device_node nodes[5], *h;
	size_t sizes[] = { 0, 1, 2, 4, 5, 6, 100 };
	int r;

	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		h = make_list(nodes, names, 5);
		CALLD(r, umad_sort_ca_device_list(&h, sizes[k]),
		      "umad_sort_ca_device_list(&<5 nodes>, %zu)", sizes[k]);
		show_list(h);
	}
	h = make_list(nodes, names, 1);
	CALLV(umad_sort_ca_device_list(&h, 0));
	show_list(h);
	h = make_list(nodes, names, 2);
	CALLV(umad_sort_ca_device_list(&h, 0));
	show_list(h);
	h = make_list(nodes, names, 2);
	CALLV(umad_sort_ca_device_list(&h, 3));
	show_list(h);
	h = NULL;
	CALLV(umad_sort_ca_device_list(&h, 0));
	show_list(h);
	h = NULL;
	CALLV(umad_sort_ca_device_list(&h, 1));
	h = NULL;
	CALLV(umad_sort_ca_device_list(&h, 2));
	show_list(h);
}

static void show_layout(void)
{
	unsigned char buf[64];

	printf("  umad_size()=%zu umad_get_mad offset=%td umad_get_mad_addr offset=%td\n",
	       umad_size(), (unsigned char *)umad_get_mad(buf) - buf,
	       (unsigned char *)umad_get_mad_addr(buf) - buf);
}

static void sec_open(void)
{
	struct {
		const char *name;
		int port;
	} cases[] = {
		{ NULL, 0 }, { NULL, 1 }, { NULL, 2 }, { NULL, -1 }, { "nosuchca", 0 },
		{ "nosuchca", 1 }, { "", 0 }, { "ibsim0", 0 }, { "ibsim0", 1 }, { "ibsim0", 2 },
		{ "mthca0", 1 },
	};
	int fd;

	show_layout();
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		CALLD(fd, umad_open_port(cases[k].name, cases[k].port), "umad_open_port(%s, %d)",
		      qname(cases[k].name), cases[k].port);
		show_layout();
		if (fd >= 0) {
			CALLV(umad_get_fd(fd));
			CALLV(umad_close_port(fd));
		}
	}
	CALLV(umad_close_port(999));
	CALLV(umad_close_port(-1));
	show_layout();
}

static void sec_addr(void)
{
	unsigned char u[64 + 256];
	ib_mad_addr_t src;

	memset(u, 0xEE, sizeof(u));
	show_layout();
	CALLV(umad_set_addr(u, 0x1234, 1, 3, 0x80010000));
	hexdump("hdr", u, 64);
	CALLV(umad_set_addr(u, 0x12345, -1, 0x1ff, -1));
	hexdump("hdr", u, 64);
	CALLV(umad_set_addr_net(u, htons(0x4321), htonl(0x11), 5, htonl(0x80010000)));
	hexdump("hdr", u, 64);
	memset(&src, 0x77, sizeof(src));
	for (int i = 0; i < 16; i++)
		src.gid[i] = 0xf0 + i;
	src.flow_label = 0x12345;
	src.hop_limit = 64;
	src.traffic_class = 7;
	src.gid_index = 5;
	src.sl = 9;
	src.grh_present = 0;
	CALLV(umad_set_grh(u, &src));
	hexdump("hdr", u, 64);
	CALLV(umad_set_grh(u, NULL));
	hexdump("hdr", u, 64);
	CALLV(umad_set_pkey(u, 0x1234));
	CALLV(umad_get_pkey(u));
	CALLV(umad_set_pkey(u, -1));
	CALLV(umad_get_pkey(u));
	hexdump("hdr", u, 64);
	((ib_user_mad_t *)u)->status = 110;
	CALLV(umad_status(u));
	((ib_user_mad_t *)u)->status = 0xffffffff;
	CALLV(umad_status(u));
	CALL_VOID(umad_addr_dump(umad_get_mad_addr(u)));
	CALL_VOID(umad_dump(u));
}

static void sec_dump(void)
{
	unsigned char u[64 + 256];
	ib_user_mad_t *h = (ib_user_mad_t *)u;

	memset(u, 0, sizeof(u));
	CALL_VOID(umad_dump(u));
	h->agent_id = 7;
	h->status = 110;
	h->timeout_ms = 0xffffffff;
	h->retries = 3;
	h->length = 320;
	h->addr.qpn = htonl(0x123456);
	h->addr.qkey = htonl(0x80010000);
	h->addr.lid = htons(0xc001);
	h->addr.sl = 15;
	h->addr.path_bits = 0x7f;
	h->addr.grh_present = 1;
	h->addr.gid_index = 200;
	h->addr.hop_limit = 255;
	h->addr.traffic_class = 0x80;
	for (int i = 0; i < 16; i++)
		h->addr.gid[i] = 0x10 * (i & 15) + i;
	h->addr.flow_label = htonl(0xabcde);
	h->addr.pkey_index = 0xfffe;
	CALL_VOID(umad_dump(u));
	CALL_VOID(umad_addr_dump(&h->addr));
	h->agent_id = (uint32_t)-1;
	h->timeout_ms = 0x80000000;
	CALL_VOID(umad_dump(u));
}

static void sec_sendrecv(void)
{
	unsigned char *u = calloc(1, 64 + 256);
	ib_user_mad_t *h = (ib_user_mad_t *)u;
	int len;

	CALLV(umad_send(-1, 0, u, 256, 100, 3));
	hexdump("hdr", u, 24);
	CALLV(umad_send(999, 5, u, 256, 0, 0));
	hexdump("hdr", u, 24);
	CALLV(umad_send(-1, -2, u, 0, -1, -1));
	hexdump("hdr", u, 24);

	len = 256;
	CALLV(umad_recv(-1, NULL, &len, 0));
	printf("  len=%d\n", len);
	CALLV(umad_recv(-1, u, NULL, 0));
	CALLV(umad_recv(-1, NULL, NULL, 10));
	h->length = 1000;
	len = 256;
	CALLV(umad_recv(-1, u, &len, 10));
	printf("  len=%d\n", len);
	len = 256;
	CALLV(umad_recv(-1, u, &len, 0));
	printf("  len=%d\n", len);
	len = 256;
	h->length = 20;
	CALLV(umad_recv(999, u, &len, 10));
	printf("  len=%d\n", len);
	len = 256;
	CALLV(umad_recv(999, u, &len, -1));
	printf("  len=%d\n", len);
	len = -5;
	CALLV(umad_recv(-1, u, &len, 0));
	printf("  len=%d\n", len);

	CALLV(umad_poll(999, 0));
	CALLV(umad_poll(999, 10));
	CALLV(umad_poll(-1, 0));
	CALLV(umad_poll(-1, 10));
	CALLV(umad_get_fd(5));
	CALLV(umad_get_fd(-1));
	CALLV(umad_get_fd(999));
	free(u);
}

static void show_attr(const struct umad_reg_attr *a, uint32_t id)
{
	printf("  attr.flags=0x%x attr.oui=0x%x agent_id=0x%x\n", a->flags, a->oui, id);
}

static void sec_register(void)
{
	long mask[16 / sizeof(long)] = { 0x2, 0 };
	uint8_t oui[3] = { 0x00, 0x14, 0x05 };
	struct umad_reg_attr attr;
	uint32_t id;

	CALLV(umad_register(-1, 1, 1, 0, mask));
	CALLV(umad_register(999, 0x81, 1, 0, NULL));
	CALLV(umad_register(-1, 0x03, 2, 1, mask));
	CALLV(umad_register_oui(-1, 0x2f, 0, oui, mask));
	CALLV(umad_register_oui(-1, 0x50, 0, oui, mask));
	CALLV(umad_register_oui(-1, 0x09, 0, oui, mask));
	CALLV(umad_register_oui(-1, 0x30, 0, oui, mask));
	CALLV(umad_register_oui(-1, 0x4f, 1, oui, NULL));

	memset(&attr, 0, sizeof(attr));
	attr.mgmt_class = 0x30;
	attr.mgmt_class_version = 1;
	attr.method_mask[0] = 2;
	id = 0xdeadbeef;
	CALLV(umad_register2(-1, NULL, &id));
	CALLV(umad_register2(-1, &attr, NULL));
	CALLV(umad_register2(-1, NULL, NULL));
	attr.oui = 0;
	CALLV(umad_register2(-1, &attr, &id));
	show_attr(&attr, id);
	attr.oui = 0x1000000;
	CALLV(umad_register2(-1, &attr, &id));
	show_attr(&attr, id);
	attr.oui = 0x1001405;
	CALLV(umad_register2(-1, &attr, &id));
	show_attr(&attr, id);
	attr.oui = 0xffffff;
	CALLV(umad_register2(-1, &attr, &id));
	show_attr(&attr, id);
	attr.mgmt_class = 0x4f;
	attr.oui = 0x001405;
	attr.flags = UMAD_USER_RMPP;
	CALLV(umad_register2(-1, &attr, &id));
	show_attr(&attr, id);
	attr.mgmt_class = 0x04;
	attr.oui = 0;
	attr.flags = 0x80000000;
	CALLV(umad_register2(999, &attr, &id));
	show_attr(&attr, id);
	attr.mgmt_class = 0x2f;
	attr.oui = 0x1000000; /* outside the vendor range: not checked */
	attr.flags = 0;
	CALLV(umad_register2(-1, &attr, &id));
	show_attr(&attr, id);

	CALLV(umad_unregister(-1, 0));
	CALLV(umad_unregister(999, 40));
	CALLV(umad_unregister(-1, -1));
}

static void sec_debug(void)
{
	unsigned char *u = calloc(1, 64 + 256);
	char cas[4][UMAD_CA_NAME_LEN];
	long mask[16 / sizeof(long)] = { 0x2, 0 };
	uint8_t oui[3] = { 0x00, 0x14, 0x05 };
	struct umad_reg_attr attr;
	__be64 g[4];
	umad_ca_t ca;
	umad_port_t p;
	char path[32];
	uint32_t id;
	int r, len, fd;
	struct umad_device_node *l;

	CALLV(umad_debug(-1));
	CALLV(umad_debug(1));
	CALLV(umad_debug(-7));
	CALLV(umad_init());
	CALLV(umad_done());
	CALLV(umad_get_cas_names(cas, 4));
	CALLV(umad_get_ca_portguids(NULL, g, 4));
	CALLV(umad_get_ca_portguids("nosuchca", g, 4));
	CALL(r, umad_get_ca(NULL, &ca));
	if (r == 0)
		CALLV(umad_release_ca(&ca));
	CALLV(umad_get_ca("nosuchca", &ca));
	CALL(r, umad_get_port(NULL, 0, &p));
	if (r == 0)
		CALLV(umad_release_port(&p));
	CALL(r, umad_get_port("ibsim0", 1, &p));
	if (r == 0)
		CALLV(umad_release_port(&p));
	CALLV(umad_get_issm_path(NULL, 0, path, sizeof(path)));
	CALLV(umad_get_issm_path("nosuchca", 1, path, sizeof(path)));
	CALL(fd, umad_open_port(NULL, 0));
	if (fd >= 0)
		CALLV(umad_close_port(fd));
	CALLV(umad_open_port("nosuchca", 1));
	CALLV(umad_close_port(999));
	CALLV(umad_set_addr(u, 0x1234, 1, 3, 0x80010000));
	CALLV(umad_set_addr_net(u, htons(0x4321), htonl(0x11), 5, htonl(0x80010000)));
	CALLV(umad_set_grh(u, NULL));
	CALLV(umad_set_pkey(u, 2));
	CALLV(umad_get_pkey(u));
	CALLV(umad_send(-1, 3, u, 256, 100, 2));
	len = 256;
	CALLV(umad_recv(-1, u, &len, 0));
	len = 256;
	CALLV(umad_recv(-1, u, &len, 10));
	CALLV(umad_recv(-1, NULL, &len, 0));
	CALLV(umad_poll(-1, 1));
	CALLV(umad_register(-1, 1, 1, 0, mask));
	CALLV(umad_register_oui(-1, 0x30, 0, oui, mask));
	CALLV(umad_register_oui(-1, 0x20, 0, oui, mask));
	memset(&attr, 0, sizeof(attr));
	attr.mgmt_class = 0x04;
	attr.mgmt_class_version = 1;
	CALLV(umad_register2(-1, &attr, &id));
	CALLV(umad_register2(-1, NULL, &id));
	CALLV(umad_unregister(-1, 0));
	l = umad_get_ca_device_list();
	printf("umad_get_ca_device_list() = %s\n", nullness(l));
	umad_free_ca_device_list(l);
	CALLV(umad_debug(2));
	CALLV(umad_send(-1, 3, u, 256, 100, 2));
	CALLV(umad_debug(3));
	CALLV(umad_debug(0));
	CALLV(umad_debug(-1));
	free(u);
}

static void sec_str(void)
{
	unsigned cls[] = { 0x00, 0x01, 0x03, 0x04, 0x07, 0x09, 0x0f, 0x10, 0x12, 0x13, 0x21,
			   0x2f, 0x30, 0x4f, 0x50, 0x80, 0x81, 0xff };
	unsigned meth[][2] = { { 3, 0x12 }, { 3, 0x92 }, { 3, 0x13 }, { 1, 0x12 }, { 4, 0x81 },
			       { 0x81, 0x01 }, { 0x03, 0x01 }, { 0x04, 0x07 }, { 0x04, 0x00 },
			       { 0x04, 0xff } };
	unsigned attr[][2] = { { 1, 0x15 }, { 0x81, 0x11 }, { 3, 0x15 }, { 3, 0x10 },
			       { 7, 0x1c }, { 4, 0x11 }, { 4, 0x01 }, { 3, 0x02 }, { 1, 0xff90 },
			       { 3, 0xf3 }, { 7, 0x03 }, { 0x21, 0x0003 }, { 3, 0x3e } };
	unsigned cst[] = { 0x0000, 0x0001, 0x0002, 0x0003, 0x0004, 0x0008, 0x000c, 0x0010,
			   0x001c, 0x031c, 0xff00 };
	unsigned sst[] = { 0x0000, 0x0001, 0x0100, 0x0200, 0x0300, 0x0400, 0x0500, 0x0600,
			   0x0700, 0x0800, 0x0900, 0xff00 };

	for (unsigned i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
		printf("class 0x%02x: ", cls[i]);
		CALL_STR(umad_class_str(cls[i]));
	}
	for (unsigned i = 0; i < sizeof(meth) / sizeof(meth[0]); i++) {
		printf("method 0x%02x/0x%02x: ", meth[i][0], meth[i][1]);
		CALL_STR(umad_method_str(meth[i][0], meth[i][1]));
	}
	for (unsigned i = 0; i < sizeof(attr) / sizeof(attr[0]); i++) {
		printf("attr 0x%02x/0x%04x: ", attr[i][0], attr[i][1]);
		CALL_STR(umad_attribute_str(attr[i][0], htons(attr[i][1])));
	}
	for (unsigned i = 0; i < sizeof(cst) / sizeof(cst[0]); i++) {
		printf("common status 0x%04x: ", cst[i]);
		CALL_STR(umad_common_mad_status_str(htons(cst[i])));
	}
	for (unsigned i = 0; i < sizeof(sst) / sizeof(sst[0]); i++) {
		printf("sa status 0x%04x: ", sst[i]);
		CALL_STR(umad_sa_mad_status_str(htons(sst[i])));
	}
}

/*
 * HEAD-only API (rdma-core >= 53/56), resolved with dlsym. On the Debian 44.0 library this
 * section prints one "<symbol>: absent" line per function and nothing else.
 * umad_open_smi_port(X) is checked against umad_open_port(X) (same resolution when no port is
 * SMI-disabled, which is the case with no device and under umad2sim): each input is run
 * through both, closing in between, and both lines are printed.
 */
static void sec_head(void)
{
	int (*open_smi)(const char *, int) = head_sym("umad_open_smi_port");
	int (*pairs)(struct compat_ca_pair *, size_t) = head_sym("umad_get_smi_gsi_pairs");
	int (*by_name)(const char *, uint8_t, struct compat_ca_pair *, unsigned) =
		head_sym("umad_get_smi_gsi_pair_by_ca_name");
	struct compat_ca_pair cas[4], pair;
	struct {
		const char *name;
		int port;
	} opens[] = { { NULL, 0 }, { "nosuchca", 0 }, { "nosuchca", 1 }, { "ibsim0", 1 },
		      { NULL, 2 } };
	struct {
		const char *name;
		uint8_t port;
		unsigned enforce;
	} names[] = { { NULL, 0, 1 }, { NULL, 0, 0 }, { NULL, 1, 1 }, { "ibsim0", 0, 1 },
		      { "ibsim0", 1, 0 }, { "ibsim0", 2, 1 }, { "nosuchca", 0, 1 },
		      { "mthca0", 0, 0 } };
	int r;

	if (open_smi) {
		for (unsigned k = 0; k < sizeof(opens) / sizeof(opens[0]); k++) {
			CALLD(r, umad_open_port(opens[k].name, opens[k].port),
			      "umad_open_port(%s, %d)", qname(opens[k].name), opens[k].port);
			if (r >= 0)
				umad_close_port(r);
			CALLD(r, open_smi(opens[k].name, opens[k].port), "umad_open_smi_port(%s, %d)",
			      qname(opens[k].name), opens[k].port);
			if (r >= 0)
				umad_close_port(r);
		}
	}
	if (pairs) {
		size_t maxes[] = { 4, 1, 0 };

		for (unsigned k = 0; k < sizeof(maxes) / sizeof(maxes[0]); k++) {
			memset(cas, 0x5a, sizeof(cas));
			errno = ERRNO_SENTINEL;
			r = pairs(cas, maxes[k]);
			printf("umad_get_smi_gsi_pairs(cas, %zu) = %d errno=%s\n", maxes[k], r,
			       compat_errno(errno));
			for (int i = 0; i < 2; i++) {
				dump_pair(i ? "cas[1]" : "cas[0]", &cas[i]);
			}
		}
	}
	if (by_name) {
		for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
			memset(&pair, 0x5a, sizeof(pair));
			errno = ERRNO_SENTINEL;
			r = by_name(names[k].name, names[k].port, &pair, names[k].enforce);
			printf("umad_get_smi_gsi_pair_by_ca_name(%s, %u, &pair, %u) = %d errno=%s\n",
			       qname(names[k].name), names[k].port, names[k].enforce, r,
			       compat_errno(errno));
			dump_pair("pair", &pair);
		}
		errno = ERRNO_SENTINEL;
		r = by_name(NULL, 0, NULL, 1);
		printf("umad_get_smi_gsi_pair_by_ca_name(NULL, 0, NULL, 1) = %d errno=%s\n", r,
		       compat_errno(errno));
	}
}

/* ---- sections that need a umad device (umad2sim) ------------------------------------------ */

static void fill_dr_nodeinfo(unsigned char *u, uint32_t tid)
{
	struct umad_smp *smp = umad_get_mad(u);

	memset(smp, 0, sizeof(*smp));
	smp->base_version = 1;
	smp->mgmt_class = UMAD_CLASS_SUBN_DIRECTED_ROUTE;
	smp->class_version = 1;
	smp->method = UMAD_METHOD_GET;
	smp->hop_ptr = 0;
	smp->hop_cnt = 0;
	smp->tid = htobe64(tid);
	smp->attr_id = htons(UMAD_SM_ATTR_NODE_INFO);
	smp->dr_slid = htons(0xffff);
	smp->dr_dlid = htons(0xffff);
}

/* The received umad: header fields, the SMP header (TID: low 32 bits only; the upper half is
 * ibsim's client slot and agent id) and the first 40 bytes of the NodeInfo. Bytes >= 224 are
 * garbage under umad2sim and never shown. */
static void show_reply(const unsigned char *u)
{
	const ib_user_mad_t *h = (const ib_user_mad_t *)u;
	const struct umad_smp *smp = umad_get_mad((void *)u);

	printf("  hdr: agent_id=%u status=%u timeout_ms=%u retries=%u length=%u\n", h->agent_id,
	       h->status, h->timeout_ms, h->retries, h->length);
	printf("  addr: qpn=%u qkey=0x%x lid=0x%x sl=%u path_bits=%u grh_present=%u pkey_index=%u\n",
	       ntohl(h->addr.qpn), ntohl(h->addr.qkey), ntohs(h->addr.lid), h->addr.sl,
	       h->addr.path_bits, h->addr.grh_present, h->addr.pkey_index);
	printf("  smp: base=%u class=0x%02x ver=%u method=0x%02x status=0x%04x hop_ptr=%u hop_cnt=%u tid_low=0x%08x attr=0x%04x mod=0x%x dr_slid=0x%04x dr_dlid=0x%04x\n",
	       smp->base_version, smp->mgmt_class, smp->class_version, smp->method,
	       ntohs(smp->status), smp->hop_ptr, smp->hop_cnt,
	       (uint32_t)(be64toh(smp->tid) & 0xffffffff), ntohs(smp->attr_id),
	       ntohl(smp->attr_mod), ntohs(smp->dr_slid), ntohs(smp->dr_dlid));
	hexdump("data[0..40]", smp->data, 40);
}

static void sec_simio(void)
{
	unsigned char *u = calloc(1, 64 + 512);
	int fd, agent, len, r;

	show_layout();
	CALL(fd, umad_open_port(NULL, 0));
	show_layout();
	if (fd < 0)
		return;
	CALL(agent, umad_register(fd, UMAD_CLASS_SUBN_DIRECTED_ROUTE, 1, 0, NULL));

	/* Nothing queued yet. */
	len = 256;
	((ib_user_mad_t *)u)->length = 1000;
	CALLV(umad_recv(fd, u, &len, 0));
	printf("  len=%d\n", len);
	len = 256;
	CALLV(umad_recv(fd, u, &len, 50));
	printf("  len=%d\n", len);
	CALLV(umad_poll(fd, 0));
	CALLV(umad_poll(fd, 50));

	/* DR NodeInfo to the local port: permissive LID, DrSLID = DrDLID = 0xffff, 0 hops. */
	fill_dr_nodeinfo(u, 0x1001);
	CALLV(umad_set_addr(u, 0xffff, 0, 0, 0));
	CALLV(umad_send(fd, agent, u, 256, 1000, 0));
	CALLV(umad_poll(fd, 2000));
	len = 256;
	memset(u, 0, 64);
	CALL(r, umad_recv(fd, u, &len, 2000));
	printf("  len=%d\n", len);
	CALLV(umad_status(u));
	show_reply(u);

	/* Same request, received with timeout -1 (infinite poll). */
	fill_dr_nodeinfo(u, 0x1002);
	CALLV(umad_set_addr(u, 0xffff, 0, 0, 0));
	CALLV(umad_send(fd, agent, u, 256, 1000, 0));
	len = 256;
	CALLV(umad_recv(fd, u, &len, -1));
	printf("  len=%d\n", len);
	show_reply(u);

	/* Unroutable (LID 0): comes back at once with status 110. */
	fill_dr_nodeinfo(u, 0x1003);
	CALLV(umad_set_addr(u, 0, 0, 0, 0));
	CALLV(umad_send(fd, agent, u, 256, 100, 0));
	len = 256;
	CALLV(umad_recv(fd, u, &len, 2000));
	printf("  len=%d\n", len);
	CALLV(umad_status(u));
	show_reply(u);

	/* A short receive buffer (umad2sim truncates instead of failing). */
	fill_dr_nodeinfo(u, 0x1004);
	CALLV(umad_set_addr(u, 0xffff, 0, 0, 0));
	CALLV(umad_send(fd, agent, u, 256, 1000, 0));
	CALLV(umad_poll(fd, 2000));
	len = 100;
	CALLV(umad_recv(fd, u, &len, 0));
	printf("  len=%d\n", len);

	/* Nothing left over. */
	CALLV(umad_poll(fd, 50));

	/* Traces of a full round trip at debug level 1 (send also dumps at level 2). */
	CALLV(umad_debug(2));
	fill_dr_nodeinfo(u, 0x1006);
	CALLV(umad_set_addr(u, 0xffff, 0, 0, 0));
	CALLV(umad_send(fd, agent, u, 256, 1000, 0));
	len = 256;
	CALLV(umad_recv(fd, u, &len, 2000));
	printf("  len=%d\n", len);
	CALLV(umad_debug(0));

	CALLV(umad_unregister(fd, agent));
	CALLV(umad_unregister(fd, agent));
	CALLV(umad_unregister(fd, 40));
	CALLV(umad_close_port(fd));
	show_layout();
	free(u);
}

static void sec_simreg(void)
{
	long mask[16 / sizeof(long)] = { 0x2, 0 };
	uint8_t oui[3] = { 0x00, 0x14, 0x05 };
	struct umad_reg_attr attr;
	uint32_t id;
	int fd, r, ids[40], n = 0;

	CALL(fd, umad_open_port(NULL, 0));
	if (fd < 0)
		return;
#define REG(expr)                                                              \
	do {                                                                   \
		CALL(r, expr);                                                 \
		if (r >= 0)                                                    \
			ids[n++] = r;                                          \
	} while (0)
	REG(umad_register(fd, 0x81, 1, 0, NULL));
	REG(umad_register(fd, 0x01, 1, 0, mask));
	REG(umad_register(fd, 0x04, 1, 0, mask));
	REG(umad_register(fd, 0x03, 2, 1, mask));
	REG(umad_register_oui(fd, 0x30, 0, oui, mask));
	REG(umad_register_oui(fd, 0x4f, 1, oui, NULL));
	REG(umad_register_oui(fd, 0x51, 1, oui, NULL));
#undef REG

	memset(&attr, 0, sizeof(attr));
	attr.mgmt_class = 0x06;
	attr.mgmt_class_version = 1;
	attr.method_mask[0] = 0x6;
	id = 0xdeadbeef;
	CALL(r, umad_register2(fd, &attr, &id));
	show_attr(&attr, id);
	if (r == 0)
		ids[n++] = id;
	attr.flags = UMAD_USER_RMPP;
	id = 0xdeadbeef;
	CALL(r, umad_register2(fd, &attr, &id));
	show_attr(&attr, id);
	if (r == 0)
		ids[n++] = id;
	attr.flags = 0;
	attr.mgmt_class = 0x31;
	attr.oui = 0x001405;
	id = 0xdeadbeef;
	CALL(r, umad_register2(fd, &attr, &id));
	show_attr(&attr, id);
	if (r == 0)
		ids[n++] = id;
	attr.oui = 0;
	id = 0xdeadbeef;
	CALL(r, umad_register2(fd, &attr, &id));
	show_attr(&attr, id);

	/* Fill the table: 32 agents per fd (umad2sim: per process); the 33rd must fail. */
	while (n < 34) {
		CALL(r, umad_register(fd, 0x10 + n, 1, 0, NULL));
		if (r < 0)
			break;
		ids[n++] = r;
	}
	printf("  registered %d agents\n", n);
	CALLV(umad_unregister(fd, 40));
	CALLV(umad_unregister(fd, -1));
	if (n > 3) {
		CALLV(umad_unregister(fd, ids[3]));
		CALLV(umad_unregister(fd, ids[3]));
		CALL(r, umad_register(fd, 0x2e, 1, 0, NULL));
		ids[3] = r;
	}
	for (int i = 0; i < n; i++)
		if (ids[i] >= 0)
			CALLV(umad_unregister(fd, ids[i]));
	CALLV(umad_close_port(fd));
}

static void sec_simmany(void)
{
	int fds[10];

	int r;

	for (int i = 0; i < 10; i++) {
		CALL(r, umad_open_port(NULL, 0));
		fds[i] = r;
	}
	for (int i = 0; i < 10; i++)
		if (fds[i] >= 0)
			CALLV(umad_close_port(fds[i]));
	CALLV(umad_open_port("ibsim0", 1));
}

static const struct {
	const char *name;
	void (*fn)(void);
} SECTIONS[] = {
	{ "init", sec_init },
	{ "cas", sec_cas },
	{ "portguids", sec_portguids },
	{ "ca", sec_ca },
	{ "port", sec_port },
	{ "issm", sec_issm },
	{ "devlist", sec_devlist },
	{ "sort", sec_sort },
	{ "open", sec_open },
	{ "addr", sec_addr },
	{ "dump", sec_dump },
	{ "sendrecv", sec_sendrecv },
	{ "register", sec_register },
	{ "debug", sec_debug },
	{ "str", sec_str },
	{ "head", sec_head },
	{ "simio", sec_simio },
	{ "simreg", sec_simreg },
	{ "simmany", sec_simmany },
};

int main(int argc, char **argv)
{
	compat_start();
	for (int i = 1; i < argc; i++) {
		unsigned k;

		for (k = 0; k < sizeof(SECTIONS) / sizeof(SECTIONS[0]); k++)
			if (!strcmp(argv[i], SECTIONS[k].name))
				break;
		if (k == sizeof(SECTIONS) / sizeof(SECTIONS[0])) {
			fprintf(stderr, "unknown section %s\n", argv[i]);
			return 2;
		}
		printf("== %s ==\n", argv[i]);
		SECTIONS[k].fn();
	}
	printf("== end ==\n");
	return 0;
}
