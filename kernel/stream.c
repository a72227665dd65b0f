/*
 * stream.c — the drain: records from the per-CPU rings, COBS-framed with a
 * CRC (ringbuf/wire.c, include/uapi/wire.h), onto the UART or virtio-console.
 *
 * The drain is the rings' consumer (ringbuf.h): it reads records with the
 * reader's acquire ordering and releases them (data_tail) only after their
 * frames were handed to the transport, so a record is either on the wire
 * or still in the ring, never in between. It runs at run end, and during a
 * run from the run tick on the boot CPU (pmu/profile.c: the APIC timer on
 * every CPU of a run) when a ring has crossed its watermark — never inside
 * an NMI.
 *
 * One lock covers all output (the console's, kernel/console.c): frames
 * from the drain and console text never interleave on the wire. A timer
 * drain that finds the output busy skips that tick rather than wait.
 *
 * Pacing (pace=BAUD) holds the UART to a real line's rate, 10 bits a byte,
 * so QEMU's otherwise instant 16550 behaves like a serial cable and ring
 * overflow (LOST records) can be exercised.
 */
#include "kernel/kernel.h"
#include "kernel/console.h"
#include "kernel/platform/apic.h"
#include "kernel/stream.h"
#include "kernel/trap.h"
#include "kernel/platform/uart.h"
#include "kernel/dev/virtio.h"
#include "ringbuf/wire.h"
#include "pmu/pmu.h"
#include "ringbuf/ringbuf.h"

#define MAX_STREAM_CPUS	64
#define STAGE_SIZE	(128u << 10)	/* records per encode pass; > 2 * BP_RECORD_MAX */

static enum stream_transport transport;
static bool active;
static u64 pace_ticks_per_byte, pace_next;
static struct wire_enc enc[MAX_STREAM_CPUS];
static struct stream_stats stats;

static u8 stage[STAGE_SIZE] __attribute__((aligned(8)));
static u8 out[WIRE_ENC_OUT_MIN];
static u8 recbuf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));

int stream_parse(const char *s, enum stream_transport *t)
{
	if (!strcmp(s, "off"))
		*t = STREAM_OFF;
	else if (!strcmp(s, "uart"))
		*t = STREAM_UART;
	else if (!strcmp(s, "virtio"))
		*t = STREAM_VIRTIO;
	else
		return -1;
	return 0;
}

enum stream_transport stream_transport(void) { return transport; }
bool stream_active(void) { return active; }
void stream_get_stats(struct stream_stats *o) { *o = stats; }

/* Queue bytes for the transport; tx_flush() hands them over. virtio is
 * queued so a drain pass costs one notification round trip (~100 us in
 * QEMU), not one per frame. */
static void tx(const void *p, size_t n)
{
	stats.bytes += n;
	if (transport == STREAM_VIRTIO) {
		if (vcon_queue(p, n) < 0)
			stats.write_errors++;
		return;
	}
	if (!pace_ticks_per_byte) {
		uart_write_raw(p, n);
		return;
	}
	const u8 *b = p;
	for (size_t i = 0; i < n; i++) {
		while ((s64)(rdtsc() - pace_next) < 0)
			cpu_relax();
		uart_write_raw(&b[i], 1);
		pace_next += pace_ticks_per_byte;
	}
}

/* Wait until the transport has taken everything: a record is released
 * from its ring only after this. */
static void tx_flush(void)
{
	if (transport == STREAM_VIRTIO) {
		if (vcon_flush() < 0)
			stats.write_errors++;
	} else {
		uart_flush();
	}
}

/* The MC146818 RTC behind the CMOS index/data ports (date and time). */
#define CMOS_INDEX	0x70
#define CMOS_DATA	0x71
#define CPUID_1_ECX_RDRAND	(1u << 30)

/* A 64-bit mix (the splitmix64 finalizer): every input bit moves the result. */
static u64 mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * This boot's identity (uapi/wire.h §2): RDRAND if the CPU has it, the
 * TSC, and the RTC's date and time (which differ between boots even under
 * QEMU -icount, where the TSC counts instructions). Never 0.
 */
static u32 boot_id_make(void)
{
	static const u8 rtc_regs[] = { 0x00, 0x02, 0x04, 0x07, 0x08, 0x09 };
	u32 a, b, c, d;
	u64 h = mix64(rdtsc());

	for (size_t i = 0; i < ARRAY_SIZE(rtc_regs); i++) {
		outb(CMOS_INDEX, rtc_regs[i]);	/* bit 7 clear: NMIs stay enabled */
		h = mix64(h ^ ((u64)inb(CMOS_DATA) << (8 * i)));
	}
	cpuid(1, &a, &b, &c, &d);
	if (c & CPUID_1_ECX_RDRAND) {
		u64 r;
		for (int i = 0; i < 10; i++)
			if (rdrand64(&r)) {
				h = mix64(h ^ r);
				break;
			}
	}
	h = mix64(h ^ rdtsc());
	return (u32)(h ^ (h >> 32)) ? (u32)(h ^ (h >> 32)) : 1;
}

void stream_init(enum stream_transport t, u32 pace_baud)
{
	u32 boot = boot_id_make();

	transport = t;
	if (t == STREAM_VIRTIO && vcon_init()) {
		kprintf("stream: no virtio-console port (QEMU: -device virtio-serial-pci,"
			"disable-legacy=on -device virtserialport,name=bareperf.0,...); "
			"streaming on the UART instead\n");
		transport = STREAM_UART;
	}
	if (pace_baud && tsc_hz)
		pace_ticks_per_byte = tsc_hz * 10 / pace_baud;
	for (u32 i = 0; i < MAX_STREAM_CPUS; i++) {
		struct wire_enc_config c = { .cpu = i, .boot = boot };
		wire_encoder_init(&enc[i], &c);
	}
	if (transport != STREAM_OFF)
		kprintf("stream: %s%s, boot %08x\n", transport == STREAM_UART ?
			"framed records on the UART" : "framed records on virtio-console",
			pace_baud ? ", paced" : "", boot);
}

/* The console's sink while the stream is active (console_set_sink). */
static void stream_console(const char *s, size_t n)
{
	size_t done = 0, used;

	if (!active)
		return;
	while (done < n) {
		size_t w = wire_encode_bytes(&enc[this_cpu_id()], WIRE_CH_CONSOLE, s + done,
					     n - done, &used, out, sizeof(out));
		tx(out, w);
		done += used;
		if (!used)
			break;
	}
	if (transport == STREAM_VIRTIO)
		tx_flush();
}

void stream_start(void)
{
	if (transport == STREAM_OFF || active)
		return;
	kprintf("stream: starting; what follows is framed (bareperf record decodes it)\n");
	uart_flush();
	pace_next = rdtsc();
	active = true;
	console_set_sink(stream_console, transport != STREAM_UART);
	/* The CONSOLE channel's first frame: the stream's leading 0x00 is
	 * written by the encoder. On the virtio transport the UART keeps
	 * the plain console as well. */
}

/*
 * AUX data (instruction traces): the bytes below aux_head (C),
 * sent as AUX frames that carry their position, then released (D) once
 * their frames went to the transport, as records are. The host pairs them
 * with the AUX records by position (uapi/wire.h §3): we send up to
 * aux_head, which is always the end of the last committed AUX record.
 */
static void drain_aux(u32 cpu, struct bp_ring_reader *r)
{
	u64 head, tail;

	if (!r->aux)
		return;
	head = bp_ring_aux_head(r);
	tail = r->ctl->aux_tail;		/* ours: the consumer writes it */
	if (tail == head)
		return;
	while (tail != head) {
		u64 pos = tail & (r->aux_size - 1), len = MIN(head - tail, r->aux_size - pos);
		size_t used, w = wire_encode_aux(&enc[cpu], tail, r->aux + pos, len, &used, out,
						 sizeof(out));
		tx(out, w);
		if (!used)
			break;
		tail += used;
	}
	tx_flush();
	bp_ring_aux_release(r, tail);
}

/* Send the records of one ring: stage whole records, encode, send, then
 * release them; then its AUX data. */
static void drain_ring(u32 cpu, struct bp_ring *rb)
{
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	/* The AUX area, if any, is part of the ring's memory. */
	u64 size = rb->ctl->aux_size ? rb->ctl->aux_offset + rb->ctl->aux_size :
		   (u64)BP_RING_PAGE_SIZE + rb->data_size;

	if (bp_ring_reader_init(&r, (u8 *)rb->ctl, size))
		return;
	/* One data_head snapshot per pass: a producer faster than the link
	 * must not keep a pass going for ever. */
	bp_ring_read_begin(&r);
	for (;;) {
		size_t len = 0;
		while (len + BP_RECORD_MAX <= sizeof(stage) &&
		       bp_ring_read_next(&r, &rec, recbuf, sizeof(recbuf)) == 1) {
			memcpy(stage + len, rec, rec->size);
			len += rec->size;
			stats.records++;
		}
		if (!len)
			break;
		for (size_t done = 0, used; done < len; done += used) {
			size_t w = wire_encode_records(&enc[cpu], stage + done, len - done, &used,
						       out, sizeof(out));
			tx(out, w);
			if (!used)
				break;		/* malformed record: counted by the encoder */
		}
		tx_flush();
		bp_ring_read_end(&r);
		stats.drains++;
	}
	drain_aux(cpu, &r);
}

size_t stream_recv(void *buf, size_t cap)
{
	u8 *b = buf;
	size_t n = 0;
	int c;

	if (transport == STREAM_VIRTIO) {
		int got = vcon_read(buf, cap);
		return got > 0 ? (size_t)got : 0;
	}
	while (n < cap && (c = uart_getc()) >= 0)
		b[n++] = c;
	return n;
}

void stream_control_send(const void *msg, size_t len)
{
	size_t used;

	console_lock_output();
	size_t w = wire_encode_bytes(&enc[this_cpu_id()], WIRE_CH_CONTROL, msg, len, &used,
				     out, sizeof(out));
	tx(out, w);
	tx_flush();
	console_unlock_output();
}

void stream_restart(void)
{
	console_lock_output();
	for (u32 i = 0; i < MAX_STREAM_CPUS; i++) {
		memset(enc[i].seq, 0, sizeof(enc[i].seq));
		enc[i].started = 0;
	}
	console_unlock_output();
}

void stream_end(u32 status, bool halt)
{
	static u8 msg[sizeof(struct wire_ctl_msg) + sizeof(struct wire_end) +
		      MAX_STREAM_CPUS * WIRE_NR_CHANNELS * sizeof(struct wire_end_stream)];
	struct wire_ctl_msg m = { WIRE_CTL_END, 0 };
	struct wire_end e = { status, halt ? WIRE_END_HALT : 0, 0 };
	size_t at = sizeof(m) + sizeof(e), used;

	if (transport == STREAM_OFF)
		return;
	console_lock_output();
	if (!active) {
		/* Exiting before the stream started (a bad app name): the END
		 * still goes out framed, so the host learns the exit code. */
		uart_flush();
		pace_next = rdtsc();
		active = true;
		console_set_sink(stream_console, transport != STREAM_UART);
	}
	/* What each (channel, cpu) sent before this frame (uapi/wire.h §5). */
	for (u32 i = 0; i < MAX_STREAM_CPUS; i++)
		for (u32 ch = 0; ch < WIRE_NR_CHANNELS; ch++) {
			struct wire_end_stream es = { (u8)ch, 0, (u16)i, enc[i].seq[ch] };
			if (!enc[i].seq[ch])
				continue;
			memcpy(msg + at, &es, sizeof(es));
			at += sizeof(es);
			e.nr++;
		}
	m.len = (u16)(at - sizeof(m));
	memcpy(msg, &m, sizeof(m));
	memcpy(msg + sizeof(m), &e, sizeof(e));
	size_t w = wire_encode_bytes(&enc[this_cpu_id()], WIRE_CH_CONTROL, msg, at, &used,
				     out, sizeof(out));
	tx(out, w);
	tx_flush();
	/* A halted machine's last words are plain text again (uapi/wire.h §5). */
	if (halt) {
		active = false;
		console_set_sink(NULL, false);
	}
	console_unlock_output();
}

void stream_drain(bool from_tick)
{
	if (!active)
		return;
	if (from_tick) {
		if (!console_trylock()) {
			stats.skipped_busy++;
			return;
		}
	} else {
		console_lock_output();
	}
	for (u32 cpu = 0; cpu < profile_cpus() && cpu < MAX_STREAM_CPUS; cpu++) {
		struct bp_ring *rb = profile_ring(cpu);
		if (!rb)
			continue;
		/* Only CPU 0's ring carries EVENT_DESC: tell every encoder the
		 * run's sample_type so all CPUs' samples go compact. */
		wire_encoder_set_sample_type(&enc[cpu], profile_config()->sample_type);
		if (from_tick && !(bp_ring_wakeup_take(rb) & (BP_WAKEUP_DATA | BP_WAKEUP_AUX)))
			continue;
		drain_ring(cpu, rb);
	}
	stats.frames = 0;
	for (u32 i = 0; i < MAX_STREAM_CPUS; i++)
		stats.frames += enc[i].stats.frames;
	console_unlock_output();
}
