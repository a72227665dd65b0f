/*
 * virtio.h — the virtio 1.x PCI transport with split virtqueues
 * (kernel/dev/virtio.c), and the console device on top of it
 * (kernel/dev/virtio_console.c).
 *
 * Source: OASIS "Virtual I/O Device (VIRTIO) Version 1.2"; section numbers
 * below are that edition's (1.1 numbers differ: it has no 2.4 "Device
 * Reset", so e.g. 1.2 2.7 "Split Virtqueues" is 1.1 2.6).
 *
 * Modern (1.0+) devices only: VIRTIO_F_VERSION_1 is required, the legacy
 * I/O-port interface is never used. Completion is polled: no interrupts
 * (INTx is disabled in the command register, MSI-X stays off), and every
 * wait is bounded by the TSC with a clear error on expiry.
 *
 * Memory: virtqueues come from pmm_alloc (zeroed, physically contiguous,
 * identity-mapped: the address the driver writes is the address the
 * device reads). BARs are placed inside the identity map by
 * pci_setup_memory if the firmware left them unassigned or above it.
 *
 * Not NMI-safe, not reentrant: one caller at a time (the drain loop).
 */
#ifndef BAREPERF_KERNEL_VIRTIO_H
#define BAREPERF_KERNEL_VIRTIO_H

#include <stddef.h>
#include "kernel/x86.h"

struct pci_dev;

/* PCI Device Discovery (4.1.2). */
#define VIRTIO_PCI_VENDOR		0x1af4
#define VIRTIO_PCI_MODERN_ID(type)	(0x1040 + (type))	/* non-transitional */
#define VIRTIO_ID_CONSOLE		3
#define VIRTIO_PCI_CONSOLE_TRANSITIONAL	0x1003

/* Device Status Field (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE	1
#define VIRTIO_STATUS_DRIVER		2
#define VIRTIO_STATUS_DRIVER_OK		4
#define VIRTIO_STATUS_FEATURES_OK	8
#define VIRTIO_STATUS_DEVICE_NEEDS_RESET 64
#define VIRTIO_STATUS_FAILED		128

/* Reserved Feature Bits (6), as bit numbers. */
#define VIRTIO_F_VERSION_1		32
#define VIRTIO_F_ACCESS_PLATFORM	33
#define VIRTIO_FEATURE(bit)		(1ull << (bit))

/* Virtio Structure PCI Capabilities (4.1.4): struct virtio_pci_cap. */
#define VIRTIO_PCI_CAP_CAP_LEN		2	/* u8 offsets within the capability */
#define VIRTIO_PCI_CAP_CFG_TYPE		3
#define VIRTIO_PCI_CAP_BAR		4
#define VIRTIO_PCI_CAP_OFFSET		8	/* le32 */
#define VIRTIO_PCI_CAP_LENGTH		12	/* le32 */
#define VIRTIO_PCI_CAP_LEN_MIN		16
#define VIRTIO_PCI_NOTIFY_CAP_MULT	16	/* le32 notify_off_multiplier (4.1.4.4) */
#define VIRTIO_PCI_CAP_COMMON_CFG	1
#define VIRTIO_PCI_CAP_NOTIFY_CFG	2
#define VIRTIO_PCI_CAP_ISR_CFG		3
#define VIRTIO_PCI_CAP_DEVICE_CFG	4
#define VIRTIO_PCI_CAP_PCI_CFG		5
#define VIRTIO_PCI_CAP_BAR_MAX		5	/* bar values 0..5 name BARs */
#define VIRTIO_MSI_NO_VECTOR		0xffff

/* Common configuration structure layout (4.1.4.3), the 1.0 fields. */
struct virtio_pci_common_cfg {
	u32 device_feature_select;	/* rw */
	u32 device_feature;		/* ro */
	u32 driver_feature_select;	/* rw */
	u32 driver_feature;		/* rw */
	u16 config_msix_vector;		/* rw */
	u16 num_queues;			/* ro */
	u8  device_status;		/* rw; writing 0 resets */
	u8  config_generation;		/* ro */
	u16 queue_select;		/* rw */
	u16 queue_size;			/* rw: max on reset, 0 = unavailable */
	u16 queue_msix_vector;		/* rw */
	u16 queue_enable;		/* rw: write 1 only */
	u16 queue_notify_off;		/* ro */
	u32 queue_desc_lo, queue_desc_hi;	/* le64 as two le32 (4.1.3) */
	u32 queue_driver_lo, queue_driver_hi;
	u32 queue_device_lo, queue_device_hi;
};
_Static_assert(__builtin_offsetof(struct virtio_pci_common_cfg, device_status) == 0x14, "common_cfg");
_Static_assert(__builtin_offsetof(struct virtio_pci_common_cfg, queue_select) == 0x16, "common_cfg");
_Static_assert(__builtin_offsetof(struct virtio_pci_common_cfg, queue_desc_lo) == 0x20, "common_cfg");
_Static_assert(sizeof(struct virtio_pci_common_cfg) == 0x38, "common_cfg");

/* Split virtqueue layout (2.7): descriptor table, available and used rings. */
struct virtq_desc {		/* 2.7.5 */
	u64 addr;
	u32 len;
	u16 flags;
	u16 next;
};
#define VIRTQ_DESC_F_NEXT		1
#define VIRTQ_DESC_F_WRITE		2	/* device-writable (else device-readable) */
#define VIRTQ_DESC_F_INDIRECT		4

struct virtq_avail {		/* 2.7.6; used_event follows ring[] (unused here) */
	u16 flags;
	u16 idx;
	u16 ring[];
};
#define VIRTQ_AVAIL_F_NO_INTERRUPT	1

struct virtq_used_elem {
	u32 id;			/* head of the used descriptor chain */
	u32 len;		/* bytes the device wrote into the buffer */
};

struct virtq_used {		/* 2.7.8; avail_event follows ring[] (unused here) */
	u16 flags;
	u16 idx;
	struct virtq_used_elem ring[];
};
#define VIRTQ_USED_F_NO_NOTIFY		1

_Static_assert(sizeof(struct virtq_desc) == 16, "virtq_desc");
_Static_assert(sizeof(struct virtq_used_elem) == 8, "virtq_used_elem");

/* Alignment of each part (2.7, table "Virtqueue Part / Alignment / Size"). */
#define VIRTQ_DESC_ALIGN		16
#define VIRTQ_AVAIL_ALIGN		2
#define VIRTQ_USED_ALIGN		4
#define VIRTQ_MAX_SIZE			256	/* we shrink larger queues (4.1.4.3 allows it) */

/* One virtio PCI function, as found by virtio_pci_open. */
struct virtio_dev {
	const struct pci_dev *pci;
	volatile struct virtio_pci_common_cfg *common;
	volatile u8 *notify_base;	/* Notification structure (4.1.4.4) */
	u32 notify_len;
	u32 notify_mult;		/* notify_off_multiplier */
	volatile u8 *isr;		/* ISR status (4.1.4.5); reading clears it */
	volatile u8 *device_cfg;	/* device-specific configuration, or NULL */
	u32 device_cfg_len;
	u64 offered;			/* the device's feature bits */
	u64 features;			/* negotiated */
	u16 num_queues;
};

/* One split virtqueue. Buffers are single descriptors (no chains). */
struct virtq {
	struct virtio_dev *vd;
	u16 index;
	u16 size;			/* power of two, <= VIRTQ_MAX_SIZE */
	struct virtq_desc *desc;
	struct virtq_avail *avail;
	struct virtq_used *used;
	volatile u16 *notify;		/* this queue's Queue Notify address */
	u16 free_head;			/* free descriptors chained through .next */
	u16 num_free;
	u16 avail_idx;			/* next avail->idx to publish (shadow) */
	u16 published;			/* last avail->idx written */
	u16 last_used;			/* next used->ring entry to consume */
	bool broken;			/* the device returned a bad id */
	u64 mem;			/* the rings' pages */
	u32 pages;
	u64 kicks, kicks_suppressed;
	u64 inflight[VIRTQ_MAX_SIZE / 64];	/* descriptor ids the device owns */
};

/* TSC ticks in ms milliseconds (if tsc_hz is unknown, a 4 GHz guess:
 * waits then last at least as long as asked on any slower clock). */
u64 virtio_ms_to_tsc(u32 ms);

/*
 * Bring a virtio PCI function to the point of feature negotiation (3.1.1
 * steps 1-3): place its memory BARs (pci_setup_memory), enable memory
 * decoding and bus mastering, disable INTx, find the common, notify, ISR
 * and device configuration structures (the first usable instance of each,
 * 4.1.4.1), reset the device and set ACKNOWLEDGE and DRIVER. Returns 0 or
 * -E_NODEV with the reason printed ("virtio: 00:02.0: ...").
 */
int virtio_pci_open(const struct pci_dev *pci, struct virtio_dev *vd);

/*
 * Feature negotiation (3.1.1 steps 4-6, 2.2): accept the offered bits in
 * `wanted` plus VIRTIO_F_VERSION_1, which is required; set FEATURES_OK and
 * check the device kept it. Returns 0, or -E_NODEV (no VERSION_1, or the
 * device refused: FAILED is set, the reason printed).
 */
int virtio_negotiate(struct virtio_dev *vd, u64 wanted);

/*
 * Set up virtqueue `index` (4.1.5.1.3): size min(device maximum, max_size)
 * rounded down to a power of two, rings from pmm_alloc, addresses written,
 * enabled. Available-ring flags ask for no used-buffer notifications (we
 * poll). Call between virtio_negotiate and virtio_driver_ok. Returns 0,
 * -E_NOENT (the device has no such queue), -E_NOMEM.
 */
int virtq_init(struct virtio_dev *vd, struct virtq *vq, u16 index, u16 max_size);

/* DRIVER_OK (3.1.1 step 8): the device is live. */
void virtio_driver_ok(struct virtio_dev *vd);
/* FAILED (2.1): the driver gave up on the device. */
void virtio_fail(struct virtio_dev *vd);
/* Reset (write 0, wait for 0, bounded: 2.4, 4.1.4.3.2). Returns 0 or -E_BUSY. */
int virtio_reset(struct virtio_dev *vd);
u8 virtio_status(struct virtio_dev *vd);

/*
 * Read len bytes of device-specific configuration at off, consistently:
 * retried while config_generation changes (2.5.1), with accesses of the
 * field widths the PCI transport requires (4.1.3.1: 1-, 2- or 4-byte
 * aligned). len is 1, 2 or 4. Returns 0, -E_RANGE (beyond the structure)
 * or -E_BUSY (the generation never settled).
 */
int virtio_cfg_read(struct virtio_dev *vd, u32 off, u32 len, u32 *val);

/*
 * Queue one buffer of len bytes at physical address addr: device-readable,
 * or device-writable if `writable`. Not visible to the device until
 * virtq_kick. Returns the descriptor id (>= 0) or -E_BUSY (no free
 * descriptor).
 */
int virtq_add(struct virtq *vq, u64 addr, u32 len, bool writable);
/* Publish what virtq_add queued and notify the device unless it asked
 * not to be (2.7.13, 2.7.10). */
void virtq_kick(struct virtq *vq);
/*
 * Take one used buffer (2.7.14): returns its descriptor id and sets *addr
 * and *len (bytes the device wrote), freeing the descriptor; -E_NOENT if
 * none is ready; -E_RANGE if the device returned an id it does not own
 * (the queue is then marked broken and returns -E_RANGE from then on).
 */
int virtq_get_used(struct virtq *vq, u64 *addr, u32 *len);
/* Buffers the device owns. */
static inline u16 virtq_in_flight(const struct virtq *vq) { return vq->size - vq->num_free; }

/*
 * ---- virtio_console.c: the console device (5.3) ----
 *
 * vcon_init finds the first virtio-console PCI function (1af4:1043, or
 * the transitional 1af4:1003 through its modern interface), negotiates
 * VIRTIO_CONSOLE_F_MULTIPORT when offered, sends DEVICE_READY, answers each
 * DEVICE_ADD with PORT_READY, collects PORT_NAME and PORT_OPEN, and uses
 * the port named VCON_PORT_NAME, or else the lowest-numbered port the
 * device added (without MULTIPORT: port 0). It opens that port
 * (PORT_OPEN 1), posts receive buffers, and prints one line:
 *   vcon: 00:02.0 port 1 "bareperf.0", host connected; 31 ports max, ...
 * QEMU: -device virtio-serial-pci,disable-legacy=on
 *       -chardev file,id=vc0,path=OUT -device virtserialport,chardev=vc0,name=bareperf.0
 */
#define VCON_PORT_NAME		"bareperf.0"
#define VIRTIO_CONSOLE_F_SIZE		0	/* 5.3.3 */
#define VIRTIO_CONSOLE_F_MULTIPORT	1
#define VIRTIO_CONSOLE_F_EMERG_WRITE	2
#define VCON_TIMEOUT_MS		2000	/* default: no progress for this long is an error */
#define VCON_TX_BUF_SIZE	(64 * 1024)	/* one notification per full buffer at most */
#define VCON_TX_BUFS		16

/* 0, or -E_NODEV with a clear message (no device, no usable port, the
 * device refused). Calls pci_init if nobody has. Idempotent once up. */
int vcon_init(void);
bool vcon_ready(void);

/*
 * Send len bytes on the port and return once the device has consumed all
 * of them (vcon_queue, then vcon_flush). Returns 0; -E_NODEV (not
 * initialized, or the port was removed); -E_NOENT (the host side is not
 * connected: QEMU would discard the data, so none is sent); -E_BUSY (the
 * host stopped taking data: no buffer came back for the timeout; buffers
 * still with the device are reclaimed by later calls, and until one comes
 * back later calls fail at once with -E_BUSY instead of waiting again).
 * Each call costs a notification round trip (~100 us in QEMU with
 * ioeventfd): for many small pieces use vcon_queue and one vcon_flush.
 */
int vcon_write(const void *buf, size_t len);

/*
 * Copy len bytes into the transmit buffers; each buffer that fills
 * (VCON_TX_BUF_SIZE) goes to the device, with one notification per call.
 * Waits (bounded, as above) only when every buffer is with the device.
 * A partly filled buffer stays here until vcon_flush or until it fills.
 * Returns as vcon_write.
 */
int vcon_queue(const void *buf, size_t len);
/* Hand over the partly filled buffer and wait until the device has
 * consumed everything queued. Returns as vcon_write. */
int vcon_flush(void);

/* Non-blocking receive: copy up to cap bytes the host sent; returns the
 * count (0 if nothing is there) or -E_NODEV. */
int vcon_read(void *buf, size_t cap);

/* No progress for ms milliseconds makes vcon_write fail (0: the default). */
void vcon_set_timeout_ms(u32 ms);
/* Is the host side of the port open (the last PORT_OPEN from the device)? */
bool vcon_host_connected(void);
const char *vcon_port_name(void);	/* "" if unnamed or not up */
int vcon_port(void);			/* the port number in use, -1 if not up */

struct vcon_stats {
	u64 bytes_written;	/* consumed by the device */
	u64 buffers;		/* tx buffers consumed */
	u64 kicks;		/* notifications sent (tx queue) */
	u64 stalls;		/* waits because every tx buffer was with the device */
	u64 timeouts;		/* calls that gave up (-E_BUSY) */
	u64 refused;		/* calls refused with the host disconnected (-E_NOENT) */
	u64 bytes_read;
	u64 ctrl_msgs;		/* control messages from the device */
};
void vcon_get_stats(struct vcon_stats *out);

#endif
