/*
 * virtio.c — the virtio 1.x PCI transport and split virtqueues, polled.
 * Contract in kernel/dev/virtio.h; section numbers are virtio 1.2's.
 *
 * Memory ordering between this driver and the device (the device is
 * another host thread under KVM, the same thread under TCG). x86 keeps
 * stores in order and loads in order; only a store followed by a load
 * may be reordered (SDM Vol. 3A, "Memory Ordering in P6 and More Recent
 * Processor Families"). The four points, each labelled where it is used:
 *
 *   V1 (driver, 2.7.13 step 4, 2.7.13.3.1): descriptor and available-ring
 *      entries are written before avail->idx: a release store of idx.
 *      Pairs with the device reading idx before the entries.
 *   V2 (driver, 2.7.13 step 6, 2.7.13.4.1): avail->idx is globally visible
 *      before used->flags is read to decide on a notification: a full
 *      fence (the one store-load pair x86 may reorder). Pairs with the
 *      device setting VIRTQ_USED_F_NO_NOTIFY and then re-checking idx.
 *   V3 (driver, 2.7.14, 2.7.8.2): used->idx is read before the used-ring
 *      entry and the buffer contents: an acquire load of idx. Pairs with
 *      the device writing the entry and data before idx (2.7.8.2: "The
 *      device MUST set len prior to updating the used idx").
 *   V4 (driver): the Queue Notify write is an uncached MMIO store; x86
 *      stores are not reordered, and V2's fence precedes it anyway.
 */
#include "kernel/kernel.h"
#include "kernel/dev/pci.h"
#include "kernel/dev/virtio.h"

#define RESET_TIMEOUT_MS	5000	/* a reset is immediate; a busy host is not */
#define CFG_GENERATION_TRIES	16

u64 virtio_ms_to_tsc(u32 ms)
{
	u64 hz = tsc_hz ? tsc_hz : 4000000000ull;

	return hz / 1000 * ms;
}

static void vprint(const struct virtio_dev *vd, const char *fmt, ...) __printf(2, 3);
static void vprint(const struct virtio_dev *vd, const char *fmt, ...)
{
	char name[16], msg[200];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kprintf("virtio: %s: %s\n", pci_name(vd->pci, name, sizeof(name)), msg);
}

u8 virtio_status(struct virtio_dev *vd)
{
	return vd->common->device_status;
}

static void status_set(struct virtio_dev *vd, u8 bits)
{
	vd->common->device_status = vd->common->device_status | bits;
}

void virtio_fail(struct virtio_dev *vd)
{
	status_set(vd, VIRTIO_STATUS_FAILED);
}

void virtio_driver_ok(struct virtio_dev *vd)
{
	status_set(vd, VIRTIO_STATUS_DRIVER_OK);
}

int virtio_reset(struct virtio_dev *vd)
{
	/* 4.1.4.3.2: after writing 0, wait for a read of 0 before going on. */
	vd->common->device_status = 0;
	u64 t0 = rdtsc_ordered();
	while (vd->common->device_status != 0) {
		if (tsc_since_ns(t0, RESET_TIMEOUT_MS * 1000000ul)) {
			vprint(vd, "the device did not finish a reset within %u ms", RESET_TIMEOUT_MS);
			return -E_BUSY;
		}
		cpu_relax();
	}
	return 0;
}

/* ---- finding the structures (4.1.4) ---- */

struct found {
	bool ok;
	u8 bar;
	u32 offset, length;
	u8 cap;			/* capability offset in configuration space */
};

static const char *const cap_names[] = {
	[VIRTIO_PCI_CAP_COMMON_CFG] = "common configuration",
	[VIRTIO_PCI_CAP_NOTIFY_CFG] = "notification",
	[VIRTIO_PCI_CAP_ISR_CFG] = "ISR status",
	[VIRTIO_PCI_CAP_DEVICE_CFG] = "device configuration",
};

/* Where a structure lies, as a pointer through the identity map, or NULL
 * with the reason printed. */
static volatile u8 *map_structure(struct virtio_dev *vd, const struct found *f, u32 need,
				  const char *what)
{
	struct pci_bar bar;
	int rc = pci_bar(vd->pci, f->bar, &bar);

	if (rc || bar.io) {
		vprint(vd, "the %s structure is in BAR%u, which is %s", what, f->bar,
		       rc ? "not a usable BAR" : "an I/O BAR (not supported)");
		return NULL;
	}
	if (f->length < need || (u64)f->offset + f->length > bar.size) {
		vprint(vd, "the %s structure (offset %#x, length %u) does not fit BAR%u "
		       "(%lu bytes) or is shorter than %u bytes", what, f->offset, f->length,
		       f->bar, bar.size, need);
		return NULL;
	}
	if (!bar.mapped) {
		vprint(vd, "BAR%u at %#lx is outside the kernel's identity map", f->bar, bar.addr);
		return NULL;
	}
	return (volatile u8 *)(bar.addr + f->offset);
}

int virtio_pci_open(const struct pci_dev *pci, struct virtio_dev *vd)
{
	struct found f[VIRTIO_PCI_CAP_DEVICE_CFG + 1];

	memset(vd, 0, sizeof(*vd));
	memset(f, 0, sizeof(f));
	vd->pci = pci;

	/* The first instance of each structure we can use (4.1.4.1): vendor
	 * capabilities with a reserved type or bar are skipped, and so are
	 * structures in I/O BARs (this driver maps memory only). */
	for (u8 cap = pci_cap_find(pci, PCI_CAP_ID_VNDR, 0); cap;
	     cap = pci_cap_find(pci, PCI_CAP_ID_VNDR, cap)) {
		u8 type = pci_read8(pci, cap + VIRTIO_PCI_CAP_CFG_TYPE);
		u8 bar = pci_read8(pci, cap + VIRTIO_PCI_CAP_BAR);
		struct pci_bar b;
		if (pci_read8(pci, cap + VIRTIO_PCI_CAP_CAP_LEN) < VIRTIO_PCI_CAP_LEN_MIN)
			continue;		/* cap_len too short for struct virtio_pci_cap */
		if (type < VIRTIO_PCI_CAP_COMMON_CFG || type > VIRTIO_PCI_CAP_DEVICE_CFG ||
		    bar > VIRTIO_PCI_CAP_BAR_MAX || f[type].ok)
			continue;
		if (pci_bar(pci, bar, &b) || b.io)
			continue;
		f[type] = (struct found){
			.ok = true, .bar = bar, .cap = cap,
			.offset = pci_read32(pci, cap + VIRTIO_PCI_CAP_OFFSET),
			.length = pci_read32(pci, cap + VIRTIO_PCI_CAP_LENGTH),
		};
	}
	for (int t = VIRTIO_PCI_CAP_COMMON_CFG; t <= VIRTIO_PCI_CAP_ISR_CFG; t++) {
		if (!f[t].ok) {
			vprint(vd, "no usable %s capability: not a virtio 1.x (modern) device",
			       cap_names[t]);
			return -E_NODEV;
		}
	}

	if (pci_setup_memory(pci))
		return -E_NODEV;
	pci_enable(pci, PCI_COMMAND_INTX_DISABLE);	/* we poll */

	vd->common = (volatile struct virtio_pci_common_cfg *)map_structure(vd,
		&f[VIRTIO_PCI_CAP_COMMON_CFG], sizeof(struct virtio_pci_common_cfg),
		cap_names[VIRTIO_PCI_CAP_COMMON_CFG]);
	vd->notify_base = map_structure(vd, &f[VIRTIO_PCI_CAP_NOTIFY_CFG], 2,
					cap_names[VIRTIO_PCI_CAP_NOTIFY_CFG]);
	vd->isr = map_structure(vd, &f[VIRTIO_PCI_CAP_ISR_CFG], 1, cap_names[VIRTIO_PCI_CAP_ISR_CFG]);
	if (!vd->common || !vd->notify_base || !vd->isr)
		return -E_NODEV;
	vd->notify_len = f[VIRTIO_PCI_CAP_NOTIFY_CFG].length;
	vd->notify_mult = pci_read32(pci, f[VIRTIO_PCI_CAP_NOTIFY_CFG].cap + VIRTIO_PCI_NOTIFY_CAP_MULT);
	if (f[VIRTIO_PCI_CAP_DEVICE_CFG].ok) {
		vd->device_cfg = map_structure(vd, &f[VIRTIO_PCI_CAP_DEVICE_CFG], 1,
					       cap_names[VIRTIO_PCI_CAP_DEVICE_CFG]);
		vd->device_cfg_len = vd->device_cfg ? f[VIRTIO_PCI_CAP_DEVICE_CFG].length : 0;
	}

	/* 3.1.1 steps 1-3. */
	if (virtio_reset(vd))
		return -E_NODEV;
	status_set(vd, VIRTIO_STATUS_ACKNOWLEDGE);
	status_set(vd, VIRTIO_STATUS_DRIVER);
	vd->num_queues = vd->common->num_queues;
	return 0;
}

/* ---- features (2.2, 3.1.1 steps 4-6) ---- */

static u64 read_features(struct virtio_dev *vd)
{
	vd->common->device_feature_select = 0;
	u64 lo = vd->common->device_feature;
	vd->common->device_feature_select = 1;
	return (u64)vd->common->device_feature << 32 | lo;
}

int virtio_negotiate(struct virtio_dev *vd, u64 wanted)
{
	vd->offered = read_features(vd);
	if (!(vd->offered & VIRTIO_FEATURE(VIRTIO_F_VERSION_1))) {
		vprint(vd, "the device does not offer VIRTIO_F_VERSION_1 (features %#lx): "
		       "a legacy-only device; use disable-legacy=on or a modern device", vd->offered);
		virtio_fail(vd);
		return -E_NODEV;
	}
	/* VIRTIO_F_ACCESS_PLATFORM (6): the device then goes through the
	 * platform's DMA translation; this kernel never enables an IOMMU, so
	 * that is the identity and the addresses we give stay right. */
	vd->features = vd->offered & (wanted | VIRTIO_FEATURE(VIRTIO_F_VERSION_1) |
				      VIRTIO_FEATURE(VIRTIO_F_ACCESS_PLATFORM));
	vd->common->driver_feature_select = 0;
	vd->common->driver_feature = (u32)vd->features;
	vd->common->driver_feature_select = 1;
	vd->common->driver_feature = vd->features >> 32;
	status_set(vd, VIRTIO_STATUS_FEATURES_OK);
	/* 3.1.1 step 6: the device clears FEATURES_OK if it cannot live with
	 * the subset. */
	if (!(virtio_status(vd) & VIRTIO_STATUS_FEATURES_OK)) {
		vprint(vd, "the device refused features %#lx (offered %#lx)", vd->features, vd->offered);
		virtio_fail(vd);
		return -E_NODEV;
	}
	return 0;
}

/* ---- device configuration (2.5.1) ---- */

int virtio_cfg_read(struct virtio_dev *vd, u32 off, u32 len, u32 *val)
{
	if (!vd->device_cfg || (len != 1 && len != 2 && len != 4) || (off & (len - 1)) ||
	    off + len > vd->device_cfg_len)
		return -E_RANGE;
	for (int i = 0; i < CFG_GENERATION_TRIES; i++) {
		u8 before = vd->common->config_generation;
		volatile u8 *p = vd->device_cfg + off;
		*val = len == 4 ? *(volatile u32 *)p : len == 2 ? *(volatile u16 *)p : *p;
		if (vd->common->config_generation == before)
			return 0;
	}
	return -E_BUSY;
}

/* ---- split virtqueues ---- */

int virtq_init(struct virtio_dev *vd, struct virtq *vq, u16 index, u16 max_size)
{
	volatile struct virtio_pci_common_cfg *c = vd->common;

	memset(vq, 0, sizeof(*vq));
	vq->vd = vd;
	vq->index = index;
	if (index >= vd->num_queues)
		return -E_NOENT;
	c->queue_select = index;
	u16 size = MIN(c->queue_size, MIN(max_size, VIRTQ_MAX_SIZE));
	if (!size)
		return -E_NOENT;
	while (size & (size - 1))	/* a power of two (2.7, 4.1.4.3.2) */
		size &= size - 1;

	/* desc | avail | used, each at its alignment (2.7). */
	u64 avail_off = ALIGN_UP(sizeof(struct virtq_desc) * size, VIRTQ_AVAIL_ALIGN);
	u64 used_off = ALIGN_UP(avail_off + 6 + 2ul * size, VIRTQ_USED_ALIGN);
	u64 bytes = used_off + 6 + 8ul * size;
	vq->pages = ALIGN_UP(bytes, PAGE_SIZE) / PAGE_SIZE;
	vq->mem = pmm_alloc(vq->pages);		/* zeroed, page-aligned >= 16 */
	if (!vq->mem)
		return -E_NOMEM;
	vq->size = size;
	vq->desc = (struct virtq_desc *)vq->mem;
	vq->avail = (struct virtq_avail *)(vq->mem + avail_off);
	vq->used = (struct virtq_used *)(vq->mem + used_off);
	for (u16 i = 0; i < size; i++)
		vq->desc[i].next = i + 1;
	vq->free_head = 0;
	vq->num_free = size;
	/* We poll the used ring: ask for no used-buffer notifications (2.7.7). */
	vq->avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;

	u64 pd = virt_to_phys(vq->desc), pa = virt_to_phys(vq->avail), pu = virt_to_phys(vq->used);
	c->queue_size = size;
	c->queue_msix_vector = VIRTIO_MSI_NO_VECTOR;
	c->queue_desc_lo = (u32)pd;
	c->queue_desc_hi = pd >> 32;
	c->queue_driver_lo = (u32)pa;
	c->queue_driver_hi = pa >> 32;
	c->queue_device_lo = (u32)pu;
	c->queue_device_hi = pu >> 32;
	u64 noff = (u64)c->queue_notify_off * vd->notify_mult;
	if (noff + 2 > vd->notify_len) {
		char name[16];
		kprintf("virtio: %s: queue %u notify offset %#lx is outside the notification "
			"structure (%u bytes)\n", pci_name(vd->pci, name, sizeof(name)), index, noff,
			vd->notify_len);
		pmm_free(vq->mem, vq->pages);
		vq->mem = 0;
		return -E_RANGE;
	}
	vq->notify = (volatile u16 *)(vd->notify_base + noff);
	c->queue_enable = 1;
	return 0;
}

int virtq_add(struct virtq *vq, u64 addr, u32 len, bool writable)
{
	if (!vq->num_free || vq->broken)
		return -E_BUSY;
	u16 id = vq->free_head;
	struct virtq_desc *d = &vq->desc[id];

	vq->free_head = d->next;
	vq->num_free--;
	d->addr = addr;
	d->len = len;
	d->flags = writable ? VIRTQ_DESC_F_WRITE : 0;
	d->next = 0;
	vq->avail->ring[vq->avail_idx & (vq->size - 1)] = id;
	vq->avail_idx++;
	vq->inflight[id / 64] |= 1ull << (id % 64);
	return id;
}

void virtq_kick(struct virtq *vq)
{
	if (vq->published == vq->avail_idx)
		return;
	/* V1: the descriptors and ring entries above before idx. */
	__atomic_store_n(&vq->avail->idx, vq->avail_idx, __ATOMIC_RELEASE);
	vq->published = vq->avail_idx;
	/* V2: idx visible before the suppression flag is read. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&vq->used->flags, __ATOMIC_RELAXED) & VIRTQ_USED_F_NO_NOTIFY) {
		vq->kicks_suppressed++;
		return;
	}
	/* V4: an uncached store, after the stores above. Without
	 * VIRTIO_F_NOTIFICATION_DATA the value is the queue index (4.1.5.2). */
	*vq->notify = vq->index;
	vq->kicks++;
}

int virtq_get_used(struct virtq *vq, u64 *addr, u32 *len)
{
	if (vq->broken)
		return -E_RANGE;
	/* V3: the entry and the buffer's contents after idx. */
	u16 idx = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);
	if (idx == vq->last_used)
		return -E_NOENT;
	struct virtq_used_elem e = vq->used->ring[vq->last_used & (vq->size - 1)];
	if (e.id >= vq->size || !(vq->inflight[e.id / 64] & (1ull << (e.id % 64)))) {
		char name[16];
		kprintf("virtio: %s: queue %u: the device returned descriptor %u, which it "
			"does not own; queue disabled\n", pci_name(vq->vd->pci, name, sizeof(name)),
			vq->index, e.id);
		vq->broken = true;
		return -E_RANGE;
	}
	vq->last_used++;
	vq->inflight[e.id / 64] &= ~(1ull << (e.id % 64));
	*addr = vq->desc[e.id].addr;	/* the device never writes descriptors (2.7.5.1) */
	*len = e.len;
	vq->desc[e.id].next = vq->free_head;
	vq->free_head = e.id;
	vq->num_free++;
	return e.id;
}
