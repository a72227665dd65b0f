/*
 * itrace.h — the packet stream of bareperf's software instruction tracer
 * (pmu/trace/itrace.c), as it lands in a ring's AUX area and as the host decoder
 * (tools/util/trace/pkt.c, flow.c) reads it. Intel PT data in the AUX area is Intel's
 * format (SDM Vol. 3C ch. 33) and is not described here.
 *
 * Fixed, versioned, append-only like perf_ring.h: never renumber an
 * opcode or move a field; a new meaning needs a new opcode or a new
 * ITRACE_VERSION in the SYNC magic. Multi-byte fixed fields are
 * little-endian; varints are LEB128 as in uapi/wire.h §4 (uvarint;
 * svarint = uvarint of the zigzag code).
 *
 * 1. What is traced
 *
 * The tracer single-steps code (RFLAGS.TF, a #DB trap after every
 * instruction, SDM Vol. 3B 18.3.1.4) and sees, at each trap, the address
 * of the instruction that just ran ("prev") and of the next one ("cur").
 * It does not decode instruction lengths. Instead it sorts the
 * instruction at prev into a class by its opcode bytes alone (prefixes,
 * opcode, ModRM.reg: the table in §3) and writes a packet only where the
 * class says the flow is not implied by the code:
 *
 *   SEQ   not a control transfer: next = prev + length      nothing
 *   JMP   direct near jmp (EB, E9): next = its target          nothing
 *   CALL  direct near call (E8): next = its target             nothing
 *   JCC   jcc, loop*, jrcxz: taken or not                      1 TNT bit
 *   REP   F2/F3 string op: one #DB per iteration; iterates     1 TNT bit
 *         again (next = prev) or is done (next = prev + length)
 *   RET   near ret: to the return address its call pushed     1 TNT bit "1"
 *         (the top of the return stack, §4), or elsewhere      or a TIP
 *   ICALL indirect near call (FF /2): next = its target        TIP
 *   IJMP  every other transfer (indirect jmp, far transfers,   TIP
 *         int/syscall/iret/ud2, xbegin, and near branches
 *         with a 66 prefix, whose size differs by vendor)
 *
 * The host decoder classifies the same bytes with a disassembler
 * (capstone), takes lengths and direct targets from it, and walks the
 * code from packet to packet; it must classify exactly as §3 says.
 *
 * "Steps" count the traced instructions: one per #DB whose prev lies in
 * the traced address range, so one per iteration of a REP string
 * instruction (as QEMU's icount counts them). Instructions outside the
 * range run single-stepped but write nothing and are not counted.
 *
 * 2. Packets
 *
 * The first byte says what follows.
 *
 *   1ttttttt  TNT: 1 to 6 outcomes, oldest first, below a stop bit: the
 *             low 7 bits are 0b1 followed by the outcomes (1 = taken /
 *             iterates / return compressed). 0x80 and 0x81 are invalid.
 *   0x00      PAD: no meaning; skipped.
 *   0x01      TIP   svarint(ip - last_ip): the target of the instruction
 *             that needs one (RET, ICALL, IJMP, or any class whose flow
 *             was not what §1 says: see ASYNC).
 *   0x02      PGE   svarint(ip - last_ip): tracing resumes at ip after the
 *             flow left the address range (the decoder knows when it
 *             left: it sees the next ip fall outside).
 *   0x03      ASYNC uvarint(steps - sync_steps), svarint(ip - last_ip):
 *             after instruction number `steps` the flow went to ip,
 *             against the class of that instruction (an exception
 *             handler resumed elsewhere, a fault fix-up).
 *   0x04      STOP  u8 reason, uvarint(steps - sync_steps),
 *             uvarint(tsc - sync_tsc): no instruction after number
 *             `steps` is in this stream until the next SYNC.
 *               reason 1 END:   tracing ended (the traced call returned)
 *               reason 2 PAUSE: the AUX area was full; the AUX record
 *                               of this data has BP_AUX_FLAG_TRUNCATED
 *                               and the next SYNC says how many
 *                               instructions ran untraced meanwhile
 *   0x5A      SYNC  the fixed layout struct itrace_sync below, then, if
 *             flags has ITRACE_SYNC_RANGE, struct itrace_range.
 *   others    reserved: a decoder stops at them and looks for a SYNC.
 *
 * SYNC, ASYNC and STOP are anchors: each names a step count, and the
 * decoder applies it once exactly that many instructions are behind it.
 * A SYNC says: instruction number steps + 1 is at ip (the decoder checks
 * it got there), the TSC read then, the address range. It resets
 * last_ip to ip and empties the return stack, so decoding can start at
 * any SYNC. TNT bits pending in the encoder are always written before
 * any other packet, so the decoder's next "event" is unambiguous: the
 * next pending TNT bit, else the next packet.
 *
 * A decoder knows where tracing stops without a packet: a SEQ/JMP/CALL
 * walk would run on, so every stop (END, PAUSE, a chunk's end) comes with
 * an anchor. A decoder that runs out of data before an anchor has lost
 * the instructions after the last packet it used: it reports them as a
 * gap, never as executed.
 *
 * 3. The classification table (opcode bytes at prev)
 *
 * Skip bytes in {26 2E 36 3E 64 65 66 67 F0 F2 F3 40..4F}, at most 14,
 * noting 66 and F2/F3. The first other byte b0 (b1, b2: the ones after):
 *   70..7F, E0..E3                 JCC, length = prefixes + 2
 *   0F 80..8F                      JCC, length = prefixes + 6
 *   EB                             JMP, length = prefixes + 2
 *   E9                             JMP, length = prefixes + 5
 *   E8                             CALL, length = prefixes + 5
 *   C3, C2                         RET
 *   FF, ModRM.reg (b1 >> 3 & 7) 2  ICALL;  3, 4, 5: IJMP
 *   C7 F8                          IJMP (xbegin)
 *   CA CB CC CD CE CF F1 9A EA     IJMP
 *   0F 05, 0F 07, 0F 34, 0F 35,
 *   0F 0B, 0F B9, 0F FF            IJMP
 *   A4..A7, AA..AF, 6C..6F         REP if F2/F3 was seen, else SEQ;
 *                                  length = prefixes + 1
 *   anything else                  SEQ
 * then JCC, JMP, CALL, ICALL and RET with a 66 prefix become IJMP: their
 * operand size, hence length and return address, differs by vendor.
 *
 * 4. The return stack
 *
 * CALL and ICALL push their return address; RET pops it. It holds
 * ITRACE_RETSTACK entries; a push onto a full stack drops the oldest.
 * A RET with an entry pops it and writes TNT 1 if it returns there, else
 * a TIP; a RET on an empty stack writes a TIP. Emptied by every SYNC.
 * Only traced (in-range) instructions touch it.
 *
 * 5. In the AUX area
 *
 * The tracer writes chunks: each starts with a SYNC (or is a lone STOP
 * PAUSE, the last word before a gap) and is committed with one AUX
 * record; consecutive chunks continue one packet stream. No packet
 * straddles the end of the AUX area: the producer skips to its start
 * (bp_aux_output_skip), so the skipped bytes belong to no AUX record and
 * a decoder must read only what AUX records cover. A record with
 * BP_AUX_FLAG_TRUNCATED is followed by a gap that ends at the next SYNC.
 */
#ifndef BAREPERF_UAPI_ITRACE_H
#define BAREPERF_UAPI_ITRACE_H

#include <stdint.h>

#define ITRACE_VERSION		1

/* Packet opcodes (first byte). */
#define ITRACE_OP_TNT		0x80	/* 1ttttttt */
#define ITRACE_OP_PAD		0x00
#define ITRACE_OP_TIP		0x01
#define ITRACE_OP_PGE		0x02
#define ITRACE_OP_ASYNC		0x03
#define ITRACE_OP_STOP		0x04
#define ITRACE_OP_SYNC		0x5a

#define ITRACE_TNT_MAX		6	/* outcomes in one TNT byte */

/* STOP reasons */
#define ITRACE_STOP_END		1
#define ITRACE_STOP_PAUSE	2

/* Classes (§1, §3). */
enum itrace_class {
	ITRACE_C_SEQ	= 0,
	ITRACE_C_JMP	= 1,
	ITRACE_C_CALL	= 2,
	ITRACE_C_JCC	= 3,
	ITRACE_C_REP	= 4,
	ITRACE_C_RET	= 5,
	ITRACE_C_ICALL	= 6,
	ITRACE_C_IJMP	= 7,
	ITRACE_NR_CLASSES = 8,
};

#define ITRACE_RETSTACK		64	/* return-stack entries (§4) */
#define ITRACE_INSN_MAX		15	/* longest x86 instruction (SDM Vol. 2A 2.3.11) */

/* SYNC: 0x5A, then the rest of the magic; the last magic byte is the version. */
#define ITRACE_SYNC_MAGIC	"\x5a\xa5" "BPTR" "\xa5\x01"
#define ITRACE_SYNC_MAGIC_LEN	8

/* itrace_sync.flags */
#define ITRACE_SYNC_RANGE	(1u << 0)	/* struct itrace_range follows */
#define ITRACE_SYNC_FLAGS	ITRACE_SYNC_RANGE

struct itrace_sync {			/* 33 bytes, packed */
	uint8_t  magic[8];		/* ITRACE_SYNC_MAGIC */
	uint64_t ip;			/* the next instruction */
	uint64_t tsc;
	uint64_t steps;			/* traced instructions before it */
	uint8_t  flags;			/* ITRACE_SYNC_* */
} __attribute__((packed));
_Static_assert(sizeof(struct itrace_sync) == 33, "itrace_sync ABI");

struct itrace_range {			/* 16 bytes, packed: [lo, hi) */
	uint64_t lo;
	uint64_t hi;
} __attribute__((packed));
_Static_assert(sizeof(struct itrace_range) == 16, "itrace_range ABI");

/* The largest packets, for buffer sizing. */
#define ITRACE_SYNC_MAX		(sizeof(struct itrace_sync) + sizeof(struct itrace_range))
#define ITRACE_TIP_MAX		11	/* opcode + 10-byte varint */
#define ITRACE_ASYNC_MAX	21
#define ITRACE_STOP_MAX		22

#endif
