/*
 * wire/frame.c — the wire's link layer (include/uapi/wire.h for the
 * format, wire/frame.h for the contract): CRC32C, varints, COBS,
 * frame headers and numbering, the byte channels, the received-frame check.
 *
 * The writer COBS-encodes as it goes: bytes pass through it, updating the
 * CRC and filling in COBS code bytes, straight into the caller's buffer.
 */
#include "kernel/lib/string.h"
#include "kernel/lib/unaligned.h"
#include "wire/frame.h"

/* CRC32C, reflected, one byte per step: T[i] = i shifted through the
 * polynomial 0x82F63B78 eight times (test_wire recomputes every entry). */
const uint32_t wire_crc32c_tab[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4,
	0xc79a971f, 0x35f1141c, 0x26a1e7e8, 0xd4ca64eb,
	0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24,
	0x105ec76f, 0xe235446c, 0xf165b798, 0x030e349b,
	0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54,
	0x5d1d08bf, 0xaf768bbc, 0xbc267848, 0x4e4dfb4b,
	0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35,
	0xaa64d611, 0x580f5512, 0x4b5fa6e6, 0xb93425e5,
	0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45,
	0xf779deae, 0x05125dad, 0x1642ae59, 0xe4292d5a,
	0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595,
	0x417b1dbc, 0xb3109ebf, 0xa0406d4b, 0x522bee48,
	0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687,
	0x0c38d26c, 0xfe53516f, 0xed03a29b, 0x1f682198,
	0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38,
	0xdbfc821c, 0x2997011f, 0x3ac7f2eb, 0xc8ac71e8,
	0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096,
	0xa65c047d, 0x5437877e, 0x4767748a, 0xb50cf789,
	0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46,
	0x7198540d, 0x83f3d70e, 0x90a324fa, 0x62c8a7f9,
	0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36,
	0x3cdb9bdd, 0xceb018de, 0xdde0eb2a, 0x2f8b6829,
	0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93,
	0x082f63b7, 0xfa44e0b4, 0xe9141340, 0x1b7f9043,
	0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3,
	0x55326b08, 0xa759e80b, 0xb4091bff, 0x466298fc,
	0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033,
	0xa24bb5a6, 0x502036a5, 0x4370c551, 0xb11b4652,
	0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d,
	0xef087a76, 0x1d63f975, 0x0e330a81, 0xfc588982,
	0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622,
	0x38cc2a06, 0xcaa7a905, 0xd9f75af1, 0x2b9cd9f2,
	0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530,
	0x0417b1db, 0xf67c32d8, 0xe52cc12c, 0x1747422f,
	0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0,
	0xd3d3e1ab, 0x21b862a8, 0x32e8915c, 0xc083125f,
	0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90,
	0x9e902e7b, 0x6cfbad78, 0x7fab5e8c, 0x8dc0dd8f,
	0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1,
	0x69e9f0d5, 0x9b8273d6, 0x88d28022, 0x7ab90321,
	0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81,
	0x34f4f86a, 0xc69f7b69, 0xd5cf889d, 0x27a40b9e,
	0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};


uint32_t wire_crc32c_table(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	crc = ~crc;
	while (n--)
		crc = wire_crc_step(crc, *b++);
	return ~crc;
}

#if __STDC_HOSTED__ && defined(__x86_64__)
/* The host decoder's CRC: SSE4.2 crc32 computes exactly CRC32C. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = ~crc;

	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

uint32_t wire_crc32c(uint32_t crc, const void *p, size_t n)
{
#if __STDC_HOSTED__ && defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return crc32c_sse42(crc, p, n);
#endif
	return wire_crc32c_table(crc, p, n);
}

size_t wire_put_uvarint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)v | 0x80;
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* ---- frame check ------------------------------------------------------ */

long wire_cobs_decode(const uint8_t *src, size_t n, uint8_t *out, size_t cap)
{
	size_t i = 0, o = 0;

	/*
	 * With room for n bytes out, out needs no check: a block's bytes
	 * and zero are fewer than its code and bytes, so o < i <= n. Most
	 * blocks are short: one 16-byte move where src has the bytes (out
	 * past o + run is not yet decoded), not a call; the zero is written
	 * always and kept unless the block is 254 bytes (0xff) or the last
	 * (whose zero is the delimiter).
	 */
	if (cap >= n) {
		while (i < n) {
			uint8_t code = src[i++];
			size_t run = (size_t)code - 1;

			if (code == 0 || run > n - i)
				return WIRE_E_COBS;
			if (run <= 16 && n - i >= 16)
				memcpy(out + o, src + i, 16);
			else
				memcpy(out + o, src + i, run);
			i += run;
			o += run;
			out[o] = 0;
			o += code != 0xff && i < n;
		}
		return (long)o;
	}
	while (i < n) {
		uint8_t code = src[i++];
		size_t run = (size_t)code - 1;

		if (code == 0 || run > n - i || run > cap - o)
			return WIRE_E_COBS;
		memcpy(out + o, src + i, run);
		i += run;
		o += run;
		/* A block shorter than 254 bytes stands for its bytes and a
		 * zero, except the last block, whose zero is the delimiter. */
		if (code != 0xff && i < n) {
			if (o == cap)
				return WIRE_E_COBS;
			out[o++] = 0;
		}
	}
	return (long)o;
}

int wire_frame_unpack(const uint8_t *src, size_t n, uint8_t *buf, size_t cap,
		      struct wire_frame *f)
{
	long len;
	uint8_t vc;
	size_t hs;

	if (n > WIRE_COBS_MAX(WIRE_FRAME_MAX))
		return WIRE_E_COBS;
	len = wire_cobs_decode(src, n, buf, cap);
	if (len < 0)
		return (int)len;
	if ((size_t)len < WIRE_HEADER_SIZE_V1 + WIRE_CRC_SIZE)
		return WIRE_E_SHORT;
	if ((size_t)len > WIRE_FRAME_MAX)
		return WIRE_E_COBS;
	if (wire_crc32c(0, buf, (size_t)len - WIRE_CRC_SIZE) != ld32(buf + len - WIRE_CRC_SIZE))
		return WIRE_E_CRC;
	vc = buf[0];
	if (WIRE_VC_VERSION(vc) < WIRE_VERSION_MIN || WIRE_VC_VERSION(vc) > WIRE_VERSION)
		return WIRE_E_VERSION;
	/* Version 1: no boot field (uapi/wire.h §2). */
	hs = WIRE_VC_VERSION(vc) == 1 ? WIRE_HEADER_SIZE_V1 : WIRE_HEADER_SIZE;
	if ((size_t)len < hs + WIRE_CRC_SIZE)
		return WIRE_E_SHORT;
	if (WIRE_VC_CHANNEL(vc) >= WIRE_NR_CHANNELS)
		return WIRE_E_CHANNEL;
	f->channel = WIRE_VC_CHANNEL(vc);
	f->flags = buf[1];
	f->cpu = ld16(buf + 2);
	f->seq = ld32(buf + 4);
	f->boot = hs == WIRE_HEADER_SIZE ? ld32(buf + 8) : 0;
	f->payload = buf + hs;
	f->len = (size_t)len - hs - WIRE_CRC_SIZE;
	return WIRE_OK;
}

size_t wire_cobs_encode(const uint8_t *src, size_t n, uint8_t *out)
{
	size_t o = 1, code_at = 0;
	uint8_t code = 1;

	for (size_t i = 0; i < n; i++) {
		if (src[i]) {
			out[o++] = src[i];
			if (++code != 0xff)
				continue;
		}
		/* A zero, or 254 bytes without one: close the block, open the next. */
		out[code_at] = code;
		code_at = o++;
		code = 1;
	}
	out[code_at] = code;
	return o;
}

/* ---- the writer ---------------------------------------------------- */

/*
 * Room a frame needs after its last payload byte: 4 CRC bytes, up to two
 * code bytes they may open or close, the delimiter, and one spare.
 */
#define FINISH_RESERVE	8u

void wire_put_bytes(struct wire_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		wire_put_byte(w, *b++);
}

void wire_put_uvarint_w(struct wire_writer *w, uint64_t v)
{
	uint8_t tmp[10];

	wire_put_bytes(w, tmp, wire_put_uvarint(tmp, v));
}

/* ---- frames ---------------------------------------------------------- */

void wire_framer_init(struct wire_framer *l, uint16_t cpu, uint32_t boot, uint32_t frame_target)
{
	memset(l, 0, sizeof(*l));
	l->cpu = cpu;
	l->boot = boot;
	l->frame_target = frame_target ? frame_target : WIRE_FRAME_TARGET;
	if (l->frame_target > WIRE_PAYLOAD_MAX)
		l->frame_target = WIRE_PAYLOAD_MAX;
}

size_t wire_framer_finish(struct wire_framer *l, uint8_t *out, size_t outcap)
{
	size_t n;

	if (!l->span_open)
		return 0;
	l->span_open = false;
	if (!l->span_records)
		return 0;		/* opened, nothing in it: never numbered */
	n = wire_frame_close(l, &l->span_w, WIRE_CH_RECORDS);
	if (n > outcap)
		return 0;		/* outcap < span_cap: the contract's, not reached */
	memcpy(out, l->span, n);
	l->bytes += n;
	return n;
}

void wire_framer_restart(struct wire_framer *l)
{
	memset(l->seq, 0, sizeof(l->seq));
	l->started = 0;
}

bool wire_frame_open(struct wire_framer *l, struct wire_writer *w, uint8_t *out, size_t at,
		     size_t outcap, unsigned channel)
{
	uint8_t h[WIRE_HEADER_SIZE];
	uint32_t seq = l->seq[channel];

	if (!l->lead_sent) {
		if (at >= outcap)
			return false;
		out[at++] = WIRE_DELIM;
	}
	if (outcap < at + 1 + WIRE_HEADER_SIZE + FINISH_RESERVE)
		return false;
	w->out = out;
	w->code_pos = at;
	w->pos = at + 1;
	w->lim = outcap - FINISH_RESERVE;
	w->code = 1;
	w->crc = ~0u;
	w->raw = 0;
	w->full = false;

	h[0] = WIRE_VC(channel);
	/* The first frame of the channel; a seq that wrapped to 0 is not. */
	h[1] = (l->started & (1u << channel) ? 0 : WIRE_F_START) | l->flags;
	h[2] = (uint8_t)l->cpu;
	h[3] = (uint8_t)(l->cpu >> 8);
	for (int i = 0; i < 4; i++) {
		h[4 + i] = (uint8_t)(seq >> (8 * i));
		h[8 + i] = (uint8_t)(l->boot >> (8 * i));
	}
	wire_put_bytes(w, h, sizeof(h));
	return !w->full;
}

size_t wire_frame_close(struct wire_framer *l, struct wire_writer *w, unsigned channel)
{
	uint32_t crc = ~w->crc;

	/* The reserve guarantees room: lift the limit for the trailer. */
	w->lim = (size_t)-1;
	for (int i = 0; i < 4; i++)
		wire_put_cobs(w, (uint8_t)(crc >> (8 * i)));
	w->out[w->code_pos] = (uint8_t)w->code;
	w->out[w->pos++] = WIRE_DELIM;

	l->seq[channel]++;
	l->started |= 1u << channel;
	l->lead_sent = true;
	l->frames++;
	return w->pos;
}

/* ---- byte channels ---------------------------------------------------- */

/* Input bytes that surely fit in a frame whose writer is at w. */
static size_t room_for(const struct wire_writer *w)
{
	size_t avail = w->lim > w->pos ? w->lim - w->pos : 0;
	size_t k = avail > 2 ? avail - 2 - avail / 255 : 0;

	/* k bytes take at most k + k / 254 + 1 output bytes. */
	while (k && k + k / 254 + 1 > avail)
		k--;
	return k;
}

static size_t encode_bytes(struct wire_framer *l, unsigned channel, const uint64_t *aux_pos,
			   const uint8_t *data, size_t len, size_t *consumed,
			   uint8_t *out, size_t outcap)
{
	size_t done = 0, at = 0;
	size_t hdr = aux_pos ? sizeof(struct wire_aux_header) : 0;
	size_t per_frame = l->frame_target > hdr ? l->frame_target - hdr : 1;

	if (channel == WIRE_CH_CONTROL)
		per_frame = WIRE_PAYLOAD_MAX;
	while (done < len) {
		struct wire_writer w;
		size_t n = len - done;

		if (!wire_frame_open(l, &w, out, at, outcap, channel))
			break;
		if (aux_pos) {
			uint64_t pos = *aux_pos + done;
			for (int i = 0; i < 8; i++)
				wire_put_byte(&w, (uint8_t)(pos >> (8 * i)));
		}
		if (n > per_frame)
			n = per_frame;
		if (n > room_for(&w)) {
			if (channel == WIRE_CH_CONTROL)
				break;		/* one message, one frame */
			n = room_for(&w);
		}
		if (!n || w.full)
			break;
		wire_put_bytes(&w, data + done, n);
		at = wire_frame_close(l, &w, channel);
		done += n;
	}
	l->bytes += at;
	*consumed = done;
	return at;
}

size_t wire_framer_encode_bytes(struct wire_framer *l, enum wire_channel channel,
			      const void *data, size_t len, size_t *consumed,
			      uint8_t *out, size_t outcap)
{
	*consumed = 0;
	if (channel != WIRE_CH_CONSOLE && channel != WIRE_CH_CONTROL)
		return 0;
	if (channel == WIRE_CH_CONTROL && len > WIRE_PAYLOAD_MAX)
		return 0;
	return encode_bytes(l, channel, NULL, data, len, consumed, out, outcap);
}

size_t wire_framer_encode_aux(struct wire_framer *l, uint64_t aux_pos, const void *data,
			    size_t len, size_t *consumed, uint8_t *out, size_t outcap)
{
	return encode_bytes(l, WIRE_CH_AUX, &aux_pos, data, len, consumed, out, outcap);
}
