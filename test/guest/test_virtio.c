/*
 * test_virtio — PCI enumeration on QEMU's q35 and the virtio-console
 * driver, with the host side checked by the runner (test/guest_tests.py).
 *
 * Arguments (after -- on the command line):
 *   (none)         q35 with a virtio-serial-pci device and a virtserialport
 *                  named bareperf.0 on a file chardev: enumerate, compare
 *                  ECAM with the 0xcf8 ports, decode BARs, walk the
 *                  capabilities, bring the console up, write PATTERN_BYTES
 *                  of the pattern below plus a trailer line, and time it
 *   missing        no such device: vcon_init fails cleanly with -E_NODEV
 *   unnamed        the only port has no name: it is used anyway
 *   disconnected   the port's chardev is a socket nobody connected to:
 *                  vcon_write refuses at once (-E_NOENT), it does not hang
 *   loopback       the chardev is a QEMU pipe on a FIFO: bytes sent come
 *                  back through vcon_read; then, with nobody draining the
 *                  FIFO, vcon_write gives up with -E_BUSY after
 *                  STUCK_TIMEOUT_MS instead of hanging
 *   bench          write BENCH_BYTES and print
 *                  "BENCH virtio_mb_per_s X MB/s" (MB = 10^6 bytes)
 *
 * The pattern (little-endian u32 words): w[0] = PATTERN_SEED,
 * w[i+1] = w[i] * 1664525 + 1013904223 (mod 2^32); test/guest_tests.py
 * computes the same bytes for the host-side check.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "kernel/dev/pci.h"
#include "kernel/dev/virtio.h"
#include "test/guest/report.h"

#define PATTERN_SEED	0x12345678u
#define PATTERN_BYTES	(1u << 20)
#define BENCH_BYTES	(16u << 20)
#define STUCK_TIMEOUT_MS 500
#define LOOP_BYTES	1000
#define TRAILER_FMT	"bareperf virtio pattern end: %u bytes\n"

#define Q35_HOST_BRIDGE_VENDOR	0x8086
#define Q35_HOST_BRIDGE_DEVICE	0x29c0

static u8 *pattern;

static bool make_pattern(void)
{
	u64 pa = pmm_alloc(PATTERN_BYTES / PAGE_SIZE);
	u32 x = PATTERN_SEED;

	if (!pa)
		return false;
	pattern = (u8 *)pa;
	for (u32 i = 0; i < PATTERN_BYTES / 4; i++) {
		((u32 *)pattern)[i] = x;
		x = x * 1664525u + 1013904223u;
	}
	return true;
}

static u64 us_since(u64 t0)
{
	return tsc_to_ns(rdtsc_ordered() - t0) / 1000;
}

/* "12.3" for bytes over us microseconds, in MB/s (10^6 bytes). */
static void rate(char *buf, size_t n, u64 bytes, u64 us)
{
	u64 tenths = us ? bytes * 10 / us : 0;

	ksnprintf(buf, n, "%lu.%lu", tenths / 10, tenths % 10);
}

/* ---- PCI ---- */

struct snapshot {
	u32 n;
	u32 id[PCI_MAX_DEVICES];	/* vendor | device << 16 */
	u32 where[PCI_MAX_DEVICES];	/* bus << 8 | dev << 3 | fn */
};

static void snap(struct snapshot *s)
{
	s->n = pci_count();
	for (u32 i = 0; i < s->n; i++) {
		struct pci_dev *d = pci_get(i);
		s->id[i] = d->vendor | (u32)d->device << 16;
		s->where[i] = (u32)d->bus << 8 | d->dev << 3 | d->fn;
	}
}

static bool same_functions(const struct snapshot *a, const struct snapshot *b)
{
	return a->n == b->n && !memcmp(a->id, b->id, sizeof(a->id)) &&
	       !memcmp(a->where, b->where, sizeof(a->where));
}

/* The bridge walk (pci_init) finds what the scan of every bus finds, in
 * the same order, for a fraction of the configuration reads. */
static void test_pci_walk(const struct snapshot *walk)
{
	static struct snapshot every;
	u64 r0 = pci_reads();

	pci_init_with(PCI_WANT_EVERY_BUS);
	u64 every_reads = pci_reads() - r0;
	snap(&every);
	report(same_functions(&every, walk),
	       "the bridge walk finds the %u functions the scan of every bus finds", every.n);
	r0 = pci_reads();
	pci_init();
	u64 walk_reads = pci_reads() - r0;
	u32 below = 0, roots = 0;
	for (u32 i = 0; i < pci_count(); i++) {
		const struct pci_dev *d = pci_get(i);
		below += d->bus != 0;
		roots += d->class == PCI_CLASS_BRIDGE && d->subclass == PCI_SUBCLASS_HOST;
	}
	if (roots > 1)
		report(walk_reads * 2 > every_reads, "%u host bridges: the walk scans every bus "
		       "(%lu configuration reads, the scan of every bus %lu)", roots, walk_reads,
		       every_reads);
	else
		report(walk_reads * 4 < every_reads, "the bridge walk makes %lu configuration "
		       "reads, the scan of every bus %lu (%u functions below bus 0)", walk_reads,
		       every_reads, below);
}

static void test_pci(void)
{
	static struct snapshot ecam, ports;

	int n = pci_init();
	report(n > 0 && pci_method() == PCI_METHOD_ECAM,
	       "pci_init: %d functions through %s (q35 has an MCFG window)", n,
	       pci_method_name(pci_method()));
	struct pci_dev *hb = pci_lookup(0, 0, 0);
	report(hb && hb->vendor == Q35_HOST_BRIDGE_VENDOR && hb->device == Q35_HOST_BRIDGE_DEVICE &&
	       hb->class == PCI_CLASS_BRIDGE && hb->subclass == PCI_SUBCLASS_HOST,
	       "00:00.0 is the q35 host bridge 8086:29c0, class 06.00");
	snap(&ecam);

	/* Every function's header reads the same through both mechanisms. */
	bool same = true;
	for (u32 i = 0; i < pci_count(); i++) {
		struct pci_dev *d = pci_get(i);
		for (u16 off = 0; off < 0x40; off += 4)
			same &= pci_read32_at(PCI_METHOD_ECAM, d->bus, d->dev, d->fn, off) ==
				pci_read32_at(PCI_METHOD_PORTS, d->bus, d->dev, d->fn, off);
	}
	report(same, "ECAM and ports 0xcf8/0xcfc read the same headers");
	report(pci_read32_at(PCI_METHOD_PORTS, 0, 0, 0, 0x100) == 0xffffffffu &&
	       pci_read32_at(PCI_METHOD_ECAM, 0, 32, 0, 0) == 0xffffffffu,
	       "out-of-reach accesses read all-ones (ports above 0xff, device 32)");

	n = pci_init_with(PCI_WANT_PORTS);
	snap(&ports);
	report(n > 0 && pci_method() == PCI_METHOD_PORTS && same_functions(&ports, &ecam),
	       "enumeration through the ports finds the same %u functions", ports.n);
	test_pci_walk(&ecam);
}

static void test_virtio_pci(struct pci_dev *d)
{
	struct pci_bar bar;
	u32 mem = 0, caps = 0;

	for (int b = 0; b < 6; b++) {
		if (pci_bar(d, b, &bar) == 0 && !bar.io) {
			mem++;
			if (bar.is64)
				report(bar.prefetch && bar.size >= 0x4000 && !(bar.size & (bar.size - 1)) &&
				       pci_bar(d, b + 1, &bar) == -E_NOENT,
				       "BAR%d: 64-bit prefetchable memory, power-of-two size, "
				       "BAR%d is its upper half", b, b + 1);
		}
	}
	report(mem >= 2, "%u memory BARs decoded (MSI-X table, virtio structures)", mem);
	report(pci_bar(d, 6, &bar) == -E_INVAL && pci_bar(d, -1, &bar) == -E_INVAL,
	       "BAR numbers outside 0-5 are refused");

	for (u8 c = pci_cap_find(d, PCI_CAP_ID_VNDR, 0); c && caps < 64;
	     c = pci_cap_find(d, PCI_CAP_ID_VNDR, c))
		caps++;
	report(caps >= 4 && pci_cap_find(d, PCI_CAP_ID_MSIX, 0) >= PCI_CAP_FIRST &&
	       pci_cap_find(d, 0xee, 0) == 0,
	       "capability list: %u virtio vendor capabilities, MSI-X, no id 0xee", caps);
}

/* ---- console ---- */

/* Write pattern bytes [*done, *done + n) in calls of at most `call` bytes
 * (the pattern repeats every PATTERN_BYTES), with vcon_write, or with
 * vcon_queue and one vcon_flush; returns the first error. */
static int write_range(u32 *done, u32 n, u32 call, bool queue, u64 *us)
{
	u64 t0 = rdtsc_ordered();
	int rc = 0;

	for (u32 end = *done + n; !rc && *done < end; ) {
		u32 off = *done % PATTERN_BYTES;
		u32 k = MIN(MIN(end - *done, call), PATTERN_BYTES - off);
		rc = queue ? vcon_queue(pattern + off, k) : vcon_write(pattern + off, k);
		*done += k;
	}
	if (!rc && queue)
		rc = vcon_flush();
	*us = us_since(t0);
	return rc;
}

static void test_console(void)
{
	struct vcon_stats st;
	char trailer[64], mbs[32];
	u64 us;

	int rc = vcon_init();
	report(rc == 0, "vcon_init: %d", rc);
	if (rc)
		return;
	report(!strcmp(vcon_port_name(), VCON_PORT_NAME) && vcon_host_connected(),
	       "port \"%s\" found by name, host side connected", vcon_port_name());
	report(vcon_init() == 0, "vcon_init again is a no-op");
	report(vcon_write(pattern, 0) == 0, "a 0-byte write succeeds");

	/* Odd sizes first (buffer boundaries, partial buffers); then 64-byte
	 * vcon_write calls (each waits for the device: a notification round
	 * trip per call); then 64-byte vcon_queue calls and one vcon_flush;
	 * then the rest in one call: the bulk rate. */
	static const u32 sizes[] = { 1, 7, 4095, 4096, 4097, 16383, 16384, 16385, 65536, 100000 };
	u32 done = 0, small = 64 * 1024, queued = 256 * 1024;
	u64 small_us = 0, queued_us = 0;
	rc = 0;
	for (u32 i = 0; i < ARRAY_SIZE(sizes) && !rc; i++)
		rc = write_range(&done, sizes[i], sizes[i], false, &us);
	if (!rc)
		rc = write_range(&done, small, 64, false, &small_us);
	if (!rc)
		rc = write_range(&done, queued, 64, true, &queued_us);
	u32 bulk = PATTERN_BYTES - done;
	if (!rc)
		rc = write_range(&done, bulk, bulk, false, &us);
	u32 tl = ksnprintf(trailer, sizeof(trailer), TRAILER_FMT, PATTERN_BYTES);
	int rc2 = vcon_write(trailer, tl);
	vcon_get_stats(&st);
	report(!rc && !rc2 && st.bytes_written == PATTERN_BYTES + tl,
	       "wrote %u pattern bytes and a %u-byte trailer; the device consumed %lu",
	       PATTERN_BYTES, tl, st.bytes_written);
	report(st.timeouts == 0 && st.refused == 0,
	       "no timeouts or refusals (%lu buffers, %lu notifications, %lu stalls)",
	       st.buffers, st.kicks, st.stalls);
	rate(mbs, sizeof(mbs), small, small_us);
	kprintf("virtio: 64-byte vcon_write: %u bytes in %lu us = %s MB/s\n", small, small_us, mbs);
	rate(mbs, sizeof(mbs), queued, queued_us);
	kprintf("virtio: 64-byte vcon_queue + vcon_flush: %u bytes in %lu us = %s MB/s\n",
		queued, queued_us, mbs);
	rate(mbs, sizeof(mbs), bulk, us);
	kprintf("virtio: %u bytes in %lu us = %s MB/s\n", bulk, us, mbs);

	u64 t0 = rdtsc_ordered();
	u8 in[16];
	int got = vcon_read(in, sizeof(in));
	report(got == 0 && us_since(t0) < 100000, "vcon_read with nothing sent returns 0 at once");
}

static int run_missing(void)
{
	pci_init();
	int rc = vcon_init();
	report(rc == -E_NODEV, "no virtio-console: vcon_init returns -E_NODEV (%d)", rc);
	report(!vcon_ready() && vcon_write("x", 1) == -E_NODEV && vcon_read(NULL, 0) == -E_NODEV,
	       "vcon_write and vcon_read return -E_NODEV");
	return report_summary();
}

/* No port is named bareperf.0: the lowest-numbered one is used. */
static int run_unnamed(void)
{
	char line[64];

	pci_init();
	int rc = vcon_init();
	report(rc == 0 && !strcmp(vcon_port_name(), ""), "vcon_init picks the unnamed port: %d", rc);
	if (rc)
		return report_summary();
	u32 n = ksnprintf(line, sizeof(line), "bareperf unnamed port %d\n", vcon_port());
	rc = vcon_write(line, n);
	report(rc == 0, "wrote \"%.*s\" to it: %d", (int)n - 1, line, rc);
	return report_summary();
}

static int run_disconnected(void)
{
	struct vcon_stats st;

	pci_init();
	int rc = vcon_init();
	report(rc == 0, "vcon_init with no host connected: %d", rc);
	if (rc)
		return report_summary();
	report(!vcon_host_connected(), "the host side is reported not connected");
	u64 t0 = rdtsc_ordered();
	rc = vcon_write(pattern, PATTERN_BYTES);
	u64 us = us_since(t0);
	vcon_get_stats(&st);
	report(rc == -E_NOENT && st.refused == 1 && us < 1000000,
	       "vcon_write refuses at once (%d after %lu us): QEMU would drop the data", rc, us);
	return report_summary();
}

/*
 * The port's chardev is a QEMU "pipe" on a FIFO, which QEMU opens
 * read-write: what the guest sends comes straight back to it (the receive
 * path), and once nobody drains it the FIFO fills and QEMU stops taking
 * buffers (the timeout path).
 */
static int run_loopback(void)
{
	static u8 in[LOOP_BYTES];
	struct vcon_stats st;
	u32 got = 0, done = 0;
	u64 us;
	int rc;

	pci_init();
	if ((rc = vcon_init())) {
		report(false, "vcon_init: %d", rc);
		return report_summary();
	}
	report(vcon_host_connected(), "a pipe chardev is connected from the start");
	rc = write_range(&done, LOOP_BYTES, LOOP_BYTES, false, &us);
	u64 end = rdtsc() + virtio_ms_to_tsc(2000);
	while (!rc && got < LOOP_BYTES && rdtsc() < end) {
		rc = vcon_read(in + got, LOOP_BYTES - got);
		if (rc > 0)
			got += rc;
		rc = rc < 0 ? rc : 0;
	}
	report(!rc && got == LOOP_BYTES && !memcmp(in, pattern, LOOP_BYTES),
	       "%u bytes sent came back through vcon_read, intact (%d)", got, rc);

	/* Nobody drains the FIFO now. */
	vcon_set_timeout_ms(STUCK_TIMEOUT_MS);
	u64 t0 = rdtsc_ordered();
	rc = write_range(&done, 8 * PATTERN_BYTES, PATTERN_BYTES, false, &us);
	us = us_since(t0);
	vcon_get_stats(&st);
	report(rc == -E_BUSY && st.timeouts == 1 && us >= STUCK_TIMEOUT_MS * 1000ul &&
	       us < 4 * STUCK_TIMEOUT_MS * 1000ul,
	       "a host that stops reading: vcon_write gives up with -E_BUSY (%d) after %lu us "
	       "(%lu bytes taken)", rc, us, st.bytes_written);
	t0 = rdtsc_ordered();
	rc = vcon_write(pattern, 1);
	us = us_since(t0);
	report(rc == -E_BUSY && us < STUCK_TIMEOUT_MS * 1000ul / 2,
	       "the next write fails at once (%d after %lu us): the host is still stuck", rc, us);
	return report_summary();
}

static int run_bench(void)
{
	char mbs[32];
	u64 us;

	pci_init();
	if (vcon_init()) {
		report(false, "vcon_init");
		return report_summary();
	}
	u32 done = 0;
	int rc = write_range(&done, BENCH_BYTES, PATTERN_BYTES, false, &us);
	report(!rc, "wrote %u bytes: %d", BENCH_BYTES, rc);
	rate(mbs, sizeof(mbs), BENCH_BYTES, us);
	kprintf("virtio: %u bytes in %lu us = %s MB/s\n", BENCH_BYTES, us, mbs);
	if (!rc)
		kprintf("BENCH virtio_mb_per_s %s MB/s\n", mbs);
	return report_summary();
}

static int test_virtio_main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!make_pattern()) {
		report(false, "allocate the %u-byte pattern", PATTERN_BYTES);
		return report_summary();
	}
	if (!strcmp(mode, "missing"))
		return run_missing();
	if (!strcmp(mode, "unnamed"))
		return run_unnamed();
	if (!strcmp(mode, "disconnected"))
		return run_disconnected();
	if (!strcmp(mode, "loopback"))
		return run_loopback();
	if (!strcmp(mode, "bench"))
		return run_bench();
	if (!strcmp(mode, "pci")) {
		test_pci();
		return report_summary();
	}

	test_pci();
	struct pci_dev *d = pci_find(VIRTIO_PCI_VENDOR, VIRTIO_PCI_MODERN_ID(VIRTIO_ID_CONSOLE), 0);
	report(d != NULL, "virtio-serial-pci found: 1af4:1043");
	if (d) {
		test_virtio_pci(d);
		test_console();
	}
	return report_summary();
}

APP(test_virtio, "guest test: PCI enumeration and the virtio console", test_virtio_main, APP_TEST);
