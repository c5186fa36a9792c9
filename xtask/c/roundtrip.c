/*
 * roundtrip: MAD round trips through the system libibumad, the C side of
 * `cargo xtask bench-roundtrip` (xtask/src/bench_roundtrip.rs), which runs it under ibsim's
 * umad2sim shim next to the same loop in Rust.
 *
 * usage: roundtrip WINDOW WARMUP COUNT MAD_HEX
 *
 * MAD_HEX is the request (the Rust side builds it with ibmad::Smp::dr_request, so its layout
 * is written once). Keeps WINDOW requests in flight (1 = serial: umad_send, then umad_recv),
 * each with its own TID: WARMUP untimed round trips, then COUNT timed ones. Every reply must
 * be a successful GetResp, else the program fails. Prints "elapsed_ns=N round_trips=COUNT
 * cpu_ns=M proc_cpu_ns=P": wall time of the timed loop, the CPU time this (main) thread spent
 * in it, from /proc/thread-self/schedstat (the shim's receiver thread is the same in both
 * programs), and the user + system CPU time of the whole process (every thread, the shim's
 * too) in it, from getrusage(RUSAGE_SELF).
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <infiniband/umad.h>
#include <infiniband/umad_types.h>

/* The Rust side uses the same: one attempt, and a lost reply ends the run. */
#define TIMEOUT_MS 1000
#define RETRIES 0
#define RECV_WAIT_MS 3000
#define GET_RESP 0x81
/* A directed-route SMP's status word carries the direction bit D (IBA 14.2.1.2) on top. */
#define DR_DIRECTION 0x8000

static int portid, agent;
static void *sendbuf, *recvbuf;
static int mad_len;
static uint64_t next_tid = 1;

static void die(const char *what, int err)
{
	fprintf(stderr, "roundtrip: %s: %s\n", what, strerror(err));
	exit(1);
}

static void send_one(void)
{
	struct umad_hdr *h = umad_get_mad(sendbuf);

	h->tid = htobe64(next_tid++);
	if (umad_send(portid, agent, sendbuf, mad_len, TIMEOUT_MS, RETRIES) < 0)
		die("umad_send", errno);
}

static void recv_one(void)
{
	int length = mad_len;
	int r = umad_recv(portid, recvbuf, &length, RECV_WAIT_MS);
	struct umad_hdr *h = umad_get_mad(recvbuf);

	if (r < 0)
		die("umad_recv", -r);
	if (umad_status(recvbuf) != 0)
		die("a request was not answered (umad status)", umad_status(recvbuf));
	if (h->method != GET_RESP || (be16toh(h->status) & ~DR_DIRECTION) != 0) {
		fprintf(stderr, "roundtrip: reply method %#x, MAD status %#x\n", h->method,
			be16toh(h->status));
		exit(1);
	}
}

/* CPU time of the calling thread so far, in ns (the first field of schedstat); -1 if unknown. */
static long long thread_cpu_ns(void)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	long long ns = -1;

	if (f) {
		if (fscanf(f, "%lld", &ns) != 1)
			ns = -1;
		fclose(f);
	}
	return ns;
}

/* User + system CPU time of the whole process so far, in ns; -1 if unknown. */
static long long process_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return ((long long)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       ((long long)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* COUNT round trips with WINDOW in flight. */
static void run(long window, long count)
{
	long sent = 0, done = 0;

	for (; sent < count && sent < window; sent++)
		send_one();
	for (; done < count; done++) {
		recv_one();
		if (sent < count) {
			send_one();
			sent++;
		}
	}
}

static long number(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0) {
		fprintf(stderr, "roundtrip: bad %s %s\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	long long cpu0, cpu1, proc0, proc1;
	long window, warmup, count;
	const char *hex;
	uint8_t request[256];
	int i;

	if (argc != 5) {
		fprintf(stderr, "usage: roundtrip WINDOW WARMUP COUNT MAD_HEX\n");
		return 2;
	}
	window = number(argv[1], "WINDOW");
	warmup = number(argv[2], "WARMUP");
	count = number(argv[3], "COUNT");
	hex = argv[4];
	mad_len = strlen(hex) / 2;
	if (window < 1 || mad_len < 24 || mad_len > 256 || strlen(hex) % 2) {
		fprintf(stderr, "roundtrip: WINDOW >= 1 and a MAD of 24..256 bytes in hex\n");
		return 2;
	}

	for (i = 0; i < mad_len; i++) {
		char byte[3] = { hex[2 * i], hex[2 * i + 1], 0 };
		char *end;

		request[i] = (uint8_t)strtoul(byte, &end, 16);
		if (*end != '\0') {
			fprintf(stderr, "roundtrip: MAD_HEX is not hex\n");
			return 2;
		}
	}

	if (umad_init() < 0)
		die("umad_init", errno);
	portid = umad_open_port(NULL, 0);
	if (portid < 0)
		die("umad_open_port", -portid);
	/* The agent of the request's class and class version (header bytes 1 and 2). */
	agent = umad_register(portid, request[1], request[2], 0, NULL);
	if (agent < 0)
		die("umad_register", -agent);
	sendbuf = umad_alloc(1, umad_size() + mad_len);
	recvbuf = umad_alloc(1, umad_size() + mad_len);
	if (!sendbuf || !recvbuf)
		die("umad_alloc", ENOMEM);
	memcpy(umad_get_mad(sendbuf), request, mad_len);
	/* Directed-route SMPs go to the permissive LID on QP0. */
	umad_set_addr(sendbuf, 0xffff, 0, 0, 0);

	run(window, warmup);
	proc0 = process_cpu_ns();
	cpu0 = thread_cpu_ns();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run(window, count);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cpu1 = thread_cpu_ns();
	proc1 = process_cpu_ns();
	printf("elapsed_ns=%lld round_trips=%ld cpu_ns=%lld proc_cpu_ns=%lld\n",
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec), count,
	       cpu0 < 0 || cpu1 < 0 ? -1LL : cpu1 - cpu0,
	       proc0 < 0 || proc1 < 0 ? -1LL : proc1 - proc0);

	umad_unregister(portid, agent);
	umad_close_port(portid);
	umad_done();
	return 0;
}
