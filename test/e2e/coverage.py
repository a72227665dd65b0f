#!/usr/bin/env python3
"""The soft PMU's account, end to end: `bareperf record --qemu` of
loopnest at a tick every 50 us, then `bareperf report` and `script`.

Under -icount (deterministic: every HPET NMI is taken in time) every tick
due is a sample, on 1 CPU and on each of 2: the coverage line says N
ticks due, N samples, 0 lost, the losses line says none, and the
kernel's TICKS record agrees. The app's
duration (APP_START to APP_STOP) is the app's own: loopnest measures its
loop nest with the TSC and prints it, and the run's window may exceed that
only by the app's set-up and the start of sampling, not by the drain of
the stream that follows; `stat` then finds a single-CPU loop 1.000 CPUs
utilized.

On a slow line with a small ring (icount again) the samples the ring had
no room for are counted dropped: samples + dropped = ticks due, and the
dropped are exactly the ring's LOST records; the line is not drained
while the app runs, so the app takes as long as unpaced.

Without icount, on 1 and 2 CPUs (where the host is busy, NMIs merge):
for every CPU, samples + lost (+ dropped, + not received) = ticks due,
each lost tick is in a LOST_SAMPLES warning, and "losses: none" appears
only when nothing was lost. Prints TAP.

Usage: coverage.py [BUILD_DIR]   (run from the repository root)
"""
import os
import re
import sys

from e2e_common import BUILD, Tap, out_dir, run

OUT = os.path.join(BUILD, "test", "coverage")

T = Tap()
check = T.check


def record(name, *args, period="50000"):
    cap = os.path.join(OUT, name + ".bpc")
    rc, out, err = run("record", "--qemu", *args, "-o", cap, "-c", period, "--", "loopnest")
    check(rc == 0, f"record {' '.join(args)} -c {period} -- loopnest: exit 0", out + err)
    _, rep, err2 = run("report", "-i", cap, "--stdio")
    _, scr, _ = run("script", "-i", cap)
    _, con, _ = run("script", "-i", cap, "--console")
    return cap, rep + err2, scr, con


def coverage(rep):
    """{cpu: (due, received, lost, throttled, dropped, missing)} from the coverage lines."""
    m = re.search(r"^# coverage: (\d+) ticks due( on each of (\d+) CPUs)? \(one every "
                  r"[\d.]+ us over [\d.]+ [mu]?s, HPET counter\)(.*)$", rep, re.M)
    if not m:
        return None
    due = int(m.group(1))
    lines = [("0", m.group(4)[2:])] if not m.group(2) else \
        re.findall(r"^#   cpu (\d+): (.*)$", rep, re.M)
    res = {}
    for cpu, text in lines:
        t = re.match(r"^(\d+) samples \([\d.]+%\) \+ (\d+) lost( \((\d+) of them throttled\))?"
                     r"( \+ (\d+) dropped \(ring full\))?( \+ (\d+) written, not received)?$",
                     text)
        if not t:
            return None
        res[int(cpu)] = (due, int(t.group(1)), int(t.group(2)), int(t.group(4) or 0),
                         int(t.group(6) or 0), int(t.group(8) or 0))
    return res


def ticks_records(scr):
    """[(cpu, due, samples, dropped, lost)] from script's TICKS lines."""
    return [(int(c), int(d), int(s), int(dr), int(lo)) for c, d, s, dr, lo in
            re.findall(r"\[(\d+)\]\s+: TICKS due=(\d+) samples=(\d+) dropped=(\d+) lost=(\d+)",
                       scr)]


def main():
    out_dir("coverage")

    # 1. Under icount: exact.
    cap, rep, scr, con = record("icount", "--icount")
    cov = coverage(rep)
    m = re.search(r"^# samples: (\d+) over", rep, re.M)
    samples = int(m.group(1)) if m else -1
    check(cov is not None and list(cov) == [0] and cov[0][0] == samples and
          cov[0][1:] == (samples, 0, 0, 0, 0) and samples > 300,
          f"icount: every tick due is a sample ({samples} samples, coverage {cov})", rep)
    check(re.search(r"^# losses: none \(", rep, re.M) is not None and "WARNING" not in rep,
          "icount: the report says losses: none", rep)
    tr = ticks_records(scr)
    check(len(tr) == 1 and tr[0] == (0, samples, samples, 0, 0) and
          "LOST_SAMPLES" not in scr,
          f"icount: the kernel's TICKS agrees, no LOST_SAMPLES ({tr})", scr[-2000:])

    # Two CPUs under icount: each samples every tick, the other CPU's last
    # one included (its IPI may arrive after the app returned).
    cap, rep2, scr2, _ = record("icount2", "--icount", "--smp", "2")
    cov2 = coverage(rep2)
    check(cov2 is not None and sorted(cov2) == [0, 1] and cov2[0][0] > 300 and
          all(cov2[c][1:] == (cov2[c][0], 0, 0, 0, 0) for c in cov2) and
          re.search(r"^# losses: none \(", rep2, re.M) is not None,
          f"icount, 2 CPUs: every tick due is a sample on each ({cov2})", rep2)

    # The window is the app's: loopnest's own loop-nest time, plus its set-up
    # (within 1%), not plus the drain.
    m = re.search(r"results correct, (\d+) TSC ticks", con)
    own = int(m.group(1)) if m else 0
    starts = re.findall(r"\s([\d.]+): APP_START", scr)
    stops = re.findall(r"\s([\d.]+): APP_STOP", scr)
    dur = (float(stops[0]) - float(starts[0])) * 1e9 if starts and stops else 0
    check(own > 0 and own <= dur <= own * 1.01,
          f"icount: APP_START to APP_STOP {dur:.0f} ns for loopnest's own {own} TSC ticks "
          f"(1 GHz: ns)", con + scr[-1000:])

    # A line held to 115200 baud (in virtual time: icount) and a 2-page ring
    # at 50 kHz: the ring overflows, every sample it had no room for is
    # counted dropped, and they are exactly the ring's LOST records.
    cap, rep, scr, con = record("paced", "--icount", "--pace", "115200", "--ring-pages", "2",
                                period="20000")
    cov = coverage(rep)
    m = re.search(r"^# app: loopnest \(run 1\) on cpu 0: ([\d.]+) ms", rep, re.M)
    paced_ms = float(m.group(1)) if m else 0
    check(0 < paced_ms <= dur / 1e6 * 1.25,
          f"icount, paced line: the app lasts {paced_ms} ms, as unpaced ({dur / 1e6:.2f} ms): "
          f"the slow line is not drained while it runs", rep)
    ring = re.search(r"^# WARNING: LOST: (\d+) records dropped on cpu 0:", rep, re.M)
    c = cov[0] if cov and list(cov) == [0] else None
    check(c is not None and c[4] > 0 and c[2] == 0 and c[5] == 0 and c[1] + c[4] == c[0] and
          ring is not None and int(ring.group(1)) == c[4],
          f"icount, paced line, 2-page ring: samples + dropped = ticks due, the dropped are the "
          f"ring's LOST ({c}, LOST {ring.group(1) if ring else None})", rep)

    rc, st, err = run("stat", "--icount", "--", "loopnest")
    m = re.search(r"^\s+([\d,]+) ns\s+duration", st, re.M)
    d = int(m.group(1).replace(",", "")) if m else 0
    m = re.search(r"^\s+([\d,]+) ns\s+task-clock\s+# ([\d.]+) CPUs utilized", st, re.M)
    tc = int(m.group(1).replace(",", "")) if m else 0
    util = m.group(2) if m else ""
    check(rc == 0 and util == "1.000" and d >= tc > 0 and d - tc <= d / 500,
          f"stat --icount: a single-CPU loop is {util} CPUs utilized (duration {d} ns, "
          f"task-clock {tc} ns)", st + err)

    # 2. Without icount, 1 and 2 CPUs: the equation holds whatever the host did.
    # Every 100 us: the soft PMU's shortest period under TCG is its measured
    # handler time x4, 52 us on a quiet host, more on a busy one.
    for name, args in (("tcg1", ()), ("tcg2", ("--smp", "2"))):
        ncpu = 2 if args else 1
        cap, rep, scr, con = record(name, *args, period="100000")
        cov = coverage(rep)
        tr = ticks_records(scr)
        ok = cov is not None and sorted(cov) == list(range(ncpu)) and len(tr) == ncpu
        detail = []
        for cpu in sorted(cov or {}):
            due, got, lost, thr, dropped, missing = cov[cpu]
            detail.append(f"cpu {cpu}: {due} due = {got} + {lost} lost + {dropped} dropped + "
                          f"{missing} not received")
            ok = ok and got + lost + dropped + missing == due
            warn = re.search(rf"^# WARNING: LOST_SAMPLES: (\d+) samples not taken on cpu {cpu} ",
                             rep, re.M)
            ok = ok and (int(warn.group(1)) == lost if lost else warn is None)
            ring = re.search(rf"^# WARNING: LOST: (\d+) records dropped on cpu {cpu}:", rep, re.M)
            ok = ok and (not dropped or (ring is not None and int(ring.group(1)) >= dropped))
        none = re.search(r"^# losses: none", rep, re.M) is not None
        anylost = any(c[2] or c[4] or c[5] for c in (cov or {}).values())
        ok = ok and none == (not anylost and "WARNING" not in rep)
        check(ok, f"{name}: samples + lost = ticks due on every CPU ({'; '.join(detail)}); "
              f"losses: {'none' if none else 'warned'}", rep)

    return T.done()


if __name__ == "__main__":
    sys.exit(main())
