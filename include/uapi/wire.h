/*
 * wire.h — the byte stream between the bareperf kernel and the host tool,
 * and the capture file the host tool writes from it.
 *
 * Shared by wire/record.c (encoder, and the frame check the kernel uses on
 * what the host sends), wire/decode.c (decoder) and tools/util/capture.c.
 * Fixed-width, versioned, append-only, like perf_ring.h: never reorder,
 * resize or renumber anything; new channels, item tags, flags and control
 * types are appended; anything that changes how existing bytes read needs
 * a new WIRE_VERSION. Every multi-byte field is little-endian.
 *
 * 1. The stream
 *
 * Before the stream starts, the kernel's console is plain ASCII lines, so
 * a terminal (minicom, screen) shows the boot messages as they are. The
 * stream starts with one 0x00 byte; from then on everything the kernel
 * sends is frames, each COBS-encoded and followed by a 0x00 delimiter:
 *
 *	boot text ... \n 00 <cobs frame> 00 <cobs frame> 00 ...
 *
 * COBS (Cheshire & Baker, "Consistent Overhead Byte Stuffing", 1999)
 * removes every 0x00 from a frame at a cost of one byte per 254, so 0x00
 * only ever means "a frame ends here". A receiver that joins mid-stream or
 * meets damaged, dropped or inserted bytes loses at most the frames the
 * damage touches: it discards bytes up to the next 0x00 and starts over.
 * Extra 0x00 bytes (empty frames) are allowed anywhere and ignored. Bytes
 * that do not form a valid frame (boot text before the first 0x00, noise)
 * are not data: a decoder may show them as text but never as records.
 *
 * On a plain terminal, once streaming: COBS changes only the 0x00 bytes of
 * a frame, so the text of a CONSOLE frame appears verbatim, with a few
 * bytes of header, CRC and COBS code around it (the console stays
 * readable, with some noise at line starts). RECORDS and AUX frames are
 * binary and show as noise; they can contain control characters (BEL,
 * SO/SI, ESC), so a terminal may beep or switch character sets: `reset`
 * restores it. A terminal that answers ENQ or ESC queries sends its answer
 * back to the kernel; the kernel reads only CONTROL frames that pass the
 * CRC, so such answers are ignored like any other noise.
 *
 * The same framing carries CONTROL frames from the host to the kernel,
 * with cpu = WIRE_CPU_HOST.
 *
 * 2. A frame (before COBS)
 *
 *	offset 0  u8   version << 4 | channel    (WIRE_VERSION, enum wire_channel)
 *	       1  u8   flags                     WIRE_F_*
 *	       2  u16  cpu                       sender's CPU index (WIRE_CPU_HOST from the host)
 *	       4  u32  seq                       per (channel, cpu): 0, 1, 2, ... wrapping
 *	       8  u32  boot                      the sender's boot identity (below)
 *	      12  u8   payload[n]                0 <= n <= WIRE_PAYLOAD_MAX, by channel
 *	    12+n  u32  crc                       CRC32C of bytes [0, 12+n)
 *
 * Version 1 frames had no boot field (the payload at offset 8, the CRC
 * over [0, 8+n)); a receiver still reads them, as of an unknown boot (0).
 *
 * boot: a nonzero number the kernel picks once per boot (RDRAND where the
 * CPU has it, mixed with the TSC and the RTC's date and time), the same in
 * every frame it sends until it halts. A receiver takes the boot of the
 * first frame it accepts as the stream's, and refuses (and counts) every
 * frame of another boot: a frame spliced in from another capture, or a
 * machine that was reset while recording, never mixes into the data.
 * Frames from the host carry 0. Under QEMU -icount (TSC = instructions)
 * and without RDRAND, two boots within the same second of the RTC with
 * the same command line can pick the same number.
 *
 * There is no length field: the delimiters give the length, the CRC
 * guards it. CRC32C is the Castagnoli CRC (iSCSI, RFC 3720 B.4):
 * polynomial 0x1EDC6F41, reflected (0x82F63B78), initial value and final
 * XOR 0xFFFFFFFF; crc32c("123456789") = 0xE3069283. It detects every
 * error of up to 3 bits in a frame of any size this format allows, and
 * every burst up to 32 bits. A receiver accepts a frame only if the CRC
 * matches, the version is one it reads, and the whole payload is well
 * formed; it never uses any byte of a frame that fails any of these.
 *
 * Sequence numbers let the receiver count what it lost: for each
 * (channel, cpu) the sender numbers frames from 0 (the first one carries
 * WIRE_F_START). A gap of k means k frames were lost; a number that goes
 * backwards is a duplicate and is dropped (a new run that restarts at 0
 * carries WIRE_F_START again). A receiver that joins mid-stream counts the
 * frames before the first one it saw as lost.
 *
 * 3. Payloads
 *
 * CONSOLE: console text (ASCII/UTF-8), split anywhere.
 * AUX:     u64 aux_pos, then data: the bytes of the AUX area at counter
 *          aux_pos onward (perf_ring.h; the AUX records in RECORDS say
 *          which ranges hold what). A lost AUX frame is a known hole.
 * CONTROL: one message, struct wire_ctl_msg below.
 * RECORDS: a sequence of items, each a tag byte and its body:
 *
 *	WIRE_ITEM_RAW (0x01): one record verbatim (perf_ring.h), size from
 *	  its header: 8 <= size, size % 8 == 0.
 *	WIRE_ITEM_RAW_SPARSE (0x00): one record, its zero bytes left out:
 *	  uvarint w (the record's size / 8, 1 <= w <= BP_RECORD_MAX / 8),
 *	  w mask bytes (mask byte j, bit b: byte 8j + b of the record is not
 *	  zero), then the record's nonzero bytes in order (none of them 0);
 *	  the size in the record's header must be 8w. A descriptor, mostly
 *	  NUL-padded names and reserved fields, takes a third of its size.
 *	  The kernel sends it to a host that asks for repeats (§3) while the
 *	  line is clean.
 *	WIRE_ITEM_SAMPLE (0x80 | flags): one SAMPLE record, compacted.
 *	WIRE_ITEM_SAMPLE_IP (0x02 + z, z < WIRE_SAMPLE_IP_CODES): one SAMPLE
 *	  record, compacted, as a SAMPLE item without flags whose IP's
 *	  svarint code z (below) is the tag itself (§4).
 *	any other tag: the frame is malformed.
 *
 * Repeated descriptors: a SAMPLE can be read only after its run's
 * descriptors (RUN_META, CPU_INFO, PMU_CAPS, EVENT_DESC, APP_START,
 * PROGRAM: perf_ring.h), which the kernel writes once, at the start of a
 * run. So that a receiver that lost them (a damaged frame) or joined late
 * can read what follows, the kernel sends them again, as RECORDS frames
 * flagged WIRE_F_REPEAT, one record a frame (a damaged frame costs one),
 * in their numbering like any other frame; when, depends on whether the
 * host can speak on the line:
 *
 *	Periodic (the default: a receive-only capture, `record --tty`
 *	  without the control channel, a file replayed later): about every
 *	  16 KiB of RECORDS frames, and after the samples at the run's end.
 *	On request: a host that will ask says so with a CONTROL frame
 *	  WIRE_CTL_WILL_ASK (no value, no reply), at any time once it
 *	  listens; from then on the kernel sends no periodic repeats and none
 *	  at the run's end, records mostly zero as WIRE_ITEM_RAW_SPARSE, and
 *	  frames of WIRE_FRAME_TARGET_CLEAN (1 KiB) payload bytes, filled
 *	  across the drain's passes over a ring. When the host finds damage, a gap, or samples
 *	  without their descriptors, it sends WIRE_CTL_REPEAT (no value, no
 *	  reply): the kernel sends the descriptors once after the frame it is
 *	  sending, at most once in 100 ms (requests meanwhile make one
 *	  more), and for the rest of the boot frames as on a line where the
 *	  host cannot speak: WIRE_FRAME_TARGET (224 bytes), records raw. Before its last END the kernel listens for 200 ms for a
 *	  request about the end of the stream. The kernel hears these only
 *	  outside control=1 (which reads the line itself between requests);
 *	  there, repeats stay periodic.
 *
 * Such a frame holds only records the stream sent before, unchanged. A
 * receiver reads a repeated record it does not have (its first sending
 * was lost) as if it were the first, and one equal to what it has not at
 * all; one that differs from the record of the same run and key (RUN_META
 * by run_id; EVENT_DESC by id; CPU_INFO, PMU_CAPS by cpu; APP_START by
 * app_id and cpu) is damage, said and not read. Samples that came before
 * their descriptors wait for them.
 *
 * 4. Compact SAMPLE items
 *
 * Each field is coded against a prediction ("prev"): its value in the
 * last SAMPLE item of the same frame that had the field. At every frame
 * start all predictions are 0 and no sample_type is known, so every frame
 * decodes on its own and a lost frame never damages the next. Integers are LEB128 varints:
 * uvarint = 7 bits per byte, low first, high bit = more (at most 10
 * bytes, no bits beyond 64); svarint = uvarint of the zigzag code
 * (v << 1) ^ (v >> 63) of a signed 64-bit v. Differences are modulo 2^64,
 * so every value round-trips exactly.
 *
 *	tag = 0x80 | flags:
 *	  WIRE_S_TYPE   (0x01) uvarint sample_type follows (required in the
 *	                       first SAMPLE item of a frame); else prev's
 *	  WIRE_S_MISC   (0x02) uvarint misc follows; else prev's (0 at frame start)
 *	  WIRE_S_STICKY (0x04) a byte of WIRE_SK_* bits follows: those fields
 *	                       changed; each comes as svarint (value - prev)
 *	                       in bit order; fields without their bit = prev
 *	  WIRE_S_PERIOD (0x08) svarint (period - prev) follows; else prev
 *	  0x70                 reserved, must be 0
 *	then, for each field of sample_type in perf's order (perf_ring.h):
 *	  IDENTIFIER, TID, ID, CPU, PERIOD: nothing (sticky, above)
 *	  IP         svarint (ip - prev.ip)
 *	  TIME       svarint ((time - prev.time) - prev.dtime);
 *	             dtime = time - prev.time becomes the next prev.dtime
 *	  ADDR       svarint (addr - prev.addr)
 *	  READ       uvarint nr; svarint (time_enabled - prev),
 *	             svarint (time_running - prev); for each entry i:
 *	             svarint (config - pc[i]), svarint (count - pn[i]), where
 *	             pc[i], pn[i] are prev's entry i for i < WIRE_PRED_READ,
 *	             else 0
 *	  CALLCHAIN  uvarint nr; ips[0]: svarint (ips[0] - ip) if IP is in
 *	             sample_type, else svarint (ips[0] - prev.ips[0]);
 *	             ips[i], i >= 1: svarint (ips[i] - prev.ips[i]) for
 *	             i < WIRE_PRED_CHAIN, else svarint (ips[i] - ips[i-1])
 *	WIRE_ITEM_SAMPLE_IP + z: the same as tag 0x80 (every prediction
 *	  holds) followed by the fields, but for IP, whose svarint code is
 *	  z and does not follow; only after a SAMPLE item that had IP.
 *	The record rebuilt is {BP_RECORD_SAMPLE, misc, size} with size
 *	computed from sample_type and the two nr; it must not exceed
 *	BP_RECORD_MAX. Predictions for read entries and callchain slots a
 *	sample does not have keep their old value.
 *
 * A hot loop sampled with a fixed period costs about 3 bytes a sample:
 * the tag holding an IP delta within +-62, a time delta-of-delta of one
 * or two;
 * the frame (header, CRC, COBS, delimiter) adds 18 bytes per frame
 * (the kernel's hold about 224 bytes of payload, 1 KiB for a host that
 * asks for repeats and saw no damage), and each frame's first sample its
 * fields in full.
 * An encoder may always send a SAMPLE as WIRE_ITEM_RAW instead (one it
 * cannot parse, or whose compact form would be longer).
 *
 * 5. Control messages: struct wire_ctl_msg below (apps/control.c serves
 *    them when the kernel boots with control=1). The kernel also ends its
 *    stream with one, unasked: END (struct wire_end), when the machine
 *    stops and after each request it served; a receiver knows from it
 *    that nothing was cut from the end.
 *
 * 6. Capture files: struct wire_capture_header, then the stream bytes
 * exactly as received, delimiters, noise and all, from the first byte the
 * recorder read. See the struct.
 */
#ifndef BAREPERF_UAPI_WIRE_H
#define BAREPERF_UAPI_WIRE_H

#include <stdint.h>

#define WIRE_VERSION		2
#define WIRE_VERSION_MIN	1	/* the oldest a receiver reads */
#define WIRE_DELIM		0x00

enum wire_channel {
	WIRE_CH_CONSOLE		= 0,	/* console text */
	WIRE_CH_RECORDS		= 1,	/* ring records, items */
	WIRE_CH_AUX		= 2,	/* AUX area data */
	WIRE_CH_CONTROL		= 3,	/* commands and replies */
	WIRE_NR_CHANNELS	= 4,	/* 4..15: reserved */
};

/* wire_frame_header.cpu of frames the host sends. */
#define WIRE_CPU_HOST		0xffffu

/* wire_frame_header.flags; unknown bits are ignored by a receiver. */
#define WIRE_F_START		(1u << 0)	/* first frame of this (channel, cpu): seq 0 */
#define WIRE_F_REPEAT		(1u << 1)	/* RECORDS: descriptors sent again (§3) */

struct wire_frame_header {
	uint8_t  vc;			/* WIRE_VERSION << 4 | channel */
	uint8_t  flags;			/* WIRE_F_* */
	uint16_t cpu;
	uint32_t seq;
	uint32_t boot;			/* version 2 on; version 1 ends before it */
};
_Static_assert(sizeof(struct wire_frame_header) == 12, "wire_frame_header ABI");

#define WIRE_VC(channel)	((uint8_t)(WIRE_VERSION << 4 | (channel)))
#define WIRE_VC_VERSION(vc)	((vc) >> 4)
#define WIRE_VC_CHANNEL(vc)	((vc) & 0xf)

#define WIRE_HEADER_SIZE	12u
#define WIRE_HEADER_SIZE_V1	8u
#define WIRE_CRC_SIZE		4u
#define WIRE_PAYLOAD_MAX	65536u		/* holds any record: 1 + BP_RECORD_MAX */
#define WIRE_FRAME_MIN		(WIRE_HEADER_SIZE + WIRE_CRC_SIZE)
#define WIRE_FRAME_MAX		(WIRE_HEADER_SIZE + WIRE_PAYLOAD_MAX + WIRE_CRC_SIZE)
/* COBS output for n input bytes, at most (one code byte per 254, plus one). */
#define WIRE_COBS_MAX(n)	((n) + (n) / 254u + 1u)
/* A frame on the wire, delimiter included, at most. */
#define WIRE_ENCODED_MAX	(WIRE_COBS_MAX(WIRE_FRAME_MAX) + 1u)

#define WIRE_CRC32C_POLY	0x82f63b78u	/* reflected 0x1EDC6F41 */

/* RECORDS items */
#define WIRE_ITEM_RAW		0x01
#define WIRE_ITEM_RAW_SPARSE	0x00		/* appended: an older decoder drops its frame */
#define WIRE_ITEM_SAMPLE	0x80		/* | WIRE_S_* */
#define WIRE_ITEM_SAMPLE_IP	0x02		/* + the IP's svarint code */
#define WIRE_SAMPLE_IP_CODES	0x7e		/* tags 0x02..0x7f */
#define   WIRE_S_TYPE		0x01
#define   WIRE_S_MISC		0x02
#define   WIRE_S_STICKY		0x04
#define   WIRE_S_PERIOD		0x08
#define   WIRE_S_RESERVED	0x70

/* The WIRE_S_STICKY byte: fields that changed, coded in this bit order. */
#define WIRE_SK_IDENTIFIER	(1u << 0)
#define WIRE_SK_PID		(1u << 1)
#define WIRE_SK_TID		(1u << 2)
#define WIRE_SK_ID		(1u << 3)
#define WIRE_SK_CPU		(1u << 4)
#define WIRE_SK_RES		(1u << 5)	/* the u32 after cpu */
#define WIRE_SK_RESERVED	0xc0u

#define WIRE_PRED_READ		8	/* read entries with a per-slot prediction */
#define WIRE_PRED_CHAIN		16	/* callchain slots with a per-slot prediction */

/* AUX payload: this, then the data. */
struct wire_aux_header {
	uint64_t aux_pos;		/* AUX counter of the first data byte */
};
_Static_assert(sizeof(struct wire_aux_header) == 8, "wire_aux_header ABI");

/*
 * Control messages.
 *
 * A CONTROL frame holds one message: a type, the length of the value, and
 * the value. START_RUN's value is a sequence of the same {type, len,
 * value} triples with WIRE_RUN_* types. Text is UTF-8, not NUL-terminated.
 * The host sends one request and waits for the replies, which end with
 * OK or ERROR; list replies send one ITEM per entry first.
 */
struct wire_ctl_msg {
	uint16_t type;			/* enum wire_ctl_type */
	uint16_t len;			/* bytes of value that follow */
	/* uint8_t value[len]; */
};
_Static_assert(sizeof(struct wire_ctl_msg) == 4, "wire_ctl_msg ABI");

enum wire_ctl_type {
	/* host -> kernel */
	WIRE_CTL_LIST_APPS	= 0x0001,	/* no value */
	WIRE_CTL_LIST_EVENTS	= 0x0002,	/* no value */
	WIRE_CTL_START_RUN	= 0x0003,	/* value: WIRE_RUN_* triples */
	WIRE_CTL_RUN_CODE	= 0x0004,	/* value: WIRE_CODE_* triples; needs code=1 */
	WIRE_CTL_LOAD		= 0x0005,	/* value: WIRE_LOAD_* triples; needs code=1 */
	WIRE_CTL_WILL_ASK	= 0x0006,	/* no value, no reply: repeats on request (§3) */
	WIRE_CTL_REPEAT		= 0x0007,	/* no value, no reply: the descriptors again (§3) */
	/* kernel -> host */
	WIRE_CTL_OK		= 0x8001,	/* value: text, may be empty */
	WIRE_CTL_ERROR		= 0x8002,	/* value: one line of text */
	WIRE_CTL_ITEM		= 0x8003,	/* value: one list entry, text */
	WIRE_CTL_END		= 0x8004,	/* value: struct wire_end, unasked */
};

/*
 * END: the kernel's last frame before it stops sending, unasked. With
 * WIRE_END_HALT the machine stops (its exit code in status) and what
 * follows on the line is plain text again, as before the stream's first
 * 0x00 (a new boot's text and stream may follow). Without it, a request
 * served over the control channel is complete (every frame it caused
 * was sent) and the machine waits for the next one.
 *
 * It says how many frames each (channel, cpu) sent, so a receiver counts
 * the frames lost at the end of a stream too, which no later sequence
 * number reveals: for each entry, frames = the seq the next frame of
 * that (channel, cpu) would carry (the END frame itself is not counted
 * in its own entry). A capture whose last END never arrived has lost its
 * end: how much is unknown.
 */
#define WIRE_END_HALT		(1u << 0)	/* wire_end.flags: the machine stops */
/* wire_end.flags bits 15:8, with WIRE_END_HALT: why the kernel stopped,
 * where a host acts on the reason rather than on the console's words
 * (enum wire_end_reason); 0 where it gives none, and from older kernels. */
#define WIRE_END_REASON_SHIFT	8
#define WIRE_END_REASON(flags)	(((flags) >> WIRE_END_REASON_SHIFT) & 0xffu)

enum wire_end_reason {
	WIRE_END_REASON_NONE	= 0,
	WIRE_END_REASON_NO_PMU	= 1,	/* an event the run asked for needs a hardware
					 * PMU, and the machine has none: refused
					 * before any app ran */
};

struct wire_end {
	uint32_t status;		/* WIRE_END_HALT: the kernel's exit code */
	uint16_t flags;			/* WIRE_END_* */
	uint16_t nr;			/* struct wire_end_stream entries that follow */
};
_Static_assert(sizeof(struct wire_end) == 8, "wire_end ABI");

struct wire_end_stream {
	uint8_t  channel;		/* enum wire_channel */
	uint8_t  reserved;
	uint16_t cpu;
	uint32_t frames;		/* frames sent on (channel, cpu), mod 2^32 */
};
_Static_assert(sizeof(struct wire_end_stream) == 8, "wire_end_stream ABI");

enum wire_run_param {
	/* What to sample and count is the request's alone: events, period or
	 * freq and counting events not sent take the defaults (events: cycles,
	 * or cpu-clock without a PMU), never the boot command line's. The rate
	 * limit and tracing not sent are the boot command line's, as are the
	 * settings a request cannot carry (callchain, ring_pages, pace). */
	WIRE_RUN_APP		= 1,	/* text: app name */
	WIRE_RUN_EVENT		= 2,	/* text: one event; repeat for more */
	WIRE_RUN_PERIOD		= 3,	/* u64: sample period */
	WIRE_RUN_FREQ		= 4,	/* u64: target samples per second */
	WIRE_RUN_CPUS		= 5,	/* text: the CPU the app runs on, "2" */
	WIRE_RUN_ARG		= 6,	/* text: one app argument; repeat for more */
	WIRE_RUN_NONCE		= 7,	/* u64, not 0: the request's identity. A host
					 * that resends a request it thinks lost sends
					 * the same nonce; the machine does not run a
					 * request whose nonce it served last again */
	WIRE_RUN_COUNT		= 8,	/* text: one counting event; repeat for more
					 * (count=; alone, no sampling) */
	WIRE_RUN_MAX_RATE	= 9,	/* u64: samples/s per CPU before throttling,
					 * 0 no limit (max_rate=) */
	WIRE_RUN_TRACE		= 10,	/* text: instruction tracing (trace=SPEC) */
	WIRE_RUN_TIMEOUT_MS	= 11,	/* u64: a loaded program's run is stopped after
					 * this long (ERROR); 0 or not sent: 60 s */
};

/*
 * RUN_CODE (`bareperf bench`, apps/bench_code.h): machine code the host
 * assembled, measured with the harness's method. Numbers are u64. The
 * reply is one ITEM per event, then OK; or ERROR naming what went wrong
 * (a fault with its exception and offset, the watchdog, a bad parameter).
 * ITEM text, tab-separated:
 *	event  label  min  median  avg  iqr  flags  disturbed  median_n  median_2n  max
 * min/median/avg/iqr/max are x1000 per copy (per repetition with NO_NORM),
 * flags BP_BENCH_F_*, median_n/_2n the raw counts of the two versions.
 * An event refused alone (its counter or an MSR it names is missing,
 * an MSR access faults) has, in its place among those ITEMs,
 *	refused  event  why
 * and the others are measured. With WIRE_CODEF_READINGS, after those
 * ITEMs each measurement's raw counts, event by event, in ITEMs of at
 * most 512 bytes:
 *	reading  event  first  n,2n  n,2n ...
 * first the index (from 0) of the measurement of the first pair.
 *
 * An EVENT is a PMU event spec (pmu/pmu.h), "tsc", or "msr:0xZ": MSR Z
 * read with RDMSR before and after each run, as a counter (nanoBench's
 * -msr_config). EVENT_CTR and EVENT_MSR qualify the EVENT sent last; a
 * PMU event's MSRs may only be those its selection reads (0x1A6, 0x1A7,
 * 0x3F6, 0x3F7, on Intel), an msr: event's any. Parameters are only
 * appended: a kernel older than one refuses it by number ("unknown
 * parameter N").
 */
#define WIRE_CODE_MAX		4096u	/* bytes of body, and of init */

enum wire_code_param {
	WIRE_CODE_BODY		= 1,	/* bytes: the snippet (1..WIRE_CODE_MAX) */
	WIRE_CODE_INIT		= 2,	/* bytes: run once before the copies */
	WIRE_CODE_UNROLL	= 3,	/* copies of the body, n (default 1000) */
	WIRE_CODE_LOOPS		= 4,	/* 0: no loop (default); else iterations */
	WIRE_CODE_REPS		= 5,	/* measurements (default 10) */
	WIRE_CODE_WARMUP	= 6,	/* warm-up runs before them (default 5) */
	WIRE_CODE_INITIAL_WARMUP = 7,	/* runs of the whole measurement first (default 0) */
	WIRE_CODE_FLAGS		= 8,	/* WIRE_CODEF_* */
	WIRE_CODE_EVENT		= 9,	/* text: one event; repeat for more */
	WIRE_CODE_TIMEOUT_MS	= 10,	/* the watchdog (default 2000) */
	WIRE_CODE_ALIGN		= 11,	/* body start offset from a 64-byte boundary */
	WIRE_CODE_LATE_INIT	= 12,	/* bytes: run after init, before the copies */
	WIRE_CODE_CPU		= 13,	/* the CPU that runs it (default: the control CPU's) */
	WIRE_CODE_R14_SIZE	= 14,	/* bytes of R14's area, a multiple of 8 KiB (default 1 MiB) */
	WIRE_CODE_ONE_TIME_INIT	= 15,	/* bytes: run once, before the first measurement */
	WIRE_CODE_EVENT_CTR	= 16,	/* u64: the counter the last EVENT counts on: GP
					 * counter N, or WIRE_CODE_CTR_FIXED + N for fixed
					 * counter N (nanoBench's CTR=) */
	WIRE_CODE_EVENT_MSR	= 17,	/* struct wire_code_msr: written before the last
					 * EVENT is measured, put back after; repeat for
					 * more (at most WIRE_CODE_EVENT_MSRS) */
};

#define WIRE_CODE_CTR_FIXED	32	/* Intel's event tables' numbering */
#define WIRE_CODE_EVENT_MSRS	16

struct wire_code_msr {
	uint32_t msr;
	uint32_t reserved;		/* 0 */
	uint64_t value;
};
_Static_assert(sizeof(struct wire_code_msr) == 16, "wire_code_msr ABI");

#define WIRE_CODEF_BASIC	(1u << 0)	/* measure n copies against 0 copies */
#define WIRE_CODEF_NO_NORM	(1u << 1)	/* do not divide by copies and loops */
#define WIRE_CODEF_READINGS	(1u << 2)	/* reply with every measurement's counts */
#define WIRE_CODEF_DRAIN	(1u << 3)	/* drain the front end after init, late init, body */
#define WIRE_CODEF_FIXED	(1u << 4)	/* the events are the fixed counters': refused
						 * without a PMU that has them */

/*
 * LOAD (`bareperf record -- FILE.c|FILE.o`, apps/program.c): a relocatable
 * x86-64 ELF object, in pieces: each LOAD carries NAME, SIZE, OFFSET and a
 * DATA piece; OFFSET 0 starts an object (dropping any half sent), any
 * other OFFSET must be where the previous piece ended. A piece that does
 * not end the object is answered OK "have N of SIZE bytes" (a piece of up
 * to 64 KiB less 128 bytes fits a frame with the message around it). The
 * last one has the kernel link the object against the functions it
 * exports to programs (include/bareperf.h) and map it (text read-only
 * executable, the rest no-execute); the reply is one ITEM per placed
 * section,
 *	section  shndx  name  addr  size  flags
 * (tab-separated; addr and size in hex with 0x, flags BP_PROGRAM_SEC_* in
 * decimal), then OK; or ERROR naming what is wrong (an undefined symbol,
 * a relocation it does not do, too little memory). A loaded program runs
 * as an app named NAME (START_RUN), replacing an earlier program of that
 * name; each of its runs writes BP_RECORD_PROGRAM first (perf_ring.h).
 */
#define WIRE_LOAD_MAX		(16u << 20)	/* bytes of object */

enum wire_load_param {
	WIRE_LOAD_NAME		= 1,	/* text: [A-Za-z0-9_.-], 1..31 bytes, not a built-in app's */
	WIRE_LOAD_SIZE		= 2,	/* u64: bytes of the whole object */
	WIRE_LOAD_OFFSET	= 3,	/* u64: where DATA goes in it */
	WIRE_LOAD_DATA		= 4,	/* bytes: the piece */
};

/*
 * Capture files (`bareperf record`): this header, then the stream bytes
 * as received. header_size is the offset of the data.
 *
 * The writer keeps a valid file at every moment: it writes the header
 * first (flags without COMPLETE, data_size 0), appends the stream, and on
 * close rewrites the header with COMPLETE, data_size and end_ns. A file
 * without COMPLETE (the recorder was killed) is valid: its data is
 * everything after the header. A file shorter than header_size +
 * data_size was truncated after it was closed; a reader reports that and
 * reads what is there.
 *
 * A reader accepts version >= 1 with compat_version <= the version it
 * knows, and reads only the fields it knows (header_size may grow).
 */
#define WIRE_CAPTURE_MAGIC	"\x89" "BPC\r\n\x1a\n"	/* 8 bytes, no NUL */
#define WIRE_CAPTURE_MAGIC_LEN	8
#define WIRE_CAPTURE_VERSION	1
#define WIRE_CAPTURE_COMPAT_VERSION 1

/* wire_capture_header.flags */
#define WIRE_CAPF_COMPLETE	(1u << 0)	/* closed by the writer: data_size, end_ns final */
#define WIRE_CAPF_INTERRUPTED	(1u << 1)	/* stopped before the run ended: by the user
						 * (Ctrl-C), or with TIMED_OUT by the time limit */
#define WIRE_CAPF_TRUNCATED	(1u << 2)	/* the writer lost data (write error) */
#define WIRE_CAPF_TIMED_OUT	(1u << 3)	/* with INTERRUPTED: the recorder's time limit
						 * (record --timeout) stopped it, not the user;
						 * an older reader sees an interruption */

enum wire_link {
	WIRE_LINK_UNKNOWN	= 0,
	WIRE_LINK_TTY		= 1,	/* serial device; baud set */
	WIRE_LINK_QEMU_SERIAL	= 2,	/* QEMU 16550 chardev (pipe, socket, pty) */
	WIRE_LINK_QEMU_VIRTIO	= 3,	/* QEMU virtio-console chardev */
	WIRE_LINK_FILE		= 4,	/* replayed from a file */
};

struct wire_capture_header {
	uint8_t  magic[8];		/* WIRE_CAPTURE_MAGIC */
	uint32_t version;		/* WIRE_CAPTURE_VERSION of the writer */
	uint32_t compat_version;	/* oldest reader version that can read it */
	uint32_t header_size;		/* offset of the data, >= 512 */
	uint32_t flags;			/* WIRE_CAPF_* */
	uint64_t data_size;		/* stream bytes after the header (with COMPLETE) */
	uint64_t start_ns;		/* host CLOCK_REALTIME at the first byte, ns */
	uint64_t end_ns;		/* ... at close, 0 until then */
	uint32_t wire_version;		/* WIRE_VERSION the writer decodes */
	uint32_t link_kind;		/* enum wire_link */
	uint32_t baud;			/* WIRE_LINK_TTY: line speed, else 0 */
	uint8_t  build_id_size;		/* 0: unknown, else bytes used in build_id */
	uint8_t  reserved_u8[3];
	uint8_t  build_id[20];		/* GNU build-id of the kernel.elf that ran */
	uint8_t  reserved_id[12];
	char     link[64];		/* "/dev/ttyUSB0", "qemu:stdio", ..., NUL-padded */
	char     run_args[256];		/* what was asked for, NUL-padded */
	char     tool[32];		/* the writer, e.g. "bareperf 0.1", NUL-padded */
	uint8_t  reserved[64];
};
_Static_assert(sizeof(struct wire_capture_header) == 512, "wire_capture_header ABI");
_Static_assert(__builtin_offsetof(struct wire_capture_header, build_id) == 64,
	       "wire_capture_header ABI");
_Static_assert(__builtin_offsetof(struct wire_capture_header, link) == 96,
	       "wire_capture_header ABI");

#endif
