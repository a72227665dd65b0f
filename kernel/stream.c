/*
 * stream.c — the link: COBS frames with a CRC (wire/frame.c,
 * include/uapi/wire.h) onto the UART or virtio-console, one frame
 * numbering per CPU. Console text goes out as CONSOLE frames once the
 * stream starts, control messages as CONTROL frames; the drain
 * (ringbuf/drain.c) sends the rings' records through stream_send in this
 * CPU's numbering (stream_framer).
 *
 * One lock covers all output (the console's, kernel/console.c): frames
 * from the drain and console text never interleave on the wire.
 *
 * Pacing (pace=BAUD) holds the UART to a real line's rate, 10 bits a byte,
 * so QEMU's otherwise instant 16550 behaves like a serial cable and ring
 * overflow (LOST records) can be exercised.
 */
#include "kernel/kernel.h"
#include "kernel/console.h"
#include "kernel/stream.h"
#include "kernel/platform/uart.h"
#include "kernel/dev/virtio.h"
#include "wire/frame.h"

static enum stream_transport transport;
static bool active;
static u8 end_reason;			/* stream_end_reason */
static u64 pace_ticks_per_byte, pace_next;
static struct wire_framer framer[STREAM_MAX_CPUS];
static struct stream_stats stats;

static u8 out[WIRE_ENC_OUT_MIN];

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

void stream_get_stats(struct stream_stats *o)
{
	*o = stats;
	o->frames = 0;
	for (u32 i = 0; i < STREAM_MAX_CPUS; i++)
		o->frames += framer[i].frames;
}

struct wire_framer *stream_framer(u32 cpu)
{
	return cpu < STREAM_MAX_CPUS ? &framer[cpu] : NULL;
}

/* virtio is queued so a drain pass costs one notification round trip
 * (~100 us in QEMU), not one per frame. */
void stream_send(const void *p, size_t n)
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

void stream_flush(void)
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
	for (u32 i = 0; i < STREAM_MAX_CPUS; i++)
		wire_framer_init(&framer[i], (u16)i, boot, 0);
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
		size_t w = wire_framer_encode_bytes(&framer[this_cpu_id()], WIRE_CH_CONSOLE, s + done,
					     n - done, &used, out, sizeof(out));
		stream_send(out, w);
		done += used;
		if (!used)
			break;
	}
	if (transport == STREAM_VIRTIO)
		stream_flush();
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

	if (!console_lock_output())
		return;				/* dropped: the console says why */
	size_t w = wire_framer_encode_bytes(&framer[this_cpu_id()], WIRE_CH_CONTROL, msg, len, &used,
				     out, sizeof(out));
	stream_send(out, w);
	stream_flush();
	console_unlock_output();
}

void stream_restart(void)
{
	bool locked = console_lock_output();

	for (u32 i = 0; i < STREAM_MAX_CPUS; i++)
		wire_framer_restart(&framer[i]);
	if (locked)
		console_unlock_output();
}

void stream_end_reason(u8 reason)
{
	end_reason = reason;
}

void stream_end(u32 status, bool halt)
{
	static u8 msg[sizeof(struct wire_ctl_msg) + sizeof(struct wire_end) +
		      STREAM_MAX_CPUS * WIRE_NR_CHANNELS * sizeof(struct wire_end_stream)];
	struct wire_ctl_msg m = { WIRE_CTL_END, 0 };
	u16 flags = halt ? WIRE_END_HALT | (u16)end_reason << WIRE_END_REASON_SHIFT : 0;
	struct wire_end e = { status, flags, 0 };
	size_t at = sizeof(m) + sizeof(e), used;

	if (transport == STREAM_OFF)
		return;
	/* The END goes out even past a stuck holder: the exit must. */
	bool locked = console_lock_output();
	if (!active) {
		/* Exiting before the stream started (a bad app name): the END
		 * still goes out framed, so the host learns the exit code. */
		uart_flush();
		pace_next = rdtsc();
		active = true;
		console_set_sink(stream_console, transport != STREAM_UART);
	}
	/* What each (channel, cpu) sent before this frame (uapi/wire.h §5). */
	for (u32 i = 0; i < STREAM_MAX_CPUS; i++)
		for (u32 ch = 0; ch < WIRE_NR_CHANNELS; ch++) {
			struct wire_end_stream es = { (u8)ch, 0, (u16)i, framer[i].seq[ch] };
			if (!framer[i].seq[ch])
				continue;
			memcpy(msg + at, &es, sizeof(es));
			at += sizeof(es);
			e.nr++;
		}
	m.len = (u16)(at - sizeof(m));
	memcpy(msg, &m, sizeof(m));
	memcpy(msg + sizeof(m), &e, sizeof(e));
	size_t w = wire_framer_encode_bytes(&framer[this_cpu_id()], WIRE_CH_CONTROL, msg, at, &used,
				     out, sizeof(out));
	stream_send(out, w);
	stream_flush();
	/* A halted machine's last words are plain text again (uapi/wire.h §5). */
	if (halt) {
		active = false;
		console_set_sink(NULL, false);
	}
	if (locked)
		console_unlock_output();
}

static void stream_exit(enum exit_code code)
{
	stream_end((u32)code, true);
}
EXIT_STEP(EXIT_STREAM_END, stream_exit);
