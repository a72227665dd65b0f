#!/usr/bin/env python3
"""make bench's figures of the booted kernel, each with its goal:

  soft_pmi_insn_per_sample     one soft-PMU sample, NMI entry to iret, no call
                               chain, in instructions (QEMU -icount shift=0:
                               the TSC counts them; test_profile -- cost)
  soft_pmi_insn_per_sample_g8  the same with an 8-frame call chain
  kernel_init_ms               kernel entry to app start, PVH, TCG, 1 CPU (the
                               boot's "boot: kernel entry to app start" line;
                               the least of RUNS boots of the same command,
                               QEMU at real-time priority where chrt can
                               give it)
  bench_ms_per_snippet         `bareperf bench --batch` of SNIPPETS snippets
                               with nanoBench's defaults in one boot, boots
                               excluded (bench's own "ms per snippet" figure),
                               under TCG and under --icount

The instruction counts do not depend on the host's load; the times do (the
spread of the boots is printed). A boot's time under TCG is QEMU's work
(translating code that runs once, mostly) plus whatever the host does
meanwhile: at normal priority QEMU is preempted thousands of times a boot
(the reader of its output, woken by each byte of the console, and any other
task), at real-time priority hardly ever. A preempted boot takes longer,
never shorter, so the least of several boots is the kernel's figure.
BENCH_QUICK=1 in the environment: fewer boots, fewer snippets. Exit status
1, with the guest's output, on any failure.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import bpqemu  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
RUNS = 3 if QUICK else 5
SNIPPETS = 20 if QUICK else 100
COST = re.compile(r"^profile: (cost|cost_g): (\d+) instructions NMI entry to iret "
                  r"\(median of (\d+), (\d+)\.\.(\d+), loop step \d+\), (.*)$", re.M)
INIT = re.compile(r"^boot: kernel entry to app start: \d+ TSC ticks \((\d+) us\)$", re.M)
PER_SNIPPET = re.compile(r"; ([0-9.]+) ms per snippet over (\d+) on a booted machine")


# Real-time priority for QEMU's threads (SCHED_FIFO, inherited): the host's
# other work neither preempts the boot nor delays its timers (a real-time
# thread has no timer slack). Only where the scheduler allows it (root, or
# RLIMIT_RTPRIO); the throttle of real-time tasks (by default 95% of each
# second) leaves the host the rest should a boot spin.
CHRT = ["chrt", "--fifo", "10"]


def chrt_works():
    try:
        return subprocess.run(CHRT + ["true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def boot(build, cmdline, icount, prefix=(), timeout=300):
    # Guest RAM backed before the boot, as record --qemu has it: a first
    # write to unbacked RAM waits while the host zeroes a 2 MiB page, a
    # cost of the host's (the kernel's boot line says whether it stalls).
    cmd = list(prefix) + bpqemu.qemu_command(build, cmdline=cmdline, icount=icount,
                                             extra=["-mem-prealloc"])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"bench_guest: {cmdline}: timed out after {timeout} s")
    if bpqemu.kernel_status(p.returncode) != 0:
        sys.exit(f"bench_guest: {cmdline}: failed\n{p.stdout[-3000:]}{p.stderr[-1000:]}")
    return p.stdout


def soft_pmi(build):
    out = boot(build, "events=none app=test_profile -- cost", True)
    got = {m.group(1): m for m in COST.finditer(out)}
    if set(got) != {"cost", "cost_g"}:
        sys.exit(f"bench_guest: test_profile -- cost printed no figures\n{out[-3000:]}")
    for key, name, goal in (("cost", "soft_pmi_insn_per_sample", 400),
                            ("cost_g", "soft_pmi_insn_per_sample_g8", 700)):
        m = got[key]
        print(f"# {name}: goal <= {goal}; median of {m.group(3)} samples under -icount, "
              f"{m.group(4)}..{m.group(5)}, {m.group(6)}")
        print(f"BENCH {name} {m.group(2)} insn")


def kernel_init(build):
    rt = chrt_works()
    prefix, how = (CHRT, "QEMU at real-time priority (" + " ".join(CHRT) + ")") if rt else \
        ((), "QEMU at normal priority (chrt --fifo refused: not root, no RLIMIT_RTPRIO)")
    ms = []
    for _ in range(RUNS):
        # A boot takes well under a second; real-time priority is not kept long.
        m = INIT.search(boot(build, "events=none app=test_boot", False, prefix, timeout=60))
        if not m:
            sys.exit("bench_guest: no 'boot: kernel entry to app start' line")
        ms.append(int(m.group(1)) / 1000)
    print(f"# kernel_init_ms: goal <= 30; PVH, TCG, 1 CPU, -m 256, app=test_boot; least of "
          f"{len(ms)} boots, {how}; all {min(ms):.1f}..{max(ms):.1f} ms, median "
          f"{statistics.median(ms):.1f} (the host's load lengthens a boot, never shortens it)")
    print(f"BENCH kernel_init_ms {min(ms):.1f} ms")


def per_snippet(build, icount):
    with tempfile.NamedTemporaryFile("w", suffix=".s") as f:
        for i in range(SNIPPETS):
            f.write(f"add rax, {i}; imul rbx, rcx\n")
        f.flush()
        cmd = [os.path.join(build, "bareperf"), "bench", "-k", os.path.join(build, "kernel.elf"),
               "--batch", f.name] + (["--icount"] if icount else [])
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           stdin=subprocess.DEVNULL, timeout=600)
    m = PER_SNIPPET.search(p.stderr)
    if p.returncode != 0 or not m:
        sys.exit(f"bench_guest: bareperf bench --batch failed\n{p.stderr[-3000:]}")
    return float(m.group(1)), int(m.group(2))


def bench_turnaround(build):
    tcg, n = per_snippet(build, False)
    icount, _ = per_snippet(build, True)
    print(f"# bench_ms_per_snippet: goal <= 3; {n} snippets in one boot, nanoBench's "
          f"defaults, boots excluded: {tcg:.1f} ms under TCG, {icount:.1f} ms under --icount")
    print(f"BENCH bench_ms_per_snippet {tcg:.1f} ms")
    print(f"BENCH bench_ms_per_snippet_icount {icount:.1f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    soft_pmi(a.build)
    kernel_init(a.build)
    bench_turnaround(a.build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
