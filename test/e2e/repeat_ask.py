#!/usr/bin/env python3
"""Repeats on request (include/uapi/wire.h §3), over QEMU's serial line at
19200 baud (pace=): a host that says it will ask (WIRE_CTL_WILL_ASK)

 1. and finds nothing wrong gets no repeated descriptors at all, not even
    after the samples at the run's end, and reads every sample;
 2. and cuts the run's first RECORDS frame (its descriptors) from what it
    keeps, as if the line had damaged it, then asks (WIRE_CTL_REPEAT):
    the kernel sends the descriptors again, at once, before samples it
    has yet to send, and the capture so kept reads the samples after the
    cut, the others said missing (without the repeat it reads none).

The capture files are written here, with the header of uapi/wire.h §6,
and read with build/bareperf report. Prints TAP.

Usage: python3 test/e2e/repeat_ask.py [BUILD_DIR]   (from the repository root)
"""
import os
import re
import struct
import subprocess
import sys
import time

from e2e_common import BP, BUILD, Tap, boot, cobs_decode, cobs_encode, crc32c, out_dir

CH_RECORDS, CH_CONTROL, CPU_HOST = 1, 3, 0xFFFF
F_REPEAT = 2
WILL_ASK, REPEAT = 6, 7
# A line slow enough for a drain of hundreds of ms: the request arrives
# while it lasts.
# Call chains make samples long: frames enough after the first.
CMDLINE = "stream=uart app=loopnest events=cpu-clock period=100000 callchain=1 pace=19200"

T = Tap()
OUT = out_dir("repeat_ask", fresh=True, need=(os.path.join(BUILD, "kernel.elf"),))
K = os.path.join(BUILD, "kernel.elf")
seq = 0


def word(kind):
    """A CONTROL frame from the host: a wire_ctl_msg without a value."""
    global seq
    hdr = struct.pack("<BBHII", 2 << 4 | CH_CONTROL, 1 if seq == 0 else 0, CPU_HOST, seq, 0)
    seq += 1
    body = hdr + struct.pack("<HH", kind, 0)
    return b"\0" + cobs_encode(body + struct.pack("<I", crc32c(body))) + b"\0"


def header(data_size):
    """A capture file's header (uapi/wire.h §6): complete, QEMU's serial line."""
    h = bytearray(512)
    h[0:8] = b"\x89BPC\r\n\x1a\n"
    struct.pack_into("<IIIIQQQII", h, 8, 1, 1, 512, 1, data_size, 0, 0, 2, 2)
    h[96:96 + 12] = b"qemu:serial\0"
    h[160:160 + len(CMDLINE)] = CMDLINE.encode()
    h[416:416 + 13] = b"repeat_ask.py"
    return bytes(h)


def parse(chunk):
    """(channel, flags, seq, first payload byte) of a frame that passes its
    CRC, else None. A RECORDS frame whose first item is not raw (0x01,
    or 0x00 sparse)
    starts with a compact SAMPLE."""
    f = cobs_decode(chunk) if chunk else None
    if not f or len(f) < 17 or crc32c(f[:-4]) != struct.unpack("<I", f[-4:])[0]:
        return None
    return f[0] & 15, f[1], struct.unpack_from("<I", f, 4)[0], f[12]


def record(name, cut):
    """Boot, say WILL_ASK, keep the line's bytes until QEMU exits; with cut,
    leave out the first RECORDS frame and ask for a repeat once it passed.
    Returns (capture path, frames kept, console text, asked)."""
    p = boot(CMDLINE, BUILD)
    os.set_blocking(p.stdout.fileno(), False)
    p.stdin.write(word(WILL_ASK))
    p.stdin.flush()
    kept, rest, asked, t0 = bytearray(), b"", False, time.monotonic()
    frames = []
    while time.monotonic() - t0 < 240:
        chunk = p.stdout.read() or b""
        rest += chunk
        while b"\0" in rest:
            raw, rest = rest.split(b"\0", 1)
            f = parse(raw)
            if cut and f and f[0] == CH_RECORDS and f[2] == 0 and not f[1] & F_REPEAT:
                p.stdin.write(word(REPEAT))
                p.stdin.flush()
                asked = True
                continue			# "damaged": not kept
            kept += raw + b"\0"
            if f:
                frames.append(f)
        if not chunk:
            if p.poll() is not None:
                break
            time.sleep(0.01)
    if p.poll() is None:
        p.kill()
    p.wait()
    kept += rest
    path = os.path.join(OUT, name + ".bpc")
    with open(path, "wb") as f:
        f.write(header(len(kept)) + bytes(kept))
    console = subprocess.run([BP, "script", "-i", path, "-k", K, "--console"],
                             capture_output=True, text=True).stdout
    return path, frames, console, asked


def report(path):
    p = subprocess.run([BP, "report", "-i", path, "-k", K, "--stdio"], capture_output=True,
                       text=True, timeout=60)
    m = re.search(r"^# samples: (\d+)", p.stdout, re.M)
    return (int(m.group(1)) if m else -1), p.stdout + p.stderr


def kernel_samples(console):
    m = re.search(r"(\d+) samples on 1 CPU", console)
    return int(m.group(1)) if m else -1


# 1. Nothing wrong: no repeats.
path, frames, console, _ = record("clean", cut=False)
n, rep = report(path)
repeats = sum(1 for c, fl, _, _ in frames if c == CH_RECORDS and fl & F_REPEAT)
T.check(n > 0 and n == kernel_samples(console) and repeats == 0,
        f"a host that will ask and sees no damage: {n} of {kernel_samples(console)} samples, "
        f"{repeats} repeated descriptors (none asked for)", rep + console[-2000:])

# 2. The descriptors cut, then asked for. The kernel answers at its next
# drain, after the frames that drain sends: on a host that kept the vCPU
# from running, one drain can carry every sample of the run, and the
# repeat then comes after the last of them (the kernel's linger). That
# run shows nothing about the order, so it is run once more; a kernel
# that holds a request back fails both.
tries = []
for attempt in (1, 2):
    path, frames, console, asked = record("cut", cut=True)
    n, rep = report(path)
    rep_at = [i for i, (c, fl, _, _) in enumerate(frames) if c == CH_RECORDS and fl & F_REPEAT]
    after = sum(1 for c, fl, _, item in frames[rep_at[0] if rep_at else len(frames):]
                if c == CH_RECORDS and not fl & F_REPEAT and item not in (0, 1))
    tries.append(f"{after} frames of samples after the repeat")
    if not (asked and rep_at and after == 0):
        break
total = kernel_samples(console)
T.check(asked and 5 <= len(rep_at) < 10 and after > 0,
        f"the first RECORDS frame cut, a REPEAT asked: {len(rep_at)} repeated descriptors came "
        f"(one sending of RUN_META, CPU_INFO, PMU_CAPS, EVENT_DESC, APP_START), {after} "
        f"frames of samples after them (run {len(tries)} of at most 2: "
        f"{'; '.join(tries)})", rep)
missing = sum(int(m) for m in re.findall(r"samples missing: (\d+) of", rep))
T.check(total > 0 and n > 0 and n + missing == total,
        f"... and the capture without them reads {n} of the run's {total} samples, "
        f"the {missing} of the cut frame said missing", rep + console[-2000:])
sys.exit(T.done())
