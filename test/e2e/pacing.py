#!/usr/bin/env python3
"""The stream over a serial line at its real speed: record loopnest with
the UART held to 115200 baud (pace=) and a sample rate above what the line
carries, into a small ring. The kernel must drop records, and the host must
report exactly as many LOST as the kernel says it dropped, and exactly the
samples it says it wrote. Prints TAP.

The soft PMU's ticks follow the host's clock: on a busy host the vCPU
misses most of them (10 kHz asked, under 600 samples/s seen with both cores
loaded), and then the line carries everything. A run without drops tests
nothing, so it is repeated at a higher rate and a slower line (ATTEMPTS),
within a wall-clock budget; the exactness checks hold for every run.

With --bench: the line's lossless capacity for a hot loop's IP+TIME
samples, from a run's measured wire bytes per sample (everything after the
stream's first delimiter: frames, metadata, console frames; not the boot
text): BENCH uart_samples_per_s_at_115200. The run is unpaced, under
-icount (deterministic): pacing changes when bytes leave, not how many.
Like every record --qemu, it says on the line that it will ask for the
run's descriptors again (include/uapi/wire.h §3): none come unasked on a
clean line, and frames are of 1 KiB.
"""
import os
import re
import subprocess
import sys
import time

BUILD = "build"
BP = os.path.join(BUILD, "bareperf")
OUT = os.path.join(BUILD, "test", "pacing")
BAUD = 115200
# (baud, cpu-clock period in ns): tried in order until the kernel drops.
ATTEMPTS = [(115200, 100000), (38400, 50000), (9600, 50000)]
BUDGET_S = 150


def record(name, *args, pace=BAUD):
    os.makedirs(OUT, exist_ok=True)
    cap = os.path.join(OUT, name + ".bpc")
    pacing = ["--pace", str(pace)] if pace else ["--icount"]
    p = subprocess.run([BP, "record", "--qemu", *pacing, "-o", cap, *args],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    console = subprocess.run([BP, "script", "-i", cap, "--console"], capture_output=True,
                             text=True).stdout
    return p, cap, console


def main():
    if "--bench" in sys.argv:
        p, cap, console = record("bench", "-e", "cpu-clock", "-c", "20000", "--ring-pages",
                                 "1024", "--", "loopnest", pace=0)
        m = re.search(r"(\d+) samples on 1 CPU, ", console)
        with open(cap, "rb") as f:
            data = f.read()[512:]			# after the capture header
        size = len(data) - data.find(b"\0") if b"\0" in data else 0
        if p.returncode or not m or not size:
            print("# pacing bench failed:", p.stderr[-500:], file=sys.stderr)
            return 1
        per = size / int(m.group(1))
        print(f"# {int(m.group(1))} samples of a hot loop in {size} stream bytes (frames,"
              f" metadata, console): {per:.2f} bytes per sample; 10 bits a byte at {BAUD} baud;"
              " goal >= 3000 samples/s")
        print(f"BENCH uart_samples_per_s_at_115200 {BAUD / 10 / per:.0f} samples/s")
        return 0

    n = failed = 0

    def check(ok, what):
        nonlocal n, failed
        n += 1
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} {n} - {what}", flush=True)

    t0 = time.monotonic()
    for baud, period in ATTEMPTS:
        p, cap, console = record("lossy", "-e", "cpu-clock", "-c", str(period), "--ring-pages",
                                 "2", "--", "loopnest", pace=baud)
        # the kernel's records dropped, ring full: samples dropped + other records
        k = re.search(r"^profile: .*, (\d+) samples on 1 CPU, \d+ lost \((?:\d+ ticks without "
                      r"a sample, )?(\d+) dropped: ring full\)(?:, (\d+) other records dropped)?",
                      console, re.M)
        k = (k.group(1), str(int(k.group(2)) + int(k.group(3) or 0))) if k else None
        h = re.search(r"cpu 0: (\d+) samples, LOST (\d+) \(ring full\)", p.stderr)
        took = time.monotonic() - t0
        print(f"# {baud} baud, period {period} ns: status {p.returncode}, "
              f"{k[0] + ' samples, ' + k[1] + ' dropped' if k else 'no counts'}"
              f" ({took:.1f} s so far)", flush=True)
        if p.returncode or not k or not h or int(k[1]) or took > BUDGET_S:
            break
    check(p.returncode == 0, f"paced record of loopnest exits 0 ({p.returncode})")
    check(k is not None and h is not None, "the kernel and the recorder both report counts")
    if k and h:
        check(int(k[1]) > 0, f"the line could not carry them all: {k[1]} dropped"
              f"{'' if int(k[1]) else f' after {len(ATTEMPTS)} rates or {BUDGET_S} s'}")
        check(h.group(2) == k[1],
              f"LOST in the capture ({h.group(2)}) = what the kernel dropped ({k[1]})")
        check(h.group(1) == k[0],
              f"samples in the capture ({h.group(1)}) = samples the kernel wrote ({k[0]})")
    rep = subprocess.run([BP, "report", "-i", cap, "--stdio"], capture_output=True, text=True)
    check(re.search(r"^# WARNING: LOST: \d+ records dropped on cpu 0", rep.stdout, re.M)
          is not None, "bareperf report says so")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
