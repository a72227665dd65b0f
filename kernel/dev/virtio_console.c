/*
 * virtio_console.c — the virtio console device (virtio 1.2, 5.3) as a
 * capture channel: one port, found by name, written in large buffers and
 * polled for completion. Contract in kernel/dev/virtio.h.
 *
 * Queues (5.3.2): port 0 uses 0 (receiveq) and 1 (transmitq); the control
 * receiveq and transmitq are 2 and 3; port p >= 1 uses 2p + 2 and 2p + 3.
 * The port to use is only known after the device has announced its ports
 * on the control queue, which needs DRIVER_OK, while queues are set up
 * before DRIVER_OK (3.1.1 step 7). So the queues of every port up to
 * min(max_nr_ports, VCON_MAX_PORTS) are set up (one page of rings each)
 * and only the chosen port's queues get buffers.
 *
 * Buffers: VCON_TX_BUFS transmit buffers of VCON_TX_BUF_SIZE bytes, one
 * contiguous pmm allocation. vcon_queue copies into the buffer being
 * filled and hands each full one to the device, one notification per
 * call; vcon_flush hands over the partial one and waits for all of them
 * to come back; vcon_write is the two.
 *
 * The port: the one named VCON_PORT_NAME ("bareperf.0"), else the
 * lowest-numbered port the device added (which may be a console port: a
 * virtconsole is port 0), so a single unnamed virtserialport also works.
 *
 * QEMU 7.2, measured (test/guest_tests.py, the virtio_* tests):
 *   - virtserialport numbers start at 1 (0 is kept for a virtconsole);
 *     after DEVICE_READY every port's DEVICE_ADD arrives at once; each
 *     PORT_READY is answered by PORT_NAME and, if the chardev is
 *     connected, PORT_OPEN 1. A control message that finds no receive
 *     buffer is dropped (with 8 buffers and 15 ports, names went missing).
 *   - A file or pipe chardev is connected from the start. A socket
 *     chardev with no client is not (no PORT_OPEN 1), and data sent to it
 *     is consumed and discarded (1 MiB in 3 ms): vcon_write refuses with
 *     -E_NOENT instead. When the client connects, PORT_OPEN 1 arrives.
 *   - A host that stops reading (a client that does not read, a full
 *     FIFO) makes QEMU keep the buffers: vcon_write times out (-E_BUSY).
 *   - With the default ioeventfd=on a notification is handled by QEMU's
 *     main loop, not in the vCPU's exit, so a round trip costs ~100 us
 *     even under TCG: 64-byte vcon_write calls run at < 1 MB/s, 64-byte
 *     vcon_queue calls with one vcon_flush at ~100 MB/s, bulk writes at
 *     several hundred MB/s (ioeventfd=off: ~3 us per round trip).
 */
#include "kernel/kernel.h"
#include "kernel/dev/pci.h"
#include "kernel/dev/virtio.h"

#define VCON_MAX_PORTS		32
#define VCON_QUEUE_SIZE		128	/* rings of one queue fit one page */
#define VCON_RX_BUF_SIZE	4096
#define VCON_RX_BUFS		4
#define VCON_CTRL_BUF_SIZE	512	/* control message + a port name */
/* DEVICE_ADD comes for every port at once, and QEMU drops a control
 * message that finds no buffer: post as many as the queue holds, <= 64. */
#define VCON_CTRL_RX_BUFS	64
#define VCON_CTRL_TX_SLOTS	32
#define VCON_NAME_MAX		64
#define DISCOVER_MS		5000	/* all the port announcements */
#define SETTLE_MS		20	/* quiet time that ends them */
#define CTRL_SEND_MS		5000

/* Multiport control messages (5.3.6.2). */
struct virtio_console_control {
	u32 id;			/* port number */
	u16 event;
	u16 value;
};
_Static_assert(sizeof(struct virtio_console_control) == 8, "virtio_console_control");
#define VIRTIO_CONSOLE_DEVICE_READY	0
#define VIRTIO_CONSOLE_DEVICE_ADD	1
#define VIRTIO_CONSOLE_DEVICE_REMOVE	2
#define VIRTIO_CONSOLE_PORT_READY	3
#define VIRTIO_CONSOLE_CONSOLE_PORT	4
#define VIRTIO_CONSOLE_RESIZE		5
#define VIRTIO_CONSOLE_PORT_OPEN	6
#define VIRTIO_CONSOLE_PORT_NAME	7

/* Device configuration layout (5.3.4): struct virtio_console_config. */
#define VCON_CFG_COLS		0	/* le16 */
#define VCON_CFG_ROWS		2	/* le16 */
#define VCON_CFG_MAX_NR_PORTS	4	/* le32, valid with F_MULTIPORT */

#define PORT_RXQ(p)		((p) == 0 ? 0 : 2 * (p) + 2)
#define PORT_TXQ(p)		(PORT_RXQ(p) + 1)
#define CTRL_RXQ		2
#define CTRL_TXQ		3

_Static_assert(VCON_TX_BUFS <= 64 && VCON_RX_BUFS <= 64 && VCON_CTRL_RX_BUFS <= 64 &&
	       VCON_CTRL_TX_SLOTS <= 64, "pool masks are 64 bits");
_Static_assert(VCON_TX_BUF_SIZE % PAGE_SIZE == 0 && VCON_RX_BUF_SIZE % PAGE_SIZE == 0,
	       "whole pages");

/* Fixed-size buffers in one contiguous pmm allocation (physical address
 * == kernel address, the identity map); free ones in a mask. */
struct pool {
	u64 base;
	u32 size, count;
	u64 free;
	u32 len[64];		/* bytes queued in each (transmit pools) */
};

struct port {
	bool added, removed, console, host_open, named;
	char name[VCON_NAME_MAX];
};

static struct {
	bool up, multiport;
	struct virtio_dev vd;
	struct virtq ctrl_rx, ctrl_tx;
	struct virtq rxq[VCON_MAX_PORTS], txq[VCON_MAX_PORTS];
	u32 nports;			/* ports whose queues are set up */
	u32 max_nr_ports;
	struct port port[VCON_MAX_PORTS];
	int cur;			/* the port in use */
	struct pool tx, rx, ctrl_rxp, ctrl_txp;
	bool stuck;			/* timed out, and nothing came back since */
	int fill_buf;			/* tx buffer being filled, or -1 */
	u32 fill_len;
	int rx_cur;			/* rx buffer being read, or -1 */
	u32 rx_off, rx_len;
	u32 timeout_ms;
	u64 last_msg_tsc;
	struct vcon_stats st;
} vc = { .cur = -1, .fill_buf = -1, .rx_cur = -1 };

/* ---- buffer pools ---- */

static int pool_init(struct pool *p, u32 size, u32 count)
{
	p->size = size;
	p->count = count;
	p->base = pmm_alloc(ALIGN_UP((u64)size * count, PAGE_SIZE) / PAGE_SIZE);
	p->free = count == 64 ? ~0ull : (1ull << count) - 1;
	return p->base ? 0 : -E_NOMEM;
}

static int pool_get(struct pool *p)
{
	if (!p->free)
		return -1;
	int i = __builtin_ctzll(p->free);
	p->free &= ~(1ull << i);
	return i;
}

static u64 pool_addr(const struct pool *p, int i)
{
	return p->base + (u64)i * p->size;
}

/* The buffer index of an address the device returned, or -1. */
static int pool_index(const struct pool *p, u64 addr)
{
	if (addr < p->base || (addr - p->base) % p->size || (addr - p->base) / p->size >= p->count)
		return -1;
	return (addr - p->base) / p->size;
}

static void pool_put(struct pool *p, int i)
{
	p->free |= 1ull << i;
}

/* ---- control queue ---- */

static void print_name(char *dst, size_t cap, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < cap && src[i]; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = 0;
}

/* Reclaim control messages the device has read. */
static void ctrl_tx_reap(void)
{
	u64 addr;
	u32 len;

	while (virtq_get_used(&vc.ctrl_tx, &addr, &len) >= 0) {
		int i = pool_index(&vc.ctrl_txp, addr);
		if (i >= 0)
			pool_put(&vc.ctrl_txp, i);
	}
}

static int ctrl_send(u32 id, u16 event, u16 value)
{
	ctrl_tx_reap();
	int i = pool_get(&vc.ctrl_txp);
	if (i < 0) {
		kprintf("vcon: the device is not taking control messages\n");
		return -E_BUSY;
	}
	struct virtio_console_control *m = (void *)pool_addr(&vc.ctrl_txp, i);
	m->id = id;
	m->event = event;
	m->value = value;
	virtq_add(&vc.ctrl_tx, virt_to_phys(m), sizeof(*m), false);
	virtq_kick(&vc.ctrl_tx);

	/* Wait until the device has read it, so that what follows (data on
	 * the port) comes after it. */
	u64 end = rdtsc() + virtio_ms_to_tsc(CTRL_SEND_MS);
	while (virtq_in_flight(&vc.ctrl_tx)) {
		ctrl_tx_reap();
		if (rdtsc() > end) {
			kprintf("vcon: control message (port %u, event %u) not taken within %u ms\n",
				id, event, CTRL_SEND_MS);
			return -E_BUSY;
		}
		cpu_relax();
	}
	return 0;
}

static void handle_ctrl(const struct virtio_console_control *m, u32 len)
{
	u32 id = m->id;
	struct port *p = id < VCON_MAX_PORTS ? &vc.port[id] : NULL;

	vc.st.ctrl_msgs++;
	vc.last_msg_tsc = rdtsc();
	switch (m->event) {
	case VIRTIO_CONSOLE_DEVICE_ADD:
		/* Ports beyond the queues we set up are refused (value 0). */
		if (p && id < vc.nports) {
			memset(p, 0, sizeof(*p));
			p->added = true;
		}
		ctrl_send(id, VIRTIO_CONSOLE_PORT_READY, p && id < vc.nports);
		break;
	case VIRTIO_CONSOLE_DEVICE_REMOVE:
		if (p) {
			p->removed = true;
			p->host_open = false;
		}
		break;
	case VIRTIO_CONSOLE_CONSOLE_PORT:
		/* 5.3.6.2.2: the driver MUST answer with PORT_OPEN 1. */
		if (p)
			p->console = true;
		ctrl_send(id, VIRTIO_CONSOLE_PORT_OPEN, 1);
		break;
	case VIRTIO_CONSOLE_PORT_OPEN:
		if (p)
			p->host_open = m->value != 0;
		break;
	case VIRTIO_CONSOLE_PORT_NAME:
		/* The UTF-8 name follows the message, without a NUL. */
		if (p && len > sizeof(*m)) {
			u32 n = MIN(len - (u32)sizeof(*m), (u32)VCON_NAME_MAX - 1);
			memcpy(p->name, m + 1, n);
			p->name[n] = 0;
			p->named = true;
		}
		break;
	default:			/* RESIZE, and events from the future */
		break;
	}
}

/*
 * Handle every control message the device has sent; returns how many.
 * Each buffer goes back to the device, published, before its message is
 * handled: handling sends messages (PORT_READY) that make the device send
 * more (PORT_NAME, PORT_OPEN), and QEMU drops those if it finds no buffer.
 */
static int ctrl_poll(void)
{
	static u8 msg[VCON_CTRL_BUF_SIZE] __attribute__((aligned(8)));
	u64 addr;
	u32 len;
	int n = 0;

	if (!vc.multiport)
		return 0;
	while (virtq_get_used(&vc.ctrl_rx, &addr, &len) >= 0) {
		if (pool_index(&vc.ctrl_rxp, addr) < 0)
			continue;
		len = MIN(len, vc.ctrl_rxp.size);
		memcpy(msg, (void *)addr, len);
		virtq_add(&vc.ctrl_rx, addr, vc.ctrl_rxp.size, true);
		virtq_kick(&vc.ctrl_rx);
		if (len >= sizeof(struct virtio_console_control))
			handle_ctrl((struct virtio_console_control *)msg, len);
		n++;
	}
	ctrl_tx_reap();
	return n;
}

/* ---- bring-up ---- */

static struct pci_dev *find_device(void)
{
	struct pci_dev *d = pci_find(VIRTIO_PCI_VENDOR, VIRTIO_PCI_MODERN_ID(VIRTIO_ID_CONSOLE), 0);

	return d ? d : pci_find(VIRTIO_PCI_VENDOR, VIRTIO_PCI_CONSOLE_TRANSITIONAL, 0);
}

static bool preferred(const struct port *p)
{
	return p->added && !p->removed && p->named && !strcmp(p->name, VCON_PORT_NAME);
}

/* Collect DEVICE_ADD / PORT_NAME / PORT_OPEN until the preferred port is
 * named, or the device has been quiet for SETTLE_MS, or DISCOVER_MS. */
static void discover_ports(void)
{
	u64 start = rdtsc(), settle = virtio_ms_to_tsc(SETTLE_MS);

	vc.last_msg_tsc = start;
	for (;;) {
		ctrl_poll();
		bool any = false, found = false;
		for (u32 i = 0; i < vc.nports; i++) {
			any |= vc.port[i].added && !vc.port[i].removed;
			found |= preferred(&vc.port[i]);
		}
		u64 now = rdtsc();
		if (found || (any && now - vc.last_msg_tsc > settle) ||
		    now - start > virtio_ms_to_tsc(DISCOVER_MS))
			return;
		cpu_relax();
	}
}

static int choose_port(void)
{
	if (!vc.multiport) {
		vc.port[0] = (struct port){ .added = true, .host_open = true };
		return 0;
	}
	for (u32 i = 0; i < vc.nports; i++)
		if (preferred(&vc.port[i]))
			return i;
	for (u32 i = 0; i < vc.nports; i++)
		if (vc.port[i].added && !vc.port[i].removed)
			return i;
	return -1;
}

static int setup_queues(void)
{
	int rc;

	if (vc.multiport) {
		if ((rc = virtq_init(&vc.vd, &vc.ctrl_rx, CTRL_RXQ, VCON_QUEUE_SIZE)) ||
		    (rc = virtq_init(&vc.vd, &vc.ctrl_tx, CTRL_TXQ, VCON_QUEUE_SIZE)))
			return rc;
	}
	for (u32 p = 0; p < vc.nports; p++) {
		if ((rc = virtq_init(&vc.vd, &vc.rxq[p], PORT_RXQ(p), VCON_QUEUE_SIZE)) ||
		    (rc = virtq_init(&vc.vd, &vc.txq[p], PORT_TXQ(p), VCON_QUEUE_SIZE)))
			return rc;
	}
	if (vc.txq[0].size < VCON_TX_BUFS || vc.rxq[0].size < VCON_RX_BUFS)
		return -E_RANGE;
	return 0;
}

static void free_queue(struct virtq *q)
{
	if (q->mem)
		pmm_free(q->mem, q->pages);
	q->mem = 0;
}

static void free_pool(struct pool *p)
{
	if (p->base)
		pmm_free(p->base, ALIGN_UP((u64)p->size * p->count, PAGE_SIZE) / PAGE_SIZE);
	p->base = 0;
}

/* Give up: stop the device (reset), so that it no longer touches our
 * memory, then free that memory and mark the device FAILED (2.1). */
static int fail(const char *why, int rc)
{
	char name[16];

	kprintf("vcon: %s %s (error %d); virtio-console not available\n",
		pci_name(vc.vd.pci, name, sizeof(name)), why, rc);
	if (virtio_reset(&vc.vd) == 0) {
		free_queue(&vc.ctrl_rx);
		free_queue(&vc.ctrl_tx);
		for (u32 i = 0; i < VCON_MAX_PORTS; i++) {
			free_queue(&vc.rxq[i]);
			free_queue(&vc.txq[i]);
		}
		free_pool(&vc.tx);
		free_pool(&vc.rx);
		free_pool(&vc.ctrl_rxp);
		free_pool(&vc.ctrl_txp);
	}
	virtio_fail(&vc.vd);
	return -E_NODEV;
}

int vcon_init(void)
{
	struct pci_dev *pci;
	u32 v;
	int rc;

	if (vc.up)
		return 0;
	if (pci_method() == PCI_METHOD_NONE && pci_init() < 0) {
		kprintf("vcon: no PCI bus: no virtio-console\n");
		return -E_NODEV;
	}
	pci = find_device();
	if (!pci) {
		kprintf("vcon: no virtio-console device (PCI %04x:%04x); in QEMU add "
			"-device virtio-serial-pci,disable-legacy=on -chardev file,id=vc0,path=FILE "
			"-device virtserialport,chardev=vc0,name=%s\n", VIRTIO_PCI_VENDOR,
			VIRTIO_PCI_MODERN_ID(VIRTIO_ID_CONSOLE), VCON_PORT_NAME);
		return -E_NODEV;
	}
	memset(&vc, 0, sizeof(vc));
	vc.cur = vc.fill_buf = vc.rx_cur = -1;
	if (virtio_pci_open(pci, &vc.vd))
		return -E_NODEV;
	if (virtio_negotiate(&vc.vd, VIRTIO_FEATURE(VIRTIO_CONSOLE_F_MULTIPORT)))
		return -E_NODEV;
	vc.multiport = vc.vd.features & VIRTIO_FEATURE(VIRTIO_CONSOLE_F_MULTIPORT);
	vc.max_nr_ports = 1;
	if (vc.multiport) {
		if ((rc = virtio_cfg_read(&vc.vd, VCON_CFG_MAX_NR_PORTS, 4, &v)))
			return fail("has no readable max_nr_ports", rc);
		vc.max_nr_ports = v;
	}
	vc.nports = MIN(vc.max_nr_ports, (u32)VCON_MAX_PORTS);
	if (!vc.nports)
		return fail("reports max_nr_ports 0", -E_RANGE);
	if ((rc = setup_queues()))
		return fail("could not set up its virtqueues", rc);
	if ((rc = pool_init(&vc.tx, VCON_TX_BUF_SIZE, VCON_TX_BUFS)) ||
	    (rc = pool_init(&vc.rx, VCON_RX_BUF_SIZE, VCON_RX_BUFS)) ||
	    (vc.multiport &&
	     ((rc = pool_init(&vc.ctrl_rxp, VCON_CTRL_BUF_SIZE,
			      MIN(vc.ctrl_rx.size, (u16)VCON_CTRL_RX_BUFS))) ||
	      (rc = pool_init(&vc.ctrl_txp, sizeof(struct virtio_console_control),
			      MIN(vc.ctrl_tx.size, (u16)VCON_CTRL_TX_SLOTS))))))
		return fail("could not allocate buffers", rc);
	virtio_driver_ok(&vc.vd);

	if (vc.multiport) {
		for (int i; (i = pool_get(&vc.ctrl_rxp)) >= 0; )
			virtq_add(&vc.ctrl_rx, pool_addr(&vc.ctrl_rxp, i), vc.ctrl_rxp.size, true);
		virtq_kick(&vc.ctrl_rx);
		/* 5.3.6.2.2: the driver MUST send DEVICE_READY (value 1: success). */
		if ((rc = ctrl_send(0, VIRTIO_CONSOLE_DEVICE_READY, 1)))
			return fail("did not take DEVICE_READY", rc);
		discover_ports();
	}
	int p = choose_port();
	if (p < 0)
		return fail("announced no ports (add -device virtserialport,...)", -E_NOENT);
	vc.cur = p;

	/* Open the port: receive buffers first, then PORT_OPEN. */
	for (int i; (i = pool_get(&vc.rx)) >= 0; )
		virtq_add(&vc.rxq[p], pool_addr(&vc.rx, i), vc.rx.size, true);
	virtq_kick(&vc.rxq[p]);
	if (vc.multiport && (rc = ctrl_send(p, VIRTIO_CONSOLE_PORT_OPEN, 1)))
		return fail("did not take PORT_OPEN", rc);
	/* The host's PORT_OPEN, if it is connected, follows PORT_READY closely;
	 * give it the settle time so the first write does not miss it. */
	u64 end = rdtsc() + virtio_ms_to_tsc(SETTLE_MS);
	while (!vc.port[p].host_open && rdtsc() < end)
		ctrl_poll();

	char name[16], pname[VCON_NAME_MAX];
	print_name(pname, sizeof(pname), vc.port[p].name);
	kprintf("vcon: %s port %d%s%s%s%s, host %s; %u ports max, queue size %u, "
		"%u control buffers, %u tx buffers of %u KiB\n", pci_name(pci, name, sizeof(name)), p,
		vc.port[p].named ? " \"" : "", pname, vc.port[p].named ? "\"" : " (unnamed)",
		vc.multiport && !preferred(&vc.port[p]) ? " (no port is named " VCON_PORT_NAME ")" : "",
		vc.port[p].host_open ? "connected" : "not connected", vc.max_nr_ports,
		vc.txq[p].size, vc.ctrl_rxp.count, VCON_TX_BUFS, VCON_TX_BUF_SIZE / 1024);
	vc.up = true;
	return 0;
}

bool vcon_ready(void)
{
	return vc.up;
}

/* ---- data ---- */

/*
 * memcpy with 8-byte moves. Under QEMU TCG every iteration of a string
 * instruction costs about the same whatever its width, so this runs ~8x
 * faster there than the kernel's rep movsb memcpy (which was 65% of the
 * bulk write time); on hardware both are fast.
 */
static void copy8(void *dst, const void *src, size_t n)
{
	size_t q = n / 8, r = n % 8;

	asm volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(q) : : "memory");
	asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(r) : : "memory");
}

/* Reclaim transmit buffers the device has consumed; returns how many. */
static int tx_reap(void)
{
	u64 addr;
	u32 len;
	int n = 0;

	while (virtq_get_used(&vc.txq[vc.cur], &addr, &len) >= 0) {
		int i = pool_index(&vc.tx, addr);
		vc.stuck = false;
		if (i < 0)
			continue;
		vc.st.bytes_written += vc.tx.len[i];
		vc.st.buffers++;
		pool_put(&vc.tx, i);
		n++;
	}
	return n;
}

/* Hand the buffer being filled to the device (not yet notified). */
static void tx_post_fill(void)
{
	virtq_add(&vc.txq[vc.cur], pool_addr(&vc.tx, vc.fill_buf), vc.fill_len, false);
	vc.tx.len[vc.fill_buf] = vc.fill_len;
	vc.fill_buf = -1;
	vc.fill_len = 0;
}

/* Why the port cannot take data now: 0, -E_NODEV, -E_NOENT or -E_BUSY
 * (a host that stopped taking data is not waited for again until it
 * returns a buffer: a stuck host costs one timeout, not one per call). */
static int port_state(void)
{
	const struct port *p = &vc.port[vc.cur];

	if (p->removed)
		return -E_NODEV;
	if (vc.stuck) {
		vc.st.timeouts++;
		return -E_BUSY;
	}
	if (!p->host_open) {
		/* QEMU discards what a port with no host side is sent: refuse,
		 * and drop what was waiting in the fill buffer. */
		if (vc.fill_buf >= 0) {
			pool_put(&vc.tx, vc.fill_buf);
			vc.fill_buf = -1;
			vc.fill_len = 0;
		}
		vc.st.refused++;
		return -E_NOENT;
	}
	return 0;
}

/*
 * Wait, bounded, until `done()` holds, reaping transmit buffers and
 * following control messages. The timeout counts from the last progress
 * (a buffer coming back). Returns 0, -E_BUSY, or port_state()'s error.
 */
static int tx_wait(bool (*done)(void), bool is_stall)
{
	u64 timeout = virtio_ms_to_tsc(vc.timeout_ms ? vc.timeout_ms : VCON_TIMEOUT_MS);
	u64 last = rdtsc();
	bool stalled = false;

	virtq_kick(&vc.txq[vc.cur]);
	for (;;) {
		if (tx_reap())
			last = rdtsc();
		if (done())
			return 0;
		if (is_stall && !stalled) {
			vc.st.stalls++;
			stalled = true;
		}
		ctrl_poll();
		int rc = port_state();
		if (rc)
			return rc;
		if (rdtsc() - last > timeout) {
			vc.st.timeouts++;
			vc.stuck = true;
			return -E_BUSY;
		}
		cpu_relax();
	}
}

static bool tx_has_free(void) { return vc.tx.free != 0; }
static bool tx_all_back(void) { return virtq_in_flight(&vc.txq[vc.cur]) == 0; }

int vcon_queue(const void *buf, size_t len)
{
	const u8 *src = buf;
	bool posted = false;
	int rc;

	if (!vc.up)
		return -E_NODEV;
	ctrl_poll();
	tx_reap();
	if ((rc = port_state()))
		return rc;
	while (len) {
		if (vc.fill_buf < 0) {
			if (!tx_has_free()) {
				/* Every buffer is with the device: notify and wait. */
				if ((rc = tx_wait(tx_has_free, true)))
					return rc;
				posted = false;
			}
			vc.fill_buf = pool_get(&vc.tx);
			vc.fill_len = 0;
		}
		u32 n = MIN(len, (size_t)(vc.tx.size - vc.fill_len));
		copy8((u8 *)pool_addr(&vc.tx, vc.fill_buf) + vc.fill_len, src, n);
		vc.fill_len += n;
		src += n;
		len -= n;
		if (vc.fill_len == vc.tx.size) {
			tx_post_fill();
			posted = true;
		}
	}
	if (posted)
		virtq_kick(&vc.txq[vc.cur]);
	return 0;
}

int vcon_flush(void)
{
	int rc;

	if (!vc.up)
		return -E_NODEV;
	if ((rc = port_state()))
		return rc;
	if (vc.fill_buf >= 0 && vc.fill_len)
		tx_post_fill();
	tx_reap();
	if (tx_all_back())
		return 0;
	return tx_wait(tx_all_back, false);
}

int vcon_write(const void *buf, size_t len)
{
	int rc = vcon_queue(buf, len);

	return rc ? rc : vcon_flush();
}

int vcon_read(void *buf, size_t cap)
{
	u8 *dst = buf;
	size_t got = 0;
	bool repost = false;

	if (!vc.up)
		return -E_NODEV;
	ctrl_poll();
	struct virtq *q = &vc.rxq[vc.cur];
	cap = MIN(cap, (size_t)0x7fffffff);
	while (got < cap) {
		if (vc.rx_cur < 0) {
			u64 addr;
			u32 len;
			if (virtq_get_used(q, &addr, &len) < 0)
				break;
			int i = pool_index(&vc.rx, addr);
			if (i < 0)
				continue;
			vc.rx_cur = i;
			vc.rx_off = 0;
			vc.rx_len = MIN(len, vc.rx.size);
		}
		u32 n = MIN(cap - got, (size_t)(vc.rx_len - vc.rx_off));
		memcpy(dst + got, (u8 *)pool_addr(&vc.rx, vc.rx_cur) + vc.rx_off, n);
		got += n;
		vc.rx_off += n;
		if (vc.rx_off == vc.rx_len) {
			virtq_add(q, pool_addr(&vc.rx, vc.rx_cur), vc.rx.size, true);
			vc.rx_cur = -1;
			repost = true;
		}
	}
	if (repost)
		virtq_kick(q);
	vc.st.bytes_read += got;
	return got;
}

void vcon_set_timeout_ms(u32 ms)
{
	vc.timeout_ms = ms;
}

bool vcon_host_connected(void)
{
	if (vc.up)
		ctrl_poll();
	return vc.up && vc.port[vc.cur].host_open;
}

const char *vcon_port_name(void)
{
	return vc.up ? vc.port[vc.cur].name : "";
}

int vcon_port(void)
{
	return vc.up ? vc.cur : -1;
}

void vcon_get_stats(struct vcon_stats *out)
{
	*out = vc.st;
	out->kicks = vc.up ? vc.txq[vc.cur].kicks : 0;
}
