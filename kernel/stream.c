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
 * Repeats on request (uapi/wire.h §3): while it sends, the stream listens
 * on the line for the host's WIRE_CTL_WILL_ASK and WIRE_CTL_REPEAT. Once
 * the host said it will ask, every framer holds the drain's periodic
 * repeats, records mostly zero go sparse, and frames grow to
 * WIRE_FRAME_TARGET_CLEAN, each open across the
 * drain's calls of the encoder (wire_framer.span) until it is full or
 * the drain flushes (stream_flush closes it: records are released only
 * after); a REPEAT sends the descriptors the framers kept (struct
 * wire_descs), on CPU 0's numbering, and brings frames back to
 * WIRE_FRAME_TARGET, closed within each call.
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
#include "wire/record.h"

#define REPEAT_GAP_US	100000u		/* at most one repeat on request per this */
#define LINGER_US	200000u		/* listening before the last END */
#define KEPT_SIZE	(32u << 10)	/* as the drain's copy: 64 CPUs' and a few events' */
/* An open RECORDS frame of WIRE_FRAME_TARGET_CLEAN payload bytes, its last
 * item and COBS: a larger record goes in a frame of its own. */
#define SPAN_SIZE	(2u << 10)

static enum stream_transport transport;
static bool active;
static u8 end_reason;			/* stream_end_reason */
static u64 pace_ticks_per_byte, pace_next;
static struct wire_framer framer[STREAM_MAX_CPUS];
static struct stream_stats stats;

static u8 out[WIRE_ENC_OUT_MIN];

/* The host's side of repeats (uapi/wire.h §3). */
static bool listening;			/* the line is ours to read (not control=1's) */
static bool host_asks;			/* WIRE_CTL_WILL_ASK came */
static bool damage_seen;		/* a WIRE_CTL_REPEAT came: small frames from now on */
static bool host_news;			/* ... not yet applied to the framers */
static bool repeat_wanted, repeating;
static u64 repeat_last;			/* TSC of the last repeat sent on request */
static u8 host_bytes[64];			/* a frame from the host being received */
static size_t host_len;
static bool host_over;
static u8 kept_buf[KEPT_SIZE] __attribute__((aligned(8)));
static struct wire_descs kept = { kept_buf, sizeof(kept_buf), 0, 0 };
static struct wire_enc repeat_enc;
static u8 repeat_out[WIRE_ENC_OUT_MIN];
static u8 span[STREAM_MAX_CPUS][SPAN_SIZE];

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

static void serve_repeat(void);
static void transport_send(const void *p, size_t n);

/* The RECORDS frames open in the framers, closed and sent: before any
 * other frame, and before the transport is flushed. */
static void finish_open_frames(void)
{
	for (u32 i = 0; i < STREAM_MAX_CPUS; i++)
		if (framer[i].span_open)
			transport_send(out, wire_framer_finish(&framer[i], out, sizeof(out)));
}

/* virtio is queued so a drain pass costs one notification round trip
 * (~100 us in QEMU), not one per frame. p holds whole frames: a repeat
 * asked for goes out after them. */
void stream_send(const void *p, size_t n)
{
	transport_send(p, n);
	serve_repeat();
}

static void transport_send(const void *p, size_t n)
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
	finish_open_frames();
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

/* Every framer's frame size and hold, after what the host said; not while
 * the drain sends its own repeat (it puts framer 0's back after). */
static void framers_follow_host(void)
{
	if (framer[0].flags & WIRE_F_REPEAT) {
		host_news = true;
		return;
	}
	host_news = false;
	finish_open_frames();
	for (u32 i = 0; i < STREAM_MAX_CPUS; i++) {
		bool clean = host_asks && !damage_seen;
		framer[i].hold_repeats = host_asks;
		framer[i].frame_target = clean ? WIRE_FRAME_TARGET_CLEAN : WIRE_FRAME_TARGET;
		framer[i].sparse = clean;
		framer[i].span = clean ? span[i] : NULL;
		framer[i].span_cap = sizeof(span[i]);
	}
}

/* One frame from the line: the host's word about repeats, or not ours. */
static void heard(const struct wire_frame *f)
{
	struct wire_ctl_msg m;

	if (f->channel != WIRE_CH_CONTROL || f->cpu != WIRE_CPU_HOST || f->len != sizeof(m))
		return;
	memcpy(&m, f->payload, sizeof(m));
	if (m.len)
		return;
	if (m.type == WIRE_CTL_WILL_ASK && !host_asks) {
		host_asks = true;
		framers_follow_host();
	} else if (m.type == WIRE_CTL_REPEAT) {
		repeat_wanted = true;
		if (!damage_seen) {
			damage_seen = true;
			framers_follow_host();
		}
	}
}

/* What the host sent since the last look, without waiting. */
static void listen(void)
{
	u8 in[32], unpacked[sizeof(host_bytes)];
	size_t got;

	if (!listening)
		return;
	while ((got = stream_recv(in, sizeof(in)))) {
		for (size_t i = 0; i < got; i++) {
			struct wire_frame f;
			if (in[i] != WIRE_DELIM) {
				if (host_len < sizeof(host_bytes))
					host_bytes[host_len++] = in[i];
				else
					host_over = true;	/* longer than the host's words */
				continue;
			}
			if (host_len && !host_over &&
			    !wire_frame_unpack(host_bytes, host_len, unpacked, sizeof(unpacked), &f))
				heard(&f);
			host_len = 0;
			host_over = false;
		}
	}
}

/*
 * The descriptors the framers kept, once, flagged WIRE_F_REPEAT, one
 * record a frame on CPU 0's numbering: when the host asked, after the
 * frames being sent, at most once in REPEAT_GAP_US. With the output lock
 * held (every stream_send is).
 */
static void serve_repeat(void)
{
	struct wire_framer *l = &framer[0];

	listen();
	if (host_news)
		framers_follow_host();
	if (!repeat_wanted || repeating || !kept.len ||
	    (repeat_last && rdtsc() - repeat_last < tsc_hz / 1000000 * REPEAT_GAP_US))
		return;
	/* Inside the drain's own repeat (held) framer 0 is set for it: put
	 * that back after. */
	u8 flags = l->flags;
	u32 target = l->frame_target;
	bool hold = l->hold_repeats;

	repeating = true;
	repeat_wanted = false;
	finish_open_frames();		/* framer 0's seq goes on from it */
	l->flags = WIRE_F_REPEAT;
	l->frame_target = 1;		/* a second record never fits */
	l->hold_repeats = false;
	for (size_t done = 0, used; done < kept.len; done += used) {
		size_t w = wire_encode_records(&repeat_enc, kept.buf + done, kept.len - done, &used,
					       repeat_out, sizeof(repeat_out));
		transport_send(repeat_out, w);
		if (!used)
			break;
	}
	l->flags = flags;
	l->frame_target = target;
	l->hold_repeats = hold;
	repeat_last = rdtsc() | 1;
	stats.repeats_asked++;
	repeating = false;
}

void stream_listen(bool on)
{
	listening = on;
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
	for (u32 i = 0; i < STREAM_MAX_CPUS; i++) {
		wire_framer_init(&framer[i], (u16)i, boot, 0);
		framer[i].keep = &kept;
	}
	struct wire_enc_config rc = { .cpu = 0 };
	wire_encoder_init(&repeat_enc, &rc);
	wire_encoder_use_framer(&repeat_enc, &framer[0]);
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
	finish_open_frames();
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
	listening = true;
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
	finish_open_frames();
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
	finish_open_frames();
	/* A host that asks for repeats has a last chance to (uapi/wire.h §3). */
	if (halt && host_asks && listening && tsc_hz) {
		u64 t0 = rdtsc(), linger = tsc_hz / 1000000 * LINGER_US;
		while (rdtsc() - t0 < linger) {
			serve_repeat();
			cpu_relax();
		}
		stream_flush();
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
