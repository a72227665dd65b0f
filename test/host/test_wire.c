/*
 * test_wire — the wire codec (include/uapi/wire.h): CRC32C against RFC
 * 3720, every single-bit error over a maximum-size frame, COBS and varint
 * edges, round trips of every record type and every sample_type, frames
 * that decode on their own, and streams damaged at random (bit flips,
 * dropped, duplicated and inserted bytes, truncation, joining mid-stream):
 * every record that comes out is one that went in, byte for byte, and
 * every frame lost is counted. Plus the bytes a hot-loop sample costs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire/record.h"
#include "wire/decode.h"
#include "test/host/wire_gen.h"

/* ---- CRC32C ------------------------------------------------------------ */

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? WIRE_CRC32C_POLY : 0);
	}
	return ~c;
}

typedef uint32_t crc_fn(uint32_t crc, const void *p, size_t n);

/* Both implementations: the kernel's table and the host's crc32 instruction. */
static crc_fn *const crcs[] = { wire_crc32c_table, wire_crc32c };

static void crc32c_known_answers(void **state)
{
	uint8_t b[48];

	(void)state;
	for (int k = 0; k < 2; k++) {
		crc_fn *crc = crcs[k];
		assert_int_equal(crc(0, "123456789", 9), 0xe3069283);
		/* RFC 3720, B.4 "CRC Examples" */
		memset(b, 0, 32);
		assert_int_equal(crc(0, b, 32), 0x8a9136aa);
		memset(b, 0xff, 32);
		assert_int_equal(crc(0, b, 32), 0x62a8ab43);
		for (int i = 0; i < 32; i++)
			b[i] = (uint8_t)i;
		assert_int_equal(crc(0, b, 32), 0x46dd794e);
		for (int i = 0; i < 32; i++)
			b[i] = (uint8_t)(31 - i);
		assert_int_equal(crc(0, b, 32), 0x113fdb5c);
		static const uint8_t pdu[48] = {	/* an iSCSI read command */
			0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
			0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0,
		};
		assert_int_equal(crc(0, pdu, sizeof(pdu)), 0xd9963a56);
		assert_int_equal(crc(0, b, 0), 0);
	}
}

static void crc32c_table_and_chaining(void **state)
{
	struct wg_rng r = { 7 };
	uint8_t b[1000];

	(void)state;
	/* Every table entry, through its one-byte message. */
	for (int i = 0; i < 256; i++) {
		uint8_t x = (uint8_t)i;
		assert_int_equal(wire_crc32c_table(0, &x, 1), crc_bitwise(&x, 1));
	}
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)wg_next(&r);
	for (int k = 0; k < 2; k++) {
		crc_fn *crc = crcs[k];
		for (size_t n = 0; n <= sizeof(b); n += 37) {
			uint32_t whole = crc(0, b, n);
			assert_int_equal(whole, crc_bitwise(b, n));
			for (size_t cut = 0; cut <= n; cut += 13)
				assert_int_equal(crc(crc(0, b, cut), b + cut, n - cut), whole);
		}
	}
}

/*
 * One register step over a zero byte is linear; A^k, "k more bytes",
 * as 32 columns. apply(M, v) = M v over GF(2).
 */
static uint32_t apply(const uint32_t *m, uint32_t v)
{
	uint32_t r = 0;

	for (int j = 0; v; j++, v >>= 1)
		if (v & 1)
			r ^= m[j];
	return r;
}

static uint32_t zero_byte_step(uint32_t r)
{
	/* wire_crc32c works on the inverted register: undo that to reach the
	 * raw step (r >> 8) ^ T[r & 0xff] of a zero byte. */
	uint8_t z = 0;
	return ~wire_crc32c_table(~r, &z, 1) ^ ~wire_crc32c_table(~0u, &z, 1);
}

/*
 * Every single-bit error in a maximum-size frame (header, 65536 bytes of
 * payload, CRC) is caught. Recomputing 65 KB for each of its 524,384 bits
 * would take minutes, so each flip's CRC is computed as the real CRC plus
 * the flip's effect: the CRC's prefix up to the flipped byte and the step
 * over that byte come from wire_crc32c itself, and the effect on the rest
 * is a linear map (A^k over GF(2), k = bytes after it), which is exact for
 * any CRC. A sample of flips is also checked the slow way, to show both
 * ways agree, and every bit of a 2 KiB frame goes through
 * wire_frame_unpack().
 */
static void crc_catches_every_single_bit_error(void **state)
{
	const size_t plen = WIRE_PAYLOAD_MAX, n = WIRE_FRAME_MAX;
	uint8_t *payload = malloc(plen), *frame = malloc(n), *cobs = malloc(WIRE_ENCODED_MAX);
	uint8_t *buf = malloc(WIRE_FRAME_MAX);
	uint32_t *prefix = malloc((n + 1) * sizeof(uint32_t));
	uint32_t m[32], stored;
	struct wg_rng r = { 99 };
	struct wire_frame wf;
	size_t body = n - WIRE_CRC_SIZE;
	uint64_t checked = 0;

	(void)state;
	for (size_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)wg_next(&r);
	assert_int_equal(wg_raw_frame(frame, WIRE_CH_RECORDS, 0, 3, 77, payload, plen), n);
	memcpy(&stored, frame + body, 4);
	prefix[0] = 0;
	for (size_t i = 0; i < body; i++)
		prefix[i + 1] = wire_crc32c_table(prefix[i], frame + i, 1);
	assert_int_equal(prefix[body], stored);

	/* M = A^0 = identity; walk from the last body byte to the first. */
	for (int j = 0; j < 32; j++)
		m[j] = 1u << j;
	for (size_t i = body; i-- > 0;) {
		for (int b = 0; b < 8; b++) {
			uint8_t x = frame[i] ^ (uint8_t)(1u << b);
			uint32_t d = wire_crc32c_table(prefix[i], &x, 1) ^ prefix[i + 1];
			uint32_t crc = stored ^ apply(m, d);
			assert_int_not_equal(crc, stored);
			checked++;
			if (wg_below(&r, 40000) == 0) {	/* the slow way agrees */
				frame[i] = x;
				assert_int_equal(wire_crc32c_table(0, frame, body), crc);
				assert_int_equal(wire_crc32c(0, frame, body), crc);
				frame[i] ^= (uint8_t)(1u << b);
			}
		}
		/* M = A^(k+1) = A^k A: column j becomes M (A e_j). */
		uint32_t nm[32];
		for (int j = 0; j < 32; j++)
			nm[j] = apply(m, zero_byte_step(1u << j));
		memcpy(m, nm, sizeof(m));
	}
	/* Flips in the CRC field itself, the slow way. */
	for (int b = 0; b < 32; b++) {
		frame[body + b / 8] ^= (uint8_t)(1u << (b % 8));
		size_t cn = wire_cobs_encode(frame, n, cobs);
		assert_int_equal(wire_frame_unpack(cobs, cn, buf, WIRE_FRAME_MAX, &wf), WIRE_E_CRC);
		frame[body + b / 8] ^= (uint8_t)(1u << (b % 8));
		checked++;
	}
	assert_int_equal(checked, (uint64_t)n * 8);
	{
		size_t cn = wire_cobs_encode(frame, n, cobs);
		assert_int_equal(wire_frame_unpack(cobs, cn, buf, WIRE_FRAME_MAX, &wf), 0);
		assert_int_equal(wf.len, plen);
		assert_int_equal(wf.cpu, 3);
		assert_int_equal(wf.seq, 77);
	}

	/* A 2 KiB frame: every bit through the real check. */
	{
		size_t fn = wg_raw_frame(frame, WIRE_CH_AUX, 0, 1, 5, payload, 2048);
		for (size_t bit = 0; bit < fn * 8; bit++) {
			frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			size_t cn = wire_cobs_encode(frame, fn, cobs);
			assert_int_not_equal(wire_frame_unpack(cobs, cn, buf, WIRE_FRAME_MAX, &wf), 0);
			frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
	}
	print_message("# %llu single-bit errors in a %zu-byte frame, all caught\n",
		      (unsigned long long)checked, n);
	free(payload);
	free(frame);
	free(cobs);
	free(buf);
	free(prefix);
}

/*
 * wire.h's claim that every error of up to 3 bits is caught in frames of
 * any size the format allows: no x^i (i < bits in a maximum frame) repeats
 * (2-bit errors), and no 1 + x^i equals an x^j (3-bit errors), modulo the
 * generator 0x1EDC6F41.
 */
static void crc_catches_every_3_bit_error(void **state)
{
	const uint32_t n = WIRE_FRAME_MAX * 8, size = 1u << 21;
	uint32_t *key = calloc(size, sizeof(uint32_t));
	uint64_t v = 1;

	(void)state;
	/* Open addressing: key 0 never occurs (x^i mod P is never 0). */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t h = (uint32_t)(v * 0x9e3779b1u) >> 11;
		while (key[h] && key[h] != (uint32_t)v)
			h = (h + 1) & (size - 1);
		assert_int_equal(key[h], 0);		/* x^i repeats: a 2-bit error slips */
		key[h] = (uint32_t)v;
		v <<= 1;
		if (v >> 32)
			v ^= 0x11edc6f41ull;
	}
	for (uint32_t h = 0; h < size; h++) {
		if (!key[h] || key[h] == 1)
			continue;
		uint32_t t = key[h] ^ 1, g = (t * 0x9e3779b1u) >> 11;
		while (key[g] && key[g] != t)
			g = (g + 1) & (size - 1);
		assert_int_equal(key[g], 0);		/* 1 + x^i = x^j: a 3-bit error slips */
	}
	free(key);
}

/* ---- COBS, varints, frame checks ---------------------------------------- */

static void cobs_edges(void **state)
{
	static const size_t lens[] = { 0, 1, 2, 253, 254, 255, 256, 507, 508, 509, 1000 };
	uint8_t in[1100], enc[1200], dec[1100];
	struct wg_rng r = { 3 };

	(void)state;
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		size_t n = lens[li];
		for (int kind = 0; kind < 4; kind++) {
			for (size_t i = 0; i < n; i++)
				in[i] = kind == 0 ? 0 : kind == 1 ? (uint8_t)(1 + i % 255) :
					kind == 2 ? (uint8_t)wg_next(&r) : (i % 3 ? 0 : 0x41);
			size_t en = wire_cobs_encode(in, n, enc);
			assert_true(en <= WIRE_COBS_MAX(n));
			assert_null(memchr(enc, 0, en));
			assert_int_equal(wire_cobs_decode(enc, en, dec, sizeof(dec)), (long)n);
			assert_memory_equal(dec, in, n);
			/* One byte short of room is refused, never overrun. */
			if (n)
				assert_int_equal(wire_cobs_decode(enc, en, dec, n - 1), WIRE_E_COBS);
		}
	}
	/* Known answers (Cheshire and Baker's examples): a zero inside, a zero
	 * alone, and 254 non-zero bytes, a full block and an empty one. */
	static const uint8_t k_in[] = { 0x11, 0x22, 0x00, 0x33 };
	static const uint8_t k_out[] = { 0x03, 0x11, 0x22, 0x02, 0x33 };
	assert_int_equal(wire_cobs_encode(k_in, sizeof(k_in), enc), sizeof(k_out));
	assert_memory_equal(enc, k_out, sizeof(k_out));
	assert_int_equal(wire_cobs_encode(k_in + 2, 1, enc), 2);
	assert_int_equal(enc[0], 0x01);
	assert_int_equal(enc[1], 0x01);
	memset(in, 0x41, 254);
	assert_int_equal(wire_cobs_encode(in, 254, enc), 256);
	assert_int_equal(enc[0], 0xff);
	assert_int_equal(enc[255], 0x01);
	/* A code byte that runs past the end, a zero code byte. */
	assert_int_equal(wire_cobs_decode((const uint8_t *)"\x05" "ab", 3, dec, 10), WIRE_E_COBS);
	assert_int_equal(wire_cobs_decode((const uint8_t *)"\x02" "a\x00", 3, dec, 10), WIRE_E_COBS);
}

static void varint_edges(void **state)
{
	static const uint64_t vals[] = {
		0, 1, 127, 128, 16383, 16384, 0xffffffff, 0x7fffffffffffffffull,
		0x8000000000000000ull, 0xffffffffffffffffull,
	};
	uint8_t b[16];
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		size_t n = wire_put_uvarint(b, vals[i]);
		assert_true(n >= 1 && n <= 10);
		assert_int_equal(wire_get_uvarint(b, b + n, &v), n);
		assert_true(v == vals[i]);
		assert_int_equal(wire_get_uvarint(b, b + n - 1, &v), 0);	/* cut short */
		int64_t s = (int64_t)vals[i];
		assert_true(wire_unzigzag(wire_zigzag((uint64_t)s)) == (uint64_t)s);
		assert_true(wire_unzigzag(wire_zigzag(0 - (uint64_t)s)) == 0 - (uint64_t)s);
	}
	assert_int_equal(wire_zigzag((uint64_t)-1), 1);
	assert_int_equal(wire_zigzag(1), 2);
	/* Eleven bytes, or a tenth byte with bits past 64: refused. */
	memset(b, 0x80, 10);
	b[10] = 0;
	assert_int_equal(wire_get_uvarint(b, b + 11, &v), 0);
	memset(b, 0xff, 9);
	b[9] = 2;
	assert_int_equal(wire_get_uvarint(b, b + 10, &v), 0);
	b[9] = 1;
	assert_int_equal(wire_get_uvarint(b, b + 10, &v), 10);
	assert_true(v == 0xffffffffffffffffull);
}

static void frame_checks(void **state)
{
	uint8_t payload[16] = "hello", f[64], c[80], buf[WIRE_FRAME_MIN + 64];
	struct wire_frame wf;
	size_t n, cn;

	(void)state;
	n = wg_raw_frame(f, WIRE_CH_CONSOLE, 0, 0xffff, 0xfffffffe, payload, 5);
	cn = wire_cobs_encode(f, n, c);
	assert_int_equal(wire_frame_unpack(c, cn, buf, sizeof(buf), &wf), 0);
	assert_int_equal(wf.channel, WIRE_CH_CONSOLE);
	assert_int_equal(wf.cpu, WIRE_CPU_HOST);
	assert_int_equal(wf.seq, 0xfffffffe);
	assert_int_equal(wf.len, 5);
	assert_memory_equal(wf.payload, "hello", 5);
	/* Empty payload is a frame; shorter is not. */
	n = wg_raw_frame(f, WIRE_CH_CONTROL, 0, 1, 2, payload, 0);
	cn = wire_cobs_encode(f, n, c);
	assert_int_equal(wire_frame_unpack(c, cn, buf, sizeof(buf), &wf), 0);
	/* Shorter than a header and a CRC, with a right CRC: still not a frame. */
	{
		uint32_t crc = wire_crc32c(0, f, WIRE_HEADER_SIZE - 1);
		memcpy(f + WIRE_HEADER_SIZE - 1, &crc, 4);
	}
	cn = wire_cobs_encode(f, WIRE_HEADER_SIZE - 1 + 4, c);
	assert_int_equal(wire_frame_unpack(c, cn, buf, sizeof(buf), &wf), WIRE_E_SHORT);
	/* The boot is the u32 after seq; a version 1 frame has none (0). */
	n = wg_raw_frame(f, WIRE_CH_CONSOLE, 0, 3, 4, payload, 5);
	memcpy(f + 8, "\x78\x56\x34\x12", 4);
	{
		uint32_t crc = wire_crc32c(0, f, n - 4);
		memcpy(f + n - 4, &crc, 4);
	}
	cn = wire_cobs_encode(f, n, c);
	assert_int_equal(wire_frame_unpack(c, cn, buf, sizeof(buf), &wf), 0);
	assert_int_equal(wf.boot, 0x12345678);
	f[0] = 1 << 4 | WIRE_CH_CONSOLE;
	memcpy(f + 8, "hello", 5);
	{
		uint32_t crc = wire_crc32c(0, f, 13);
		memcpy(f + 13, &crc, 4);
	}
	cn = wire_cobs_encode(f, 17, c);
	assert_int_equal(wire_frame_unpack(c, cn, buf, sizeof(buf), &wf), 0);
	assert_int_equal(wf.boot, 0);
	assert_int_equal(wf.seq, 4);
	assert_int_equal(wf.len, 5);
	assert_memory_equal(wf.payload, "hello", 5);
	/* A newer version, an unknown channel: right CRC, still refused. */
	n = wg_raw_frame(f, 7, 0, 1, 2, payload, 4);
	cn = wire_cobs_encode(f, n, c);
	assert_int_equal(wire_frame_unpack(c, cn, buf, sizeof(buf), &wf), WIRE_E_CHANNEL);
	f[0] = (WIRE_VERSION + 1) << 4 | WIRE_CH_RECORDS;
	{
		uint32_t crc = wire_crc32c(0, f, n - 4);
		memcpy(f + n - 4, &crc, 4);
	}
	cn = wire_cobs_encode(f, n, c);
	assert_int_equal(wire_frame_unpack(c, cn, buf, sizeof(buf), &wf), WIRE_E_VERSION);
}

/* ---- round trips ---------------------------------------------------------- */

static struct wg_buf enc_out;

/* Encode records with a fresh encoder, decode, expect exactly records. */
static struct wire_enc round_trip(const uint8_t *rec, size_t len, const struct wire_enc_config *cfg,
				  uint64_t split_seed)
{
	struct wire_enc e;
	struct wg_collect c = { 0 };
	struct wire_dec *d;
	const struct wire_dec_stats *s;

	wire_encoder_init(&e, cfg);
	enc_out.len = 0;
	wg_encode_records(&e, rec, len, &enc_out);
	d = wg_decode(enc_out.p, enc_out.len, &c, split_seed);
	s = wire_dec_stats(d);
	assert_int_equal(c.blob.len, len);
	assert_memory_equal(c.blob.p, rec, len);
	assert_int_equal(s->frames_ok, e.framer.frames);
	assert_int_equal(s->lost_frames, 0);
	assert_int_equal(s->garbage_bytes, 0);
	assert_int_equal(s->crc_errors + s->cobs_errors + s->bad_payload, 0);
	assert_int_equal(s->compact_samples, e.stats.samples_compact);
	assert_int_equal(c.unframed.len, 0);
	for (size_t i = 0; i < c.n; i++) {
		assert_int_equal(c.f[i].seq, i);
		assert_int_equal(c.f[i].cpu, cfg->cpu);
		assert_int_equal(c.f[i].channel, WIRE_CH_RECORDS);
	}
	wire_dec_free(d);
	wg_collect_free(&c);
	return e;
}

static void every_record_type(void **state)
{
	uint8_t rec[8192];
	struct wg_rng r = { 11 };
	struct wire_enc_config cfg = { .cpu = 2 };
	size_t n;

	(void)state;
	n = wg_other_records(&r, rec);
	n += wg_random_sample(&r, rec + n, BP_SAMPLE_IP | BP_SAMPLE_TIME);
	cfg.sample_type = BP_SAMPLE_IP | BP_SAMPLE_TIME;
	struct wire_enc e = round_trip(rec, n, &cfg, 0);
	assert_int_equal(e.stats.records, 14);
	assert_int_equal(e.stats.samples_compact, 1);
	/* Every split of the input across decoder feeds. */
	for (uint64_t seed = 1; seed < 20; seed++)
		round_trip(rec, n, &cfg, seed);
}

/* The first frame the encoder wrote to enc_out, unpacked into buf. */
static void first_frame(uint8_t *buf, size_t cap, struct wire_frame *f)
{
	size_t at = enc_out.p[0] == WIRE_DELIM ? 1 : 0, end = at;

	while (enc_out.p[end] != WIRE_DELIM)
		end++;
	assert_int_equal(wire_frame_unpack(enc_out.p + at, end - at, buf, cap, f), 0);
}

/*
 * A record mostly zero goes as WIRE_ITEM_RAW_SPARSE, a third of its size
 * here, and comes back exact; a dense one stays WIRE_ITEM_RAW; a sparse
 * item whose mask or size lies is malformed.
 */
/* Encode with a framer that sends records sparse, decode, expect them all. */
static void sparse_round_trip(const uint8_t *rec, size_t len)
{
	struct wire_enc_config cfg = { .cpu = 1 };
	struct wg_collect c = { 0 };
	struct wire_enc e;
	struct wire_dec *d;

	wire_encoder_init(&e, &cfg);
	e.framer.sparse = true;
	enc_out.len = 0;
	wg_encode_records(&e, rec, len, &enc_out);
	d = wg_decode(enc_out.p, enc_out.len, &c, 3);
	assert_int_equal(c.blob.len, len);
	assert_memory_equal(c.blob.p, rec, len);
	assert_int_equal(wire_dec_stats(d)->bad_payload, 0);
	wire_dec_free(d);
	wg_collect_free(&c);
}

static void sparse_records(void **state)
{
	static uint8_t buf[WIRE_FRAME_MAX], rec[BP_RECORD_MAX], back[BP_RECORD_MAX + 64];
	struct bp_record_header h = { BP_RECORD_CPU_INFO, 0, 160 };
	struct wire_enc_config cfg = { .cpu = 1 };
	struct wg_rng r = { 11 };
	struct wire_frame f;
	uint8_t bad[64];

	(void)state;
	memset(rec, 0, sizeof(rec));
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 64, "AuthenticAMD", 12);
	round_trip(rec, 160, &cfg, 0);
	first_frame(buf, sizeof(buf), &f);
	assert_int_equal(f.payload[0], WIRE_ITEM_RAW);	/* not sparse unless the framer says */
	sparse_round_trip(rec, 160);
	first_frame(buf, sizeof(buf), &f);
	assert_int_equal(f.payload[0], WIRE_ITEM_RAW_SPARSE);
	/* tag, varint 20, 20 mask bytes, 3 + 12 nonzero bytes */
	assert_int_equal(f.len, 1 + 1 + 20 + 3 + 12);
	sparse_round_trip(rec, wg_other_records(&r, rec));

	memset(rec, 0, 160);
	memcpy(rec, &h, sizeof(h));
	for (int i = 8; i < 160; i++)
		rec[i] = (uint8_t)(i | 1);
	sparse_round_trip(rec, 160);
	first_frame(buf, sizeof(buf), &f);
	assert_int_equal(f.payload[0], WIRE_ITEM_RAW);

	/* 8 bytes: type 1, size 8 at bytes 6-7: mask 0x41, then 1 and 8. */
	const uint8_t good[] = { WIRE_ITEM_RAW_SPARSE, 1, 0x41, 1, 8 };
	assert_int_equal(wire_dec_records(good, sizeof(good), back, sizeof(back), NULL), 8);
	assert_int_equal(back[0], 1);
	assert_int_equal(back[6], 8);
	memcpy(bad, good, sizeof(good));
	bad[4] = 16;			/* the header says 16 bytes, the item has 8 */
	assert_true(wire_dec_records(bad, sizeof(good), back, sizeof(back), NULL) < 0);
	memcpy(bad, good, sizeof(good));
	bad[3] = 0;			/* a byte the mask says is not zero */
	assert_true(wire_dec_records(bad, sizeof(good), back, sizeof(back), NULL) < 0);
	assert_true(wire_dec_records(good, 4, back, sizeof(back), NULL) < 0);	/* cut short */
	bad[1] = 0;			/* no words */
	assert_true(wire_dec_records(bad, 2, back, sizeof(back), NULL) < 0);
}

/*
 * Frames that span calls (wire_framer.span): records given 2 KiB at a time
 * fill frames up to frame_target, the last one closed by
 * wire_framer_finish; they decode to exactly the records, in fewer frames
 * than when each call closes its own.
 */
static void frames_span_calls(void **state)
{
	static uint8_t span[2048], out[WIRE_ENC_OUT_MIN];
	const uint64_t st = BP_SAMPLE_IP | BP_SAMPLE_TIME;
	struct wire_enc_config cfg = { .cpu = 0, .sample_type = st, .frame_target = 1024 };
	uint8_t *rec = malloc(64 << 10);
	struct wg_rng r = { 9 };
	struct wg_loop l;
	uint64_t frames[2];
	size_t n = 0;

	(void)state;
	n = wg_other_records(&r, rec);
	wg_loop_init(&l, 77, 100000, 500);	/* a hot loop: 85 samples in 2 KiB, ~300 bytes */
	while (n < (60 << 10))
		n += wg_loop_sample(&l, rec + n, st, 0);
	for (int spanning = 0; spanning < 2; spanning++) {
		struct wg_collect c = { 0 };
		struct wire_enc e;
		wire_encoder_init(&e, &cfg);
		if (spanning) {
			e.framer.span = span;
			e.framer.span_cap = sizeof(span);
		}
		enc_out.len = 0;
		for (size_t done = 0, used; done < n; done += used) {
			/* A piece may end inside a record: it comes again in the next. */
			size_t piece = n - done < 2048 ? n - done : 2048;
			size_t w = wire_encode_records(&e, rec + done, piece, &used, out, sizeof(out));
			assert_true(used > 0);
			wg_buf_put(&enc_out, out, w);
		}
		wg_buf_put(&enc_out, out, wire_framer_finish(&e.framer, out, sizeof(out)));
		assert_false(e.framer.span_open);
		struct wire_dec *d = wg_decode(enc_out.p, enc_out.len, &c, 7);
		assert_int_equal(c.blob.len, n);
		assert_memory_equal(c.blob.p, rec, n);
		assert_int_equal(wire_dec_stats(d)->lost_frames, 0);
		frames[spanning] = e.framer.frames;
		wire_dec_free(d);
		wg_collect_free(&c);
	}
	print_message("# %zu record bytes in 2 KiB calls: %llu frames closed per call, %llu spanning\n",
		      n, (unsigned long long)frames[0], (unsigned long long)frames[1]);
	assert_true(frames[1] * 2 < frames[0]);
	free(rec);
}

/*
 * A framer that keeps descriptors (the kernel's, for repeats on request)
 * keeps those of the frames it sent, from the last RUN_META on, and none of
 * a WIRE_F_REPEAT frame; one that holds repeats sends nothing of records
 * given with WIRE_F_REPEAT, and takes them all.
 */
static void descs_kept_and_repeats_held(void **state)
{
	static uint8_t keep[4096], out[WIRE_ENC_OUT_MIN];
	uint8_t rec[4096];
	struct wire_descs d = { keep, sizeof(keep), 0, 0 };
	struct wire_enc_config cfg = { .cpu = 0, .sample_type = BP_SAMPLE_IP | BP_SAMPLE_TIME };
	struct wg_rng r = { 5 };
	struct wire_enc e;
	size_t n = 0, used, w;

	(void)state;
	memset(rec, 0, sizeof(rec));
	const uint32_t types[] = { BP_RECORD_RUN_META, BP_RECORD_CPU_INFO, BP_RECORD_EVENT_DESC };
	for (size_t i = 0; i < 3; i++) {
		struct bp_record_header h = { types[i], 0, 64 };
		memcpy(rec + n, &h, sizeof(h));
		rec[n + 8] = (uint8_t)(i + 1);
		n += 64;
	}
	size_t descs_len = n;
	n += wg_random_sample(&r, rec + n, BP_SAMPLE_IP | BP_SAMPLE_TIME);
	wire_encoder_init(&e, &cfg);
	e.framer.keep = &d;
	w = wire_encode_records(&e, rec, n, &used, out, sizeof(out));
	assert_true(w > 0);
	assert_int_equal(used, n);
	assert_int_equal(d.len, descs_len);
	assert_memory_equal(keep, rec, descs_len);

	/* A repeat is not kept again; a new RUN_META starts a new set. */
	e.framer.flags = WIRE_F_REPEAT;
	w = wire_encode_records(&e, rec, 64, &used, out, sizeof(out));
	assert_true(w > 0);
	assert_int_equal(d.len, descs_len);
	e.framer.flags = 0;
	w = wire_encode_records(&e, rec, 64, &used, out, sizeof(out));
	assert_int_equal(d.len, 64);

	/* Held: nothing written, nothing numbered, everything taken. */
	uint64_t frames = e.framer.frames;
	uint32_t seq = e.framer.seq[WIRE_CH_RECORDS];
	e.framer.hold_repeats = true;
	e.framer.flags = WIRE_F_REPEAT;
	w = wire_encode_records(&e, rec, descs_len, &used, out, sizeof(out));
	assert_int_equal(w, 0);
	assert_int_equal(used, descs_len);
	assert_int_equal(e.framer.frames, frames);
	assert_int_equal(e.framer.seq[WIRE_CH_RECORDS], seq);
	/* Not held without the flag. */
	e.framer.flags = 0;
	w = wire_encode_records(&e, rec, descs_len, &used, out, sizeof(out));
	assert_true(w > 0);
	assert_int_equal(e.framer.seq[WIRE_CH_RECORDS], seq + 1);
}


/*
 * Every combination of the ten supported sample_type bits, with random
 * values (edges, wrap-arounds, READ groups and callchains longer than the
 * prediction slots), several samples a frame so the predictions work.
 */
static void every_sample_type(void **state)
{
	enum { PER_TYPE = 12 };
	static const uint64_t bits[] = {
		BP_SAMPLE_IP, BP_SAMPLE_TID, BP_SAMPLE_TIME, BP_SAMPLE_ADDR, BP_SAMPLE_READ,
		BP_SAMPLE_CALLCHAIN, BP_SAMPLE_ID, BP_SAMPLE_CPU, BP_SAMPLE_PERIOD,
		BP_SAMPLE_IDENTIFIER,
	};
	uint8_t *rec = malloc(PER_TYPE * 1024);
	struct wg_rng r = { 12345 };
	uint64_t compact = 0, total = 0;

	(void)state;
	for (unsigned m = 0; m < 1u << 10; m++) {
		uint64_t st = 0;
		size_t n = 0;
		for (int b = 0; b < 10; b++)
			if (m & (1u << b))
				st |= bits[b];
		for (int i = 0; i < PER_TYPE; i++)
			n += wg_random_sample(&r, rec + n, st);
		struct wire_enc_config cfg = { .cpu = (uint16_t)m, .sample_type = st,
					       .frame_target = m % 3 ? 0 : 200 };
		struct wire_enc e = round_trip(rec, n, &cfg, m);
		compact += e.stats.samples_compact;
		total += e.stats.records;
	}
	/* Random values cost more than raw now and then; most go compact. */
	print_message("# %llu of %llu samples compact\n", (unsigned long long)compact,
		      (unsigned long long)total);
	assert_true(compact * 10 > total * 9);
	free(rec);
}

/* Samples the encoder cannot parse, or does not know, go raw and exact. */
static void samples_raw_when_unknown(void **state)
{
	uint8_t rec[4096];
	struct wg_rng r = { 5 };
	struct wire_enc_config cfg = { .sample_type = BP_SAMPLE_IP | BP_SAMPLE_TIME };
	size_t n = 0;

	(void)state;
	/* Written with another sample_type: sizes disagree. */
	n += wg_random_sample(&r, rec + n, BP_SAMPLE_IP | BP_SAMPLE_TIME | BP_SAMPLE_ADDR);
	n += wg_random_sample(&r, rec + n, BP_SAMPLE_IP);
	/* A SAMPLE header with nothing after it. */
	memcpy(rec + n, &(struct bp_record_header){ BP_RECORD_SAMPLE, 0, 8 }, 8);
	n += 8;
	n += wg_random_sample(&r, rec + n, BP_SAMPLE_IP | BP_SAMPLE_TIME);
	struct wire_enc e = round_trip(rec, n, &cfg, 0);
	assert_int_equal(e.stats.samples_raw, 3);
	assert_int_equal(e.stats.samples_compact, 1);
	/* No sample_type at all: everything raw. */
	cfg.sample_type = 0;
	e = round_trip(rec, n, &cfg, 0);
	assert_int_equal(e.stats.samples_raw, 4);
}

/* No sample_type given: learned from an EVENT_DESC, or set per run. */
static void sample_type_learned_or_set(void **state)
{
	const uint64_t st = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
			    BP_SAMPLE_CPU | BP_SAMPLE_PERIOD;
	struct bp_record_event_desc ed = { .header = { BP_RECORD_EVENT_DESC, 0, sizeof(ed) },
					   .sample_type = st };
	uint8_t rec[8192];
	struct wg_loop l;
	struct wire_enc_config cfg = { .cpu = 1 };
	size_t n = 0, k;

	(void)state;
	wg_loop_init(&l, 9, 1000, 10);
	for (int i = 0; i < 20; i++)
		n += wg_loop_sample(&l, rec + n, st, 1);
	k = n;
	memcpy(rec + n, &ed, sizeof(ed)), n += sizeof(ed);
	for (int i = 0; i < 20; i++)
		n += wg_loop_sample(&l, rec + n, st, 1);
	struct wire_enc e = round_trip(rec, n, &cfg, 0);
	assert_int_equal(e.stats.samples_raw, 20);		/* before the EVENT_DESC */
	assert_int_equal(e.stats.samples_compact, 20);		/* after it */
	assert_true(e.sample_type == st);

	/* What a CPU whose ring has no EVENT_DESC needs: the setter. */
	struct wire_enc e2;
	uint8_t out[4096];
	size_t used;
	wire_encoder_init(&e2, &cfg);
	wire_encoder_set_sample_type(&e2, st);
	assert_true(wire_encode_records(&e2, rec, k, &used, out, sizeof(out)) < k / 4);
	assert_int_equal(used, k);
	assert_int_equal(e2.stats.samples_compact, 20);
}

/* IDENTIFIER events learned from EVENT_DESC records, mixed in one frame. */
static void samples_by_identifier(void **state)
{
	uint8_t rec[16384];
	struct wg_rng r = { 8 };
	const uint64_t st_a = BP_SAMPLE_IDENTIFIER | BP_SAMPLE_IP | BP_SAMPLE_TIME;
	const uint64_t st_b = BP_SAMPLE_IDENTIFIER | BP_SAMPLE_IP | BP_SAMPLE_CALLCHAIN |
			      BP_SAMPLE_READ;
	struct bp_record_event_desc ed = { .header = { BP_RECORD_EVENT_DESC, 0, sizeof(ed) } };
	struct wire_enc_config cfg = { 0 };
	size_t n = 0;

	(void)state;
	ed.id = 10, ed.sample_type = st_a;
	memcpy(rec + n, &ed, sizeof(ed)), n += sizeof(ed);
	ed.id = 20, ed.sample_type = st_b;
	memcpy(rec + n, &ed, sizeof(ed)), n += sizeof(ed);
	for (int i = 0; i < 60; i++) {
		uint64_t ips[3] = { 1, 2, 3 };
		struct bp_group_entry g[2] = { { 1, 100 + (uint64_t)i }, { 2, 7 } };
		struct wg_sample s = { .misc = BP_MISC_KERNEL, .ip = 0xffffffff80001000ull + i,
				       .time = 1000 + 10 * (uint64_t)i, .nr_read = 2, .read = g,
				       .nr_ips = 3, .ips = ips };
		bool a = wg_below(&r, 2);
		s.identifier = a ? 10 : 20;
		n += wg_sample(rec + n, a ? st_a : st_b, &s);
	}
	struct wire_enc e = round_trip(rec, n, &cfg, 0);
	assert_int_equal(e.stats.samples_compact, 60);
	assert_int_equal(e.nr_events, 2);
}

/* Each frame decodes on its own: drop all but one, get exactly its records. */
static void frames_decode_alone(void **state)
{
	const uint64_t st = BP_SAMPLE_IP | BP_SAMPLE_TIME | BP_SAMPLE_CALLCHAIN | BP_SAMPLE_PERIOD;
	uint8_t *rec = malloc(1 << 20);
	struct wg_loop l;
	struct wire_enc e;
	struct wire_enc_config cfg = { .cpu = 1, .sample_type = st, .frame_target = 120 };
	struct wg_collect all = { 0 };
	size_t n = 0;

	(void)state;
	wg_loop_init(&l, 1, 5000, 100);
	for (int i = 0; i < 500; i++)
		n += wg_loop_sample(&l, rec + n, st, 1);
	wire_encoder_init(&e, &cfg);
	enc_out.len = 0;
	wg_encode_records(&e, rec, n, &enc_out);
	wire_dec_free(wg_decode(enc_out.p, enc_out.len, &all, 0));
	assert_true(all.n > 20);

	/* Split the stream at its delimiters and decode each frame alone. */
	size_t start = 1;	/* after the leading delimiter */
	for (size_t i = 0; i < all.n; i++) {
		uint8_t *z = memchr(enc_out.p + start, 0, enc_out.len - start);
		struct wg_collect one = { 0 };
		assert_non_null(z);
		size_t end = (size_t)(z - enc_out.p) + 1;
		struct wire_dec *d = wg_decode(enc_out.p + start, end - start, &one, 0);
		assert_int_equal(one.n, 1);
		assert_int_equal(one.f[0].seq, i);
		assert_int_equal(one.f[0].lost_before, i);	/* it says what it missed */
		assert_int_equal(one.blob.len, all.f[i].len);
		assert_memory_equal(one.blob.p, all.blob.p + all.f[i].at, one.blob.len);
		/* Payload within the target, unless one record alone. */
		assert_true(end - start <= WIRE_COBS_MAX(120 + WIRE_FRAME_MIN) + 1 || all.f[i].nrec == 1);
		wire_dec_free(d);
		wg_collect_free(&one);
		start = end;
	}
	assert_int_equal(start, enc_out.len);
	wg_collect_free(&all);
	free(rec);
}

/* Records up to BP_RECORD_MAX, each in its own frame. */
static void largest_records(void **state)
{
	const uint64_t st = BP_SAMPLE_IP | BP_SAMPLE_CALLCHAIN;
	uint8_t *rec = malloc(4 * BP_RECORD_MAX);
	uint64_t *ips = malloc(BP_RECORD_MAX);
	struct wg_rng r = { 77 };
	size_t n = 0;
	uint32_t nr = (BP_RECORD_MAX - 24) / 8;

	(void)state;
	for (uint32_t i = 0; i < nr; i++)
		ips[i] = 0xffffffff80000000ull + (wg_next(&r) & 0xffff);
	struct wg_sample s = { .ip = ips[0], .nr_ips = nr, .ips = ips };
	n += wg_sample(rec + n, st, &s);			/* compact: small deltas */
	assert_int_equal(n, BP_RECORD_MAX);
	for (uint32_t i = 0; i < nr; i++)
		ips[i] = wg_next(&r);
	n += wg_sample(rec + n, st, &s);			/* random: goes raw */
	{
		struct bp_record_header h = { 0x4100, 0, BP_RECORD_MAX };
		memset(rec + n, 0, BP_RECORD_MAX);
		memcpy(rec + n, &h, 8);
		n += BP_RECORD_MAX;
	}
	struct wire_enc_config cfg = { .sample_type = st };
	struct wire_enc e = round_trip(rec, n, &cfg, 3);
	assert_int_equal(e.framer.frames, 3);
	assert_int_equal(e.stats.samples_compact, 1);
	assert_int_equal(e.stats.samples_raw, 1);
	free(rec);
	free(ips);
}

/* Out buffers too small for everything: whole records, whole frames. */
static void small_out_buffers(void **state)
{
	const uint64_t st = BP_SAMPLE_IP | BP_SAMPLE_TIME;
	uint8_t rec[24 * 400], out[700];
	struct wg_loop l;
	struct wire_enc e;
	struct wire_enc_config cfg = { .sample_type = st, .frame_target = 256 };
	struct wg_collect c = { 0 };
	size_t n = 0, at = 0, used;

	(void)state;
	wg_loop_init(&l, 2, 1000, 10);
	for (int i = 0; i < 400; i++)
		n += wg_loop_sample(&l, rec + n, st, 0);
	wire_encoder_init(&e, &cfg);
	/* Nothing fits in 10 bytes: no output, nothing consumed. */
	assert_int_equal(wire_encode_records(&e, rec, n, &used, out, 10), 0);
	assert_int_equal(used, 0);
	enc_out.len = 0;
	for (size_t cap = 30; at < n; cap = cap * 3 / 2 % sizeof(out) + 30) {
		size_t w = wire_encode_records(&e, rec + at, n - at, &used, out, cap);
		assert_true(w <= cap);
		assert_int_equal(used % 24, 0);
		wg_buf_put(&enc_out, out, w);
		at += used;
	}
	wire_dec_free(wg_decode(enc_out.p, enc_out.len, &c, 9));
	assert_int_equal(c.blob.len, n);
	assert_memory_equal(c.blob.p, rec, n);
	wg_collect_free(&c);

	/* A malformed record stops the encoder there. */
	memcpy(rec + 48, &(struct bp_record_header){ BP_RECORD_SAMPLE, 0, 12 }, 8);
	assert_true(wire_encode_records(&e, rec, n, &used, out, sizeof(out)) > 0);
	assert_int_equal(used, 48);
	assert_int_equal(e.stats.bad_input, 1);
}

static void byte_channels(void **state)
{
	uint8_t text[5000], aux[3000], ctl[200], out[WIRE_ENC_OUT_MIN];
	struct wg_rng r = { 6 };
	struct wire_enc e;
	struct wire_enc_config cfg = { .cpu = 4, .frame_target = 512 };
	struct wg_collect c = { 0 };
	size_t used, w;

	(void)state;
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (uint8_t)(i % 80 == 79 ? '\n' : ' ' + i % 90);
	for (size_t i = 0; i < sizeof(aux); i++)
		aux[i] = (uint8_t)(wg_below(&r, 4) ? 0 : wg_next(&r));
	for (size_t i = 0; i < sizeof(ctl); i++)
		ctl[i] = (uint8_t)i;
	wire_encoder_init(&e, &cfg);
	enc_out.len = 0;
	w = wire_encode_bytes(&e, WIRE_CH_CONSOLE, text, sizeof(text), &used, out, sizeof(out));
	assert_int_equal(used, sizeof(text));
	wg_buf_put(&enc_out, out, w);
	w = wire_encode_aux(&e, 0x123456789ull, aux, sizeof(aux), &used, out, sizeof(out));
	assert_int_equal(used, sizeof(aux));
	wg_buf_put(&enc_out, out, w);
	w = wire_encode_bytes(&e, WIRE_CH_CONTROL, ctl, sizeof(ctl), &used, out, sizeof(out));
	assert_int_equal(used, sizeof(ctl));
	wg_buf_put(&enc_out, out, w);
	/* A control message is one frame or nothing. */
	assert_int_equal(wire_encode_bytes(&e, WIRE_CH_CONTROL, ctl, sizeof(ctl), &used, out, 100), 0);
	assert_int_equal(used, 0);
	/* RECORDS through wire_encode_bytes: refused. */
	assert_int_equal(wire_encode_bytes(&e, WIRE_CH_RECORDS, ctl, 16, &used, out, sizeof(out)), 0);
	/* Console text through a small buffer: split, all of it. */
	for (size_t at = 0; at < 300; at += used) {
		w = wire_encode_bytes(&e, WIRE_CH_CONSOLE, text + at, 300 - at, &used, out, 60);
		assert_true(used > 0 && w <= 60);
		wg_buf_put(&enc_out, out, w);
	}

	struct wire_dec *d = wg_decode(enc_out.p, enc_out.len, &c, 4);
	size_t t = 0, a = 0;
	struct wg_buf got_text = { 0 }, got_aux = { 0 };
	for (size_t i = 0; i < c.n; i++) {
		const struct wg_frame *f = &c.f[i];
		assert_int_equal(f->cpu, 4);
		if (f->channel == WIRE_CH_CONSOLE) {
			assert_int_equal(f->seq, t++);
			wg_buf_put(&got_text, c.blob.p + f->at, f->len);
		} else if (f->channel == WIRE_CH_AUX) {
			assert_int_equal(f->seq, a++);
			assert_true(f->aux_pos == 0x123456789ull + got_aux.len);
			assert_true(f->len <= 512 - 8);
			wg_buf_put(&got_aux, c.blob.p + f->at, f->len);
		} else {
			assert_int_equal(f->channel, WIRE_CH_CONTROL);
			assert_int_equal(f->len, sizeof(ctl));
			assert_memory_equal(c.blob.p + f->at, ctl, sizeof(ctl));
		}
	}
	assert_int_equal(got_text.len, sizeof(text) + 300);
	assert_memory_equal(got_text.p, text, sizeof(text));
	assert_memory_equal(got_text.p + sizeof(text), text, 300);
	assert_int_equal(got_aux.len, sizeof(aux));
	assert_memory_equal(got_aux.p, aux, sizeof(aux));
	assert_int_equal(wire_dec_stats(d)->garbage_bytes, 0);
	wire_dec_free(d);
	wg_buf_free(&got_text);
	wg_buf_free(&got_aux);
	wg_collect_free(&c);
}

/* Boot text before the stream reaches the unframed callback as it was. */
static void boot_text_then_stream(void **state)
{
	const char boot[] = "bareperf: booting\r\nsmp: 4 CPUs\r\n";
	uint8_t rec[240];
	struct wg_loop l;
	struct wire_enc e;
	struct wire_enc_config cfg = { .sample_type = BP_SAMPLE_IP | BP_SAMPLE_TIME };
	struct wg_collect c = { 0 };
	size_t n = 0;

	(void)state;
	wg_loop_init(&l, 3, 1000, 5);
	for (int i = 0; i < 10; i++)
		n += wg_loop_sample(&l, rec + n, cfg.sample_type, 0);
	enc_out.len = 0;
	wg_buf_put(&enc_out, boot, strlen(boot));
	wire_encoder_init(&e, &cfg);
	wg_encode_records(&e, rec, n, &enc_out);
	assert_int_equal(enc_out.p[strlen(boot)], 0);		/* the stream's first byte */
	struct wire_dec *d = wg_decode(enc_out.p, enc_out.len, &c, 0);
	assert_int_equal(c.unframed.len, strlen(boot));
	assert_memory_equal(c.unframed.p, boot, strlen(boot));
	assert_int_equal(c.blob.len, n);
	assert_memory_equal(c.blob.p, rec, n);
	assert_int_equal(wire_dec_stats(d)->frames_ok, 1);
	wire_dec_free(d);
	wg_collect_free(&c);
}

/* ---- damage ------------------------------------------------------------- */

struct multi {
	struct wg_buf stream;
	struct wg_collect ref;		/* the clean stream, decoded */
};

/* Four CPUs, records (samples and the rest), console text and AUX data. */
static void multi_stream(struct multi *m, uint64_t seed, int rounds)
{
	const uint64_t st = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
			    BP_SAMPLE_CPU | BP_SAMPLE_PERIOD;
	struct wire_enc e[4];
	struct wg_loop l[4];
	struct wg_rng r = { seed };
	uint8_t *rec = malloc(1 << 16), out[WIRE_ENC_OUT_MIN];
	uint64_t aux_pos[4] = { 0 };

	memset(m, 0, sizeof(*m));
	wg_buf_put(&m->stream, "boot\n", 5);
	for (int c = 0; c < 4; c++) {
		struct wire_enc_config cfg = { .cpu = (uint16_t)c, .sample_type = st,
					       .frame_target = 128 + 64 * c };
		wire_encoder_init(&e[c], &cfg);
		wg_loop_init(&l[c], seed + c, 20000, 300);
	}
	for (int i = 0; i < rounds; i++) {
		int c = (int)wg_below(&r, 4);
		size_t n = 0, used, w;
		switch (wg_below(&r, 6)) {
		case 0:
			n = wg_other_records(&r, rec);
			/* fall through */
		case 1: case 2: case 3:
			for (int k = (int)wg_below(&r, 80); k >= 0; k--)
				n += wg_loop_sample(&l[c], rec + n, st, (uint32_t)c);
			wg_encode_records(&e[c], rec, n, &m->stream);
			break;
		case 4:
			n = 1 + wg_below(&r, 300);
			for (size_t k = 0; k < n; k++)
				rec[k] = (uint8_t)('a' + k % 26);
			w = wire_encode_bytes(&e[c], WIRE_CH_CONSOLE, rec, n, &used, out, sizeof(out));
			wg_buf_put(&m->stream, out, w);
			break;
		default:
			n = 1 + wg_below(&r, 900);
			for (size_t k = 0; k < n; k++)
				rec[k] = (uint8_t)(wg_below(&r, 3) ? 0 : wg_next(&r));
			w = wire_encode_aux(&e[c], aux_pos[c], rec, n, &used, out, sizeof(out));
			aux_pos[c] += n;
			wg_buf_put(&m->stream, out, w);
			break;
		}
	}
	wire_dec_free(wg_decode(m->stream.p, m->stream.len, &m->ref, 0));
	free(rec);
}

static void multi_free(struct multi *m)
{
	wg_buf_free(&m->stream);
	wg_collect_free(&m->ref);
}

static const struct wg_frame *ref_find(const struct multi *m, const struct wg_frame *f)
{
	for (size_t i = 0; i < m->ref.n; i++) {
		const struct wg_frame *g = &m->ref.f[i];
		if (g->channel == f->channel && g->cpu == f->cpu && g->seq == f->seq)
			return g;
	}
	return NULL;
}

/*
 * The invariants after any damage: every frame delivered is an original
 * frame, with the same content byte for byte, delivered once; its
 * lost_before is its seq gap; each stream's lost count is exactly the
 * frames missing up to the last one seen. Returns the frames delivered.
 */
static size_t check_damaged(const struct multi *m, const uint8_t *s, size_t len, uint64_t seed)
{
	struct wg_collect c = { 0 };
	struct wire_dec *d = wg_decode(s, len, &c, seed);
	const struct wire_dec_stats *st = wire_dec_stats(d);
	uint64_t lost_total = 0, records = 0;

	for (size_t i = 0; i < c.n; i++) {
		const struct wg_frame *f = &c.f[i], *g = ref_find(m, f);
		assert_non_null(g);			/* nothing fabricated */
		assert_int_equal(f->len, g->len);
		assert_memory_equal(c.blob.p + f->at, m->ref.blob.p + g->at, f->len);
		assert_true(f->aux_pos == g->aux_pos);
		records += f->nrec;
	}
	assert_int_equal(records, st->records);
	for (unsigned ch = 0; ch < WIRE_NR_CHANNELS; ch++) {
		for (unsigned cpu = 0; cpu < 4; cpu++) {
			const struct wire_dec_stream *ds = wire_dec_stream(d, ch, cpu);
			uint64_t got = 0, next = 0;
			for (size_t i = 0; i < c.n; i++) {
				const struct wg_frame *f = &c.f[i];
				if (f->channel != ch || f->cpu != cpu)
					continue;
				assert_true(f->seq >= next);		/* once, in order */
				assert_int_equal(f->lost_before, f->seq - next);
				next = f->seq + 1;
				got++;
			}
			if (!got) {
				/* Seen only as a malformed frame, if at all. */
				assert_true(!ds || ds->frames == 0);
				continue;
			}
			assert_non_null(ds);
			assert_int_equal(ds->frames, got);
			assert_int_equal(ds->lost + ds->bad_payload, next - got);
			lost_total += ds->lost;
		}
	}
	assert_int_equal(st->lost_frames, lost_total);
	assert_int_equal(st->bad_payload, 0);
	wire_dec_free(d);
	size_t n = c.n;
	wg_collect_free(&c);
	return n;
}

enum damage { FLIP, DROP, DUP, INSERT, TRUNCATE, JOIN, DUP_FRAME, MIXED, NR_DAMAGE };

static void damage(struct wg_buf *b, enum damage kind, struct wg_rng *r)
{
	size_t at = wg_below(r, b->len);

	switch (kind) {
	case FLIP:
		b->p[at] ^= (uint8_t)(1u << wg_below(r, 8));
		break;
	case DROP:
		memmove(b->p + at, b->p + at + 1, b->len - at - 1);
		b->len--;
		break;
	case DUP:
	case INSERT: {
		uint8_t x = kind == DUP ? b->p[at] : wg_below(r, 4) ? (uint8_t)wg_next(r) : 0;
		wg_buf_put(b, "", 1);
		memmove(b->p + at + 1, b->p + at, b->len - at - 1);
		b->p[at] = x;
		break;
	}
	case TRUNCATE:
		b->len = at;
		break;
	case JOIN:
		memmove(b->p, b->p + at, b->len - at);
		b->len -= at;
		break;
	case DUP_FRAME: {
		/* The frame after a delimiter, again right after itself (a
		 * stream's first frame too: that is no restart). */
		uint8_t *z = memchr(b->p + at, 0, b->len - at), *e, buf[WIRE_FRAME_MAX];
		struct wire_frame wf;
		if (!z || !(e = memchr(z + 1, 0, (size_t)(b->p + b->len - z - 1))))
			break;
		size_t n = (size_t)(e - z);		/* frame + its delimiter */
		if (wire_frame_unpack(z + 1, n - 1, buf, sizeof(buf), &wf))
			break;
		size_t off = (size_t)(e + 1 - b->p);
		wg_buf_put(b, z + 1, n);		/* may move b->p */
		memmove(b->p + off + n, b->p + off, b->len - n - off);
		memmove(b->p + off, b->p + off - n, n);
		break;
	}
	default:
		break;
	}
}

static void run_damage(enum damage kind, int iterations)
{
	struct multi m;
	struct wg_rng r = { 1000 + (uint64_t)kind };
	struct wg_buf b = { 0 };
	uint64_t delivered = 0, total = 0;

	multi_stream(&m, 42 + (uint64_t)kind, 120);
	assert_int_equal(check_damaged(&m, m.stream.p, m.stream.len, 1), m.ref.n);
	for (int it = 0; it < iterations; it++) {
		b.len = 0;
		wg_buf_put(&b, m.stream.p, m.stream.len);
		int ops = kind == TRUNCATE || kind == JOIN ? 1 : 1 + (int)wg_below(&r, 30);
		for (int k = 0; k < ops && b.len > 1; k++)
			damage(&b, kind == MIXED ? (enum damage)wg_below(&r, DUP_FRAME + 1) : kind, &r);
		delivered += check_damaged(&m, b.p, b.len, (uint64_t)it);
		total += m.ref.n;
	}
	print_message("# %d streams damaged: %llu of %llu frames delivered, all exact\n",
		      iterations, (unsigned long long)delivered, (unsigned long long)total);
	assert_true(delivered > 0);
	wg_buf_free(&b);
	multi_free(&m);
}

static void damage_bit_flips(void **state) { (void)state; run_damage(FLIP, 150); }
static void damage_dropped_bytes(void **state) { (void)state; run_damage(DROP, 150); }
static void damage_duplicated_bytes(void **state) { (void)state; run_damage(DUP, 150); }
static void damage_inserted_bytes(void **state) { (void)state; run_damage(INSERT, 150); }
static void damage_truncation(void **state) { (void)state; run_damage(TRUNCATE, 100); }
static void damage_join_mid_stream(void **state) { (void)state; run_damage(JOIN, 100); }
static void damage_duplicated_frames(void **state) { (void)state; run_damage(DUP_FRAME, 100); }
static void damage_mixed(void **state) { (void)state; run_damage(MIXED, 200); }

/* Every single-bit flip of a short stream, each decoded: never a wrong record. */
static void every_bit_of_a_stream(void **state)
{
	struct multi m;
	struct wg_buf b = { 0 };
	uint64_t crc_caught = 0;

	(void)state;
	multi_stream(&m, 7, 6);
	assert_true(m.stream.len > 200);
	wg_buf_put(&b, m.stream.p, m.stream.len);
	for (size_t bit = 0; bit < b.len * 8; bit++) {
		b.p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		size_t got = check_damaged(&m, b.p, b.len, 0);
		/* Exactly one frame is hit, unless the flip made or unmade a
		 * delimiter (then two) or hit the boot text (none). */
		assert_true(got + 2 >= m.ref.n);
		crc_caught += got < m.ref.n;
		b.p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	print_message("# %zu bit flips over %zu bytes, %llu frames hit, no record damaged\n",
		      b.len * 8, b.len, (unsigned long long)crc_caught);
	wg_buf_free(&b);
	multi_free(&m);
}

/* Joining at every byte of the first frames: resync at the next frame. */
static void join_at_every_offset(void **state)
{
	struct multi m;

	(void)state;
	multi_stream(&m, 9, 20);
	for (size_t at = 0; at < m.stream.len && at < 3000; at++) {
		size_t got = check_damaged(&m, m.stream.p + at, m.stream.len - at, 0), want = 0;
		/* Every frame that starts at or after the cut, and no other. */
		for (size_t i = 0; i < m.ref.n; i++)
			want += m.ref.f[i].offset >= at;
		assert_int_equal(got, want);
	}
	multi_free(&m);
}

/* A stream that restarts (a new run, seq 0 with WIRE_F_START) is not a duplicate. */
static void restart_is_not_duplicate(void **state)
{
	uint8_t rec[24 * 10];
	struct wg_loop l;
	struct wire_enc e;
	struct wire_enc_config cfg = { .sample_type = BP_SAMPLE_IP | BP_SAMPLE_TIME };
	struct wg_collect c = { 0 };
	size_t n = 0;

	(void)state;
	wg_loop_init(&l, 4, 1000, 5);
	enc_out.len = 0;
	for (int run = 0; run < 2; run++) {
		/* A new run: new samples (the same bytes again would be a
		 * duplicate, below). */
		n = 0;
		for (int i = 0; i < 10; i++)
			n += wg_loop_sample(&l, rec + n, cfg.sample_type, 0);
		wire_encoder_init(&e, &cfg);
		wg_encode_records(&e, rec, n, &enc_out);
		wg_encode_records(&e, rec, n, &enc_out);
	}
	struct wire_dec *d = wg_decode(enc_out.p, enc_out.len, &c, 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(wire_dec_stats(d)->restarts, 1);
	assert_int_equal(wire_dec_stats(d)->duplicates, 0);
	assert_int_equal(wire_dec_stats(d)->lost_frames, 0);
	wire_dec_free(d);
	wg_collect_free(&c);
}

/*
 * A stream's first frame twice: (boot, channel, cpu, seq) names one frame,
 * so the copy is a duplicate, dropped and counted, not a new numbering;
 * after an END the same numbers start a new one.
 */
static void first_frame_twice_is_duplicate(void **state)
{
	uint8_t rec[24 * 10];
	struct wg_loop l;
	struct wire_enc e;
	struct wire_enc_config cfg = { .sample_type = BP_SAMPLE_IP | BP_SAMPLE_TIME };
	struct wg_collect c = { 0 };
	struct wg_buf b = { 0 };
	size_t n = 0, first;

	(void)state;
	wg_loop_init(&l, 4, 1000, 5);
	for (int i = 0; i < 10; i++)
		n += wg_loop_sample(&l, rec + n, cfg.sample_type, 0);
	enc_out.len = 0;
	wire_encoder_init(&e, &cfg);
	wg_encode_records(&e, rec, n, &enc_out);
	first = enc_out.len;
	wg_encode_records(&e, rec, n, &enc_out);
	/* Delimiter, frame 0, delimiter; then frame 0 and its delimiter
	 * again; then frame 1. */
	assert_true(enc_out.p[0] == 0 && enc_out.p[first - 1] == 0);
	wg_buf_put(&b, enc_out.p, first);
	wg_buf_put(&b, enc_out.p + 1, first - 1);
	wg_buf_put(&b, enc_out.p + first, enc_out.len - first);

	struct wire_dec *d = wg_decode(b.p, b.len, &c, 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(wire_dec_stats(d)->samples, 20);
	assert_int_equal(wire_dec_stats(d)->duplicates, 1);
	assert_int_equal(wire_dec_stats(d)->restarts, 0);
	assert_int_equal(wire_dec_stats(d)->lost_frames, 0);
	wire_dec_free(d);
	wg_collect_free(&c);
	wg_buf_free(&b);
}

/* ---- size ------------------------------------------------------------------ */

static double bytes_per_sample(uint64_t st, size_t samples, size_t batch)
{
	uint8_t *rec = malloc(batch * 256);
	struct wg_loop l;
	struct wire_enc e;
	struct wire_enc_config cfg = { .cpu = 0, .sample_type = st };
	struct wg_collect c = { 0 };
	struct wg_buf all = { 0 };
	size_t wire = 0;

	wg_loop_init(&l, 5, 100000, 500);
	wire_encoder_init(&e, &cfg);
	enc_out.len = 0;
	for (size_t done = 0; done < samples; done += batch) {
		size_t n = 0;
		if (batch > samples - done)
			batch = samples - done;
		for (size_t i = 0; i < batch; i++)
			n += wg_loop_sample(&l, rec + n, st, 0);
		wg_buf_put(&all, rec, n);
		wg_encode_records(&e, rec, n, &enc_out);
	}
	wire = enc_out.len;
	wire_dec_free(wg_decode(enc_out.p, enc_out.len, &c, 0));
	assert_int_equal(c.blob.len, all.len);
	assert_memory_equal(c.blob.p, all.p, all.len);
	assert_int_equal(e.stats.samples_compact, samples);
	print_message("# sample_type %#llx: %zu samples of %zu bytes -> %.2f bytes each on the wire\n",
		      (unsigned long long)st, samples, all.len / samples, (double)wire / samples);
	wg_collect_free(&c);
	wg_buf_free(&all);
	free(rec);
	return (double)wire / samples;
}

/* The target: <= 6 bytes a sample for IP+TIME samples of a hot loop. */
static void hot_loop_bytes_per_sample(void **state)
{
	(void)state;
	assert_true(bytes_per_sample(BP_SAMPLE_IP | BP_SAMPLE_TIME, 100000, 170) <= 6.0);
	/* What pmu/profile.c records, and with IDENTIFIER. */
	assert_true(bytes_per_sample(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
				     BP_SAMPLE_CPU | BP_SAMPLE_PERIOD, 100000, 100) <= 6.0);
	assert_true(bytes_per_sample(BP_SAMPLE_IDENTIFIER | BP_SAMPLE_IP | BP_SAMPLE_TIME,
				     100000, 170) <= 6.0);
	/* Callchains of three frames cost about three bytes more. */
	assert_true(bytes_per_sample(BP_SAMPLE_IP | BP_SAMPLE_TIME | BP_SAMPLE_CALLCHAIN,
				     50000, 80) <= 10.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc32c_known_answers),
		cmocka_unit_test(crc32c_table_and_chaining),
		cmocka_unit_test(crc_catches_every_single_bit_error),
		cmocka_unit_test(crc_catches_every_3_bit_error),
		cmocka_unit_test(cobs_edges),
		cmocka_unit_test(varint_edges),
		cmocka_unit_test(frame_checks),
		cmocka_unit_test(every_record_type),
		cmocka_unit_test(sparse_records),
		cmocka_unit_test(descs_kept_and_repeats_held),
		cmocka_unit_test(frames_span_calls),
		cmocka_unit_test(every_sample_type),
		cmocka_unit_test(samples_raw_when_unknown),
		cmocka_unit_test(sample_type_learned_or_set),
		cmocka_unit_test(samples_by_identifier),
		cmocka_unit_test(frames_decode_alone),
		cmocka_unit_test(largest_records),
		cmocka_unit_test(small_out_buffers),
		cmocka_unit_test(byte_channels),
		cmocka_unit_test(boot_text_then_stream),
		cmocka_unit_test(damage_bit_flips),
		cmocka_unit_test(damage_dropped_bytes),
		cmocka_unit_test(damage_duplicated_bytes),
		cmocka_unit_test(damage_inserted_bytes),
		cmocka_unit_test(damage_truncation),
		cmocka_unit_test(damage_join_mid_stream),
		cmocka_unit_test(damage_duplicated_frames),
		cmocka_unit_test(damage_mixed),
		cmocka_unit_test(every_bit_of_a_stream),
		cmocka_unit_test(join_at_every_offset),
		cmocka_unit_test(restart_is_not_duplicate),
		cmocka_unit_test(first_frame_twice_is_duplicate),
		cmocka_unit_test(hot_loop_bytes_per_sample),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	wg_buf_free(&enc_out);
	return rc;
}
