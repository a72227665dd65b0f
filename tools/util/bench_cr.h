/*
 * tools/util/bench_cr.h — snippets of `bareperf bench` that would hang QEMU's
 * TCG by a write to CR0 or CR4. A CPU refuses these writes with #GP in
 * 64-bit mode (SDM Vol. 2B, MOV—Move to/from Control Registers), and the
 * kernel reports the fault; QEMU's TCG (measured with QEMU 10.0, its
 * qemu64 CPU) does not:
 *
 *   - a CR4 bit its CPU lacks (LA57, VMXE, bit 15, bit 32, all ones: any
 *     bit above OSXMMEXCPT) sends the vCPU round an SVM #VMEXIT path
 *     outside any guest, holding QEMU's lock: QEMU itself stops, its
 *     timers and the watchdog's NMI with it;
 *   - CR0 with PE and PG both clear (CR0 = 0) leaves long mode for real
 *     mode and runs on through memory as 16-bit code, never answering.
 *
 * (CR0.PG or CR0.PE alone cleared, or CR4.PAE cleared, resets the machine:
 * bench reports that and boots again.) The value is known only when the
 * code builds it from constants: a sweep of the bytes follows what MOV,
 * XOR, OR, AND, NOT, BTS, BTR and BTC with immediates make of a register's
 * bits, up to the MOV to CR0 or CR4 that takes it; other instructions end
 * what is known. A value computed otherwise goes through unchecked.
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_CR_H
#define BAREPERF_TOOLS_UTIL_BENCH_CR_H

#include <stddef.h>
#include <stdint.h>

/* The CR4 bits bench's TCG CPU (qemu64) has: VME through OSXMMEXCPT. */
#define BENCH_CR4_TCG_BITS	0x7ffull

/*
 * 1 when code (len bytes) writes CR0 or CR4 a value that would hang
 * QEMU's TCG, with the reason in why ("writes CR4 with bit 12 (LA57)
 * set ..."); else 0.
 */
int bench_cr_hangs_tcg(const uint8_t *code, size_t len, char *why, size_t n);

#endif
