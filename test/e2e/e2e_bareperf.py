#!/usr/bin/env python3
"""End-to-end test of the host tool: `bareperf record --qemu` boots the
kernel, samples test_hotspot with the soft PMU and writes a capture; then
report, report -g, report --sort line, script (text, CSV, JSON), stat (and its
bench tables and --plot SVG on a bench_memlat capture),
list and list-apps read it, and the bad inputs each give one clear error
line and a non-zero status. Prints TAP.

test_hotspot (test/guest/test_hotspot.c) runs 3/4 of its instructions in
hot_leaf (via hot_mid) and 1/4 in warm_leaf. Under QEMU -icount shift=0
the TSC counts retired instructions and the soft PMU samples every 250000
of them, so the run is deterministic: the same sample counts on every
boot (361 and 120 of 481 when this was written). The shares are asserted
within 2 points of 75/25 (what the loops' instruction counts give, a
sample or two of slack for the app's prologue and the slices' edges);
a second boot with call chains must agree within 2 samples (walking the
chain in the NMI adds instructions, which moves the sampling grid).

Usage: e2e_bareperf.py [BUILD_DIR]   (run from the repository root)
"""
import csv
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from e2e_common import BP, BUILD, Tap, capture_parts, cobs_decode, out_dir, run

OUT = os.path.join(BUILD, "test", "e2e")
# A private copy: a rebuild of build/kernel.elf during the test must not
# make the captures and their kernel disagree.
KERNEL = os.path.join(OUT, "kernel.elf")
CAP = os.path.join(OUT, "e2e.bpc")

T = Tap()
check = T.check


def rows(report_text):
    """[(percent, samples, name)] of the first event's table."""
    out = []
    for line in report_text.splitlines():
        m = re.match(r"^\s+(\d+\.\d+)%\s+(\d+)\s+(\S.*)$", line)
        if m:
            out.append((float(m.group(1)), int(m.group(2)), m.group(3)))
    return out


def one_error_line(rc, err, want):
    lines = [l for l in err.splitlines() if l.strip()]
    return rc != 0 and len(lines) == 1 and re.search(want, lines[0]) is not None


def frame_of(chunk):
    """(channel, cpu, seq) of a frame's bytes (uapi/wire.h §2), or None."""
    f = cobs_decode(chunk) if chunk else None
    if not f or len(f) < 16 or f[0] >> 4 != 2:
        return None
    return f[0] & 0xF, struct.unpack_from("<H", f, 2)[0], struct.unpack_from("<I", f, 4)[0]


def write_capture(path, hdr, parts):
    stream = b"\0".join(parts)
    hdr = bytearray(hdr)
    struct.pack_into("<Q", hdr, 24, len(stream))	# data_size
    with open(path, "wb") as f:
        f.write(bytes(hdr) + stream)


def main():

    # 1. Record under icount, and report.
    rc, _, err = run("record", "--qemu", "--icount", "--kernel", KERNEL, "-o", CAP,
                     "--", "test_hotspot")
    check(rc == 0 and os.path.exists(CAP), "record --qemu --icount test_hotspot: exit 0", err)
    check(re.search(r"kernel exit code 0 \(ok\)", err) is not None and
          re.search(r"cpu 0: \d+ samples, LOST 0", err) is not None and
          "0 frames lost in transit, 0 CRC errors" in err,
          "record summary: samples, LOST and link losses per CPU, kernel exit code", err)

    rc, rep, err = run("report", "-i", CAP, "--kernel", KERNEL, "--stdio")
    r = rows(rep)
    check(rc == 0 and len(r) >= 2, "report --stdio prints a table", rep + err)
    hot = r[0] if r else (0, 0, "")
    warm = r[1] if len(r) > 1 else (0, 0, "")
    check(hot[2] == "hot_leaf" and abs(hot[0] - 75.0) <= 2.0,
          f"report: hot_leaf on top with 75% +- 2 (got {hot[2]} {hot[0]}%)", rep)
    check(warm[2] == "warm_leaf" and abs(warm[0] - 25.0) <= 2.0,
          f"report: warm_leaf second with 25% +- 2 (got {warm[2]} {warm[0]}%)", rep)
    check(all(re.search(p, rep, re.M) for p in [
        r"^# pmu: soft PMU", r"^# tsc: .*QEMU -icount", r"^# event: cpu-clock, .*sampled every 250000 ns",
        r"^# app: test_hotspot \(run \d+\) on cpu 0: [\d.]+ ms, exit status 0",
        r"^# losses: none", r"^# kernel: .*build-id [0-9a-f]{40} \(matches\)"]),
        "report header: PMU, TSC, events and periods, app run, losses, build-id", rep)
    check("\033[" not in rep, "report --stdio has no colour codes", rep)
    total = sum(x[1] for x in r)

    rc, lines, err = run("report", "-i", CAP, "--kernel", KERNEL, "--stdio", "--sort", "line")
    m = re.search(r"^\s+[\d.]+%\s+\d+\s+(\S+):(\d+)\s+\((\S+)\)$", lines, re.M)
    check(rc == 0 and m is not None and m.group(1).endswith("test/guest/test_hotspot.c") and
          m.group(3) == "hot_leaf", "report --sort line: the top line is in hot_leaf's loop "
          "in test_hotspot.c", lines + err)

    rc, filt, err = run("report", "-i", CAP, "--kernel", KERNEL, "--stdio", "--cpu", "1")
    check(one_error_line(rc, err, r"--cpu 1: not in this capture \(its CPUs: 0\)"),
          "report --cpu 1 on a 1-CPU run: says CPU 1 is not in the capture", filt + err)
    rc, filt, err = run("report", "-i", CAP, "--kernel", KERNEL, "--stdio", "--app", "nope")
    check(one_error_line(rc, err, r"no run of an app named 'nope'"), "report --app unknown: one "
          "error line", err)

    # 2. Call chains: a second, separate run; icount makes it the same run.
    cap_g = os.path.join(OUT, "e2e-g.bpc")
    rc, _, err = run("record", "--icount", "-g", "--kernel", KERNEL, "-o", cap_g, "--",
                     "test_hotspot")
    check(rc == 0, "record -g: exit 0", err)
    rc, repg, err = run("report", "-i", cap_g, "--kernel", KERNEL, "--stdio", "-g")
    m = re.search(r"^\s+[\d.]+%\s+([\d.]+)%\s+(\d+)\s+hot_leaf\n((?:\s+[|`-].*\n|\s+\w.*\n)+)",
                  repg, re.M)
    callers = m.group(3).split() if m else []
    check(rc == 0 and m is not None and "hot_mid" in callers and "test_hotspot_main" in callers
          and callers.index("hot_mid") < callers.index("test_hotspot_main"),
          "report -g: hot_leaf <- hot_mid <- test_hotspot_main", repg + err)
    check(re.search(r"^\s+100\.00%\s+0\.00%\s+0\s+test_hotspot_main$", repg, re.M) is not None,
          "report -g: test_hotspot_main has 100% inclusive, 0% self", repg)
    self_g = {}
    for x in re.finditer(r"^\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+(\S+)$", repg, re.M):
        self_g[x.group(2)] = int(x.group(1))
    # Walking the chain in the NMI costs instructions, which shifts the
    # icount sampling grid by a sample at most: the same profile within 2.
    check(abs(self_g.get("hot_leaf", 0) - hot[1]) <= 2 and
          abs(self_g.get("warm_leaf", 0) - warm[1]) <= 2,
          f"icount: a second boot (with call chains) gives the same samples within 2 "
          f"({hot[1]}/{warm[1]} vs {self_g.get('hot_leaf')}/{self_g.get('warm_leaf')})", repg)

    # 3. script, stat, list, list-apps
    rc, js, err = run("script", "-i", CAP, "--kernel", KERNEL, "--json")
    try:
        objs = [json.loads(l) for l in js.splitlines()]
        ok = rc == 0
    except ValueError as e:
        objs, ok = [], False
        err += str(e)
    samples = [o for o in objs if o.get("type") == "SAMPLE"]
    check(ok and len(samples) == total and objs[0]["type"] == "RUN_META" and
          sum(1 for o in samples if o.get("sym", "").startswith("hot_leaf+")) == hot[1],
          f"script --json: one object per record, {total} samples, symbolized", err)
    rc, cs, err = run("script", "-i", CAP, "--kernel", KERNEL, "--csv")
    table = list(csv.reader(io.StringIO(cs)))
    check(rc == 0 and table[0][:3] == ["type", "cpu", "time_ns"] and
          all(len(row) == len(table[0]) for row in table) and
          sum(1 for row in table if row[0] == "SAMPLE") == total,
          "script --csv: a header row, every row the same columns", err)
    rc, txt, err = run("script", "-i", CAP, "--kernel", KERNEL)
    check(rc == 0 and len([l for l in txt.splitlines() if "cpu-clock:" in l]) == total and
          re.search(r"test_hotspot\s+\d+ \[000\]\s+\d+\.\d{9}:\s+250000 cpu-clock: +"
                    r"[0-9a-f]+ hot_leaf\+0x", txt) is not None,
          "script: one line per sample, perf script's shape", txt[:2000] + err)

    # The capture as it may arrive: a frame out of order, a foreign frame
    # spliced in, the end cut off at a frame boundary. report (streaming)
    # and script (kept) give one answer and say what is missing.
    hdr, parts = capture_parts(CAP)
    recs = [i for i, p in enumerate(parts) if frame_of(p) and frame_of(p)[:2] == (1, 0)]
    moved = parts[:recs[1]] + [parts[recs[-1]]] + \
        [p for i, p in enumerate(parts) if recs[1] <= i and i != recs[-1]]
    cap_o = os.path.join(OUT, "e2e-order.bpc")
    write_capture(cap_o, hdr, moved)
    rc, rep_o, err = run("report", "-i", cap_o, "--kernel", KERNEL, "--stdio")
    rc2, txt_o, err2 = run("script", "-i", cap_o, "--kernel", KERNEL)
    check(len(recs) >= 3 and rc == 0 and rc2 == 0 and f"# samples: {total} over" in rep_o and
          "WARNING" not in rep_o + txt_o and
          len([l for l in txt_o.splitlines() if "cpu-clock:" in l]) == total,
          f"a records frame moved ahead of {len(recs) - 2} others: report and script both "
          f"count {total} samples, nothing lost or duplicated", rep_o + err + err2)
    _, parts_g = capture_parts(cap_g)
    foreign = [p for p in parts_g if frame_of(p) and frame_of(p)[:2] == (1, 0)][1]
    cap_f = os.path.join(OUT, "e2e-foreign.bpc")
    write_capture(cap_f, hdr, parts[:recs[1]] + [foreign] + parts[recs[1]:])
    rc, rep_f, err = run("report", "-i", cap_f, "--kernel", KERNEL, "--stdio")
    check(rc == 0 and f"# samples: {total} over" in rep_f and
          "# WARNING: frames of another boot refused: 1 " in rep_f and
          len(re.findall(r"^# app: ", rep_f, re.M)) == 1,
          "a frame of another boot spliced in: refused and counted, no foreign samples",
          rep_f + err)
    cap_c = os.path.join(OUT, "e2e-cut.bpc")
    write_capture(cap_c, hdr, parts[:recs[-1]] + [b""])
    rc, rep_c, err = run("report", "-i", cap_c, "--kernel", KERNEL, "--stdio")
    check(rc == 0 and "# WARNING: the capture has no end: the kernel's END never arrived"
          in rep_c and "losses: none" not in rep_c and "unknown" in rep_c,
          "a capture cut at a frame boundary: a WARNING says its end is missing", rep_c + err)

    rc, st, err = run("stat", "-i", CAP)
    check(rc == 0 and re.search(rf"^\s+{total}\s+cpu-clock samples$", st, re.M) is not None and
          "(est.)" in st and "estimated from" in st,
          "stat -i: samples per event, counts marked estimated from samples", st + err)
    _, hdr_only, _ = run("report", "-i", CAP, "--kernel", KERNEL, "--header-only")
    due = re.search(r"^# coverage: (\d+) ticks due", hdr_only, re.M)
    per = re.search(r"^# event: cpu-clock, .*sampled every (\d+) ns", hdr_only, re.M)
    est = re.search(r"^\s+([\d,]+) ns\s+cpu-clock \(est\.\)(.*)$", st, re.M)
    check(due is not None and per is not None and est is not None and
          int(est.group(1).replace(",", "")) == int(due.group(1)) * int(per.group(1)) and
          "CPUs utilized" not in est.group(2),
          "stat -i: the soft PMU's cpu-clock is its ticks due (sampled or lost) x period, "
          "with no CPUs utilized (its timer ticks whether the CPU works or idles)",
          st + hdr_only)

    rc, st, err = run("stat", "--icount", "--kernel", KERNEL, "--", "test_hotspot")
    m = re.search(r"^\s+([\d,]+) tck tsc$", st, re.M)
    tsc = int(m.group(1).replace(",", "")) if m else 0
    check(rc == 0 and re.search(r"^\s+[\d,]+ ns\s+task-clock", st, re.M) is not None and
          100e6 <= tsc <= 140e6 and "(est.)" not in st,
          f"stat -- APP: counted (count=): task-clock, and tsc = instructions under icount "
          f"({tsc})", st + err)

    # BENCH records: bench_memlat's quick sweep (4 KiB..4 MiB, both page
    # sizes) under icount, where a dependent load is one instruction: 1.000.
    cap_b = os.path.join(OUT, "e2e-bench.bpc")
    svg = os.path.join(OUT, "e2e-latency.svg")
    if os.path.exists(svg):
        os.unlink(svg)
    rc, _, err = run("record", "--qemu", "--icount", "--kernel", KERNEL, "-o", cap_b, "--",
                     "bench_memlat", "quick=1", timeout=300)
    check(rc == 0, "record --icount bench_memlat quick=1: exit 0", err)
    rc, st, err = run("stat", "-i", cap_b, "--plot", svg)
    brows = re.findall(r"^\s+chase (2m|4k)-pages\s+(\d+ [KMG]iB)\s+tsc\s+([\d.]+)\s+([\d.]+)\s+"
                       r"(\d+)\s+(.*)$", st, re.M)
    check(rc == 0 and re.search(r"^ memlat: TSC ticks per load", st, re.M) is not None and
          re.search(r"^\s+name\s+param\s+event\s+median:2n-n\s+iqr\s+reps\s+notes$",
                    st, re.M) is not None and
          len(brows) == 22 and brows[0][:2] == ("2m", "4 KiB") and
          brows[10][:2] == ("2m", "4 MiB") and brows[11][:2] == ("4k", "4 KiB") and
          all(r[2] == "1.000" and r[3] == "0.000" and "exact" in r[5] and "icount" in r[5]
              for r in brows) and "missing" not in st and
          "Performance counter stats for 'bench_memlat'" in st,
          f"stat -i: a memlat table, 2 x 11 rows in record order, median 1.000 load per "
          f"tick under icount, exact (iqr 0), none missing ({len(brows)} rows)", st + err)
    rc, stb, err = run("stat", "-i", CAP, "--bench")
    check(rc == 0 and stb.strip() == "", "stat --bench: nothing for a capture without BENCH "
          "records", stb + err)
    # A run the kernel refused (exit 2) and one that never booted (no data).
    cap_f = os.path.join(OUT, "e2e-failed.bpc")
    rc, _, err = run("record", "--qemu", "--kernel", KERNEL, "-F", "100000", "-o", cap_f, "--",
                     "loopnest")
    rc2, rep_f, err2 = run("report", "-i", cap_f, "--kernel", KERNEL)
    check(rc == 2 and rc2 == 0 and re.search(
              r"^# WARNING: the run failed: the kernel exited with code 2 \(bad usage\): "
              r"bareperf: freq=100000 ", rep_f, re.M) is not None and
          "no EVENT_DESC" not in rep_f,
          "report on a run the kernel refused: says it failed, its exit code and the reason",
          err + rep_f + err2)
    cap_z = os.path.join(OUT, "e2e-nodata.bpc")
    rc, _, err = run("record", "--qemu", "--kernel", "/bin/ls", "-o", cap_z, "--", "loopnest")
    rc2, rep_z, err2 = run("report", "-i", cap_z, "--kernel", "/bin/ls", "--force")
    check(rc != 0 and "(file closed properly, no data)" in err and
          "(file closed properly, no data)" in rep_z and "complete" not in rep_z,
          "a capture with no data: 'file closed properly, no data', not 'complete'",
          err + rep_z + err2)
    cap_t = os.path.join(OUT, "e2e-timeout.bpc")
    rc, _, err = run("record", "--qemu", "--kernel", KERNEL, "--timeout", "0.05", "-o", cap_t,
                     "--", "loopnest")
    rc2, rep_t, err2 = run("report", "-i", cap_t, "--kernel", KERNEL)
    check(rc == 124 and "timed out after 0.05 s" in err and
          "(stopped by the time limit (record --timeout): " in rep_t and "user" not in rep_t,
          "record --timeout: status 124, and report says the time limit stopped it",
          err + rep_t + err2)
    rc, stb, err = run("stat", "-i", cap_b, "--bench", "-x,")
    check(stb == "" and one_error_line(rc, err, r"-x: the benchmark tables .* no CSV layout"),
          "stat --bench -x,: refused with an error, not an empty success", stb + err)
    rc, stx, err = run("stat", "-i", cap_b, "-x,")
    check(rc == 0 and re.search(r"-x: the \d+ BENCH records of .* are not in the CSV", err)
          is not None and ",duration," in stx,
          "stat -x, on a capture with BENCH records: the counters, and a word on stderr that "
          "the bench tables are left out", stx + err)
    rc, stx, err = run("stat", "-i", CAP, "-x,")
    f = {l.split(",")[2]: l.split(",") for l in stx.splitlines() if l.count(",") == 6}
    dur, est = f.get("duration"), f.get("cpu-clock (est.)")
    check(rc == 0 and len(f) == len(stx.splitlines()) == 3 and dur is not None and
          est is not None and dur[1] == "ns" and float(dur[0]) == float(dur[3]) > 0 and
          dur[4] == "100.00" and est[3] == dur[3] and "cpu-clock" not in f,
          "stat -x, -i CAPTURE: perf's 7 fields; run time in ns (the duration's own), the "
          "estimate named cpu-clock (est.)", stx + err)
    try:
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        lines = root.findall(f".//{ns}polyline")
        texts = [t.text or "" for t in root.iter(f"{ns}text")]
        pts = [len(p.get("points", "").split()) for p in lines]
        ok = (root.tag == f"{ns}svg" and len(lines) == 2 and pts == [11, 11] and
              "4K" in texts and "4M" in texts and
              any("working set" in t for t in texts) and
              any("per load" in t and "log10 scale" in t for t in texts) and
              "1" in texts and "10" in texts and
              any("chase 2m-pages" in t for t in texts) and
              any("chase 4k-pages" in t for t in texts) and
              any(t.startswith("memlat") and "QEMU" in t for t in texts))
        detail = f"{len(lines)} polylines {pts}, texts {texts}"
    except (OSError, ET.ParseError) as e:
        ok, detail = False, str(e)
    check(ok, "stat --plot: a valid SVG, a line per page size (11 points), a log10 latency "
          "axis in decades, axis labels, legend, title with the machine", detail + err)

    rc, ls, err = run("list")
    check(rc == 0 and re.search(r"^  cycles\s+r3c\s+r76\s", ls, re.M) is not None and
          "cpu-clock" in ls, "list: events with raw encodings per vendor", ls + err)
    rc, ls, err = run("list", "--cpu", "zen4")
    check(rc == 0 and re.search(r"^  cycles\s+r76\s", ls, re.M) is not None,
          "list --cpu zen4: that model's encodings", ls[:1500] + err)
    rc, apps, err = run("list-apps", "--kernel", KERNEL)
    check(rc == 0 and re.search(r"^  loopnest\s+matrix multiply", apps, re.M) is not None and
          "test_hotspot" not in apps, "list-apps: apps with descriptions, tests hidden",
          apps + err)

    # 4. Bad input: one error line, non-zero status.
    rc, _, err = run("report", "-i", KERNEL, "--kernel", KERNEL)
    check(one_error_line(rc, err, r"not a bareperf capture"), "bad input: not a capture", err)

    data = open(CAP, "rb").read()
    newer = os.path.join(OUT, "newer.bpc")
    with open(newer, "wb") as f:
        f.write(data[:8] + (99).to_bytes(4, "little") * 2 + data[16:])
    rc, _, err = run("report", "-i", newer, "--kernel", KERNEL)
    check(one_error_line(rc, err, r"needs a newer bareperf"), "bad input: a newer capture "
          "version", err)

    # Cut at 70%: a receive-only line's capture (224-byte frames), whose
    # samples span frames. Where the host asks for repeats (record --qemu's
    # default) frames grow to 1 KiB and a run this short may have every
    # sample in one frame, which such a cut loses whole.
    cap_lo = os.path.join(OUT, "listen_only.bpc")
    rc, _, err = run("record", "--qemu", "--icount", "--listen-only", "--kernel", KERNEL,
                     "-o", cap_lo, "--", "test_hotspot")
    _, full_lo, _ = run("report", "-i", cap_lo, "--kernel", KERNEL, "--stdio")
    total_lo = sum(x[1] for x in rows(full_lo))
    data_lo = open(cap_lo, "rb").read() if rc == 0 else b""
    short = os.path.join(OUT, "truncated.bpc")
    with open(short, "wb") as f:
        f.write(data_lo[:512 + (len(data_lo) - 512) * 7 // 10])
    rc, out, err = run("report", "-i", short, "--kernel", KERNEL, "--stdio")
    tr = rows(out)
    check(rc == 0 and re.search(r"^# capture: .*truncated: \d+ of \d+ data bytes", out, re.M)
          and re.search(r"^# WARNING: capture truncated", out, re.M) and tr and
          tr[0][2] == "hot_leaf" and sum(x[1] for x in tr) < total_lo,
          "bad input: a truncated capture reports what it holds and says so", out + err)
    with open(short, "wb") as f:
        f.write(data[:100])
    rc, _, err = run("report", "-i", short, "--kernel", KERNEL)
    check(one_error_line(rc, err, r"truncated capture"), "bad input: a capture cut in its "
          "header", err)

    m = re.search(r"build-id ([0-9a-f]{40})", rep)
    other = os.path.join(OUT, "kernel-other.elf")
    kbytes = open(KERNEL, "rb").read()
    bid = bytes.fromhex(m.group(1)) if m else b"\0" * 20
    at = kbytes.find(bid)
    with open(other, "wb") as f:
        f.write(kbytes[:at] + bytes([bid[0] ^ 0xff]) + kbytes[at + 1:] if at >= 0 else kbytes)
    rc, _, err = run("report", "-i", CAP, "--kernel", other)
    check(at >= 0 and one_error_line(rc, err, r"does not match the capture: build-id"),
          "bad input: a kernel.elf with another build-id", err)
    rc, _, err = run("report", "-i", CAP, "--kernel", BP)
    check(one_error_line(rc, err, r"does not match the capture: build-id"),
          "bad input: a different ELF as the kernel", err)
    rc, out, err = run("report", "-i", CAP, "--kernel", other, "--force", "--stdio")
    check(rc == 0 and "warning" in err and rows(out)[:1] and rows(out)[0][2] == "hot_leaf",
          "report --force: symbolizes anyway, with a warning", err)

    # 5. The virtio-console transport: same profile, UART left plain.
    cap_v = os.path.join(OUT, "e2e-virtio.bpc")
    rc, _, err = run("record", "--icount", "--virtio", "--kernel", KERNEL, "-o", cap_v, "--",
                     "test_hotspot")
    rc2, repv, err2 = run("report", "-i", cap_v, "--kernel", KERNEL, "--stdio")
    rv = rows(repv)
    check(rc == 0 and rc2 == 0 and rv and rv[0][2] == "hot_leaf" and
          abs(rv[0][0] - 75.0) <= 2.0 and "virtio-console" in repv,
          "record --virtio: the stream on virtio-console, same profile", err + repv + err2)

    # 6. The UEFI path (OVMF, the loader, bareperf.cfg in a private ESP). Not
    # under icount, where OVMF takes ~45 s: plain TCG, so the shares are only
    # roughly 3:1; scale=20 for a few hundred samples.
    cap_u = os.path.join(OUT, "e2e-uefi.bpc")
    if os.path.exists(os.path.join(BUILD, "esp", "EFI", "BOOT", "BOOTX64.EFI")):
        rc, _, err = run("record", "--uefi", "--build", BUILD, "--kernel", KERNEL, "-o", cap_u,
                         "--", "test_hotspot", "scale=20")
        rc2, repu, err2 = run("report", "-i", cap_u, "--kernel", KERNEL, "--stdio")
        ru = rows(repu)
        check(rc == 0 and rc2 == 0 and ru and ru[0][2] == "hot_leaf" and
              55.0 <= ru[0][0] <= 95.0 and "qemu-uefi" in repu,
              "record --uefi: OVMF boot, the loader reads our bareperf.cfg, hot_leaf on top",
              err + repu + err2)
    else:
        T.skip("record --uefi", f"{BUILD}/esp is not built")

    # 7. A serial line to a machine that booted with control=1: QEMU's UART
    # on a pty stands in for the cable. record --tty asks for each run over
    # the control channel: runs in one boot with what a request carries
    # (events, period, CPU; counting, the rate limit, tracing), then
    # refused ones.
    q = subprocess.Popen(["qemu-system-x86_64", "-machine", "q35", "-m", "256", "-smp", "1",
                          "-no-reboot", "-display", "none", "-monitor", "none",
                          "-serial", "pty", "-nic", "none",
                          "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                          "-icount", "shift=0,sleep=off", "-bios", "/usr/share/qemu/qboot.rom",
                          "-kernel", KERNEL, "-append", "control=1 stream=uart"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True)
    pts = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and pts is None:
        line = q.stdout.readline()
        if not line:
            break
        m = re.search(r"(/dev/pts/\d+)", line)
        pts = m.group(1) if m else None
    try:
        cap_t1 = os.path.join(OUT, "e2e-tty1.bpc")
        cap_t2 = os.path.join(OUT, "e2e-tty2.bpc")
        # Guest tests (test_hotspot) are not runnable over the control
        # channel: a runnable app, whose hot spot is matmul or sieve.
        rc, _, err = run("record", "--tty", str(pts), "-o", cap_t1, "--", "loopnest",
                         timeout=60)
        rc2, rep1, err2 = run("report", "-i", cap_t1, "--kernel", KERNEL, "--stdio")
        r1 = rows(rep1)
        check(pts is not None and rc == 0 and rc2 == 0 and r1 and
              r1[0][2] in ("matmul", "sieve") and "app exit status 0" in err and
              "over /dev/pts/" in rep1,
              "record --tty, control=1: the run asked for over the line, matmul or sieve on top",
              err + rep1 + err2)
        rc, _, err = run("record", "--tty", str(pts), "-o", cap_t2, "-e", "cpu-clock",
                         "-c", "100000", "--cpu", "0", "--", "loopnest", timeout=60)
        rc2, rep2, err2 = run("report", "-i", cap_t2, "--kernel", KERNEL, "--stdio")
        check(rc == 0 and rc2 == 0 and "period 100000 ns" in rep2 and
              re.search(r"^# app: loopnest \(run 2\)", rep2, re.M) and
              "# losses: none" in rep2 and "WARNING" not in rep2 and
              "throttled" not in rep2 + err and "loader never started" not in err and
              not re.search(r"\b[1-9]\d* (frames )?lost|\b(LOST|LOST_SAMPLES) [1-9]|missing",
                            err),
              "record --tty: a second run in the same boot (-e, -c, --cpu); the frames "
              "before it are not its own, none called lost or missing", err + rep2 + err2)
        # Counting events go with the request: COUNTS records, shown by stat
        # as for a QEMU run, and no sampling (count alone).
        cap_t3 = os.path.join(OUT, "e2e-tty3.bpc")
        rc, _, err = run("record", "--tty", str(pts), "-o", cap_t3, "--count", "tsc,task-clock",
                         "--", "loopnest", timeout=60)
        rc2, st3, err2 = run("stat", "-i", cap_t3)
        rc3, rep3, err3 = run("report", "-i", cap_t3, "--kernel", KERNEL, "--stdio")
        m = re.search(r"^\s+([\d,]+) tck\s+tsc$", st3, re.M)
        m2 = re.search(r"^\s+([\d,]+) ns\s+task-clock\s", st3, re.M)
        check(rc == 0 and rc2 == 0 and rc3 == 0 and m and m2 and
              int(m.group(1).replace(",", "")) > 1000000 and
              int(m2.group(1).replace(",", "")) > 1000000 and
              re.search(r"^# event: tsc, .*counted", st3, re.M) and
              '"START_RUN app=loopnest count=tsc,task-clock"' in st3 and
              "the run only counted" in rep3 and "loader never started" not in err,
              "record --tty --count tsc,task-clock: COUNTS records, bareperf stat shows both "
              "counts (over a million each), report says the run only counted",
              err + st3 + err2 + rep3 + err3)
        # The rate limit: 10,000 cpu-clock ticks/s asked, 1,000 samples/s
        # allowed. The request is in the capture's header; the kernel's
        # TICKS account says how many ticks throttling cost.
        cap_t4 = os.path.join(OUT, "e2e-tty4.bpc")
        rc, _, err = run("record", "--tty", str(pts), "-o", cap_t4, "-e", "cpu-clock", "-c",
                         "100000", "--max-rate", "1000", "--", "loopnest", timeout=60)
        rc2, rep4, err2 = run("report", "-i", cap_t4, "--kernel", KERNEL, "--stdio")
        thr = re.search(r"^# coverage: .*: (\d+) samples .* \((\d+) of them throttled\)",
                        rep4, re.M)
        over = re.search(r"^# samples: (\d+) over ([\d.]+) ms", rep4, re.M)
        rate = int(over.group(1)) / float(over.group(2)) * 1000 if over else 0
        check(rc == 0 and rc2 == 0 and thr and int(thr.group(2)) > 0 and over and
              0 < rate <= 2000 and "max_rate=1000" in rep4 and
              re.search(r"throttled [1-9]\d* times?", err),
              f"record --tty --max-rate 1000: the capture's header has the request, ticks "
              f"throttled ({thr.group(2) if thr else '?'}), {rate:.0f} samples/s of the "
              f"10000 asked", err + rep4 + err2)
        # Tracing: the single-step tracer works under TCG (trace=sieve, as
        # test/e2e/control.py asks with START_RUN itself).
        cap_t5 = os.path.join(OUT, "e2e-tty5.bpc")
        rc, _, err = run("record", "--tty", str(pts), "-o", cap_t5, "--trace", "sieve",
                         "--", "loopnest", timeout=180)
        rc2, aux, err2 = run("report", "-i", cap_t5, "--kernel", KERNEL, "--stdio", "--aux")
        top = re.search(r"^\s+(\d+)\s+[\d.]+%\s+\d+\s+(\S+)$", aux, re.M)
        check(rc == 0 and rc2 == 0 and "single-step tracer" in aux and top and
              top.group(2) == "sieve" and int(top.group(1)) > 100000 and
              re.search(r"^# exact: ", aux, re.M),
              "record --tty --trace sieve: the AUX trace of sieve, every instruction "
              "accounted for", err + aux + err2)
        rc, _, err = run("record", "--tty", str(pts), "-o", os.path.join(OUT, "x.bpc"), "--",
                         "nosuchapp", timeout=60)
        check(rc == 2 and re.search(r"refused the run: no app named 'nosuchapp'", err),
              "record --tty: the machine's refusal is one error line, status 2", err)
        rc, _, err = run("record", "-q", "--tty", str(pts), "-o", os.path.join(OUT, "x.bpc"),
                         "--count", "cyclez", "--", "loopnest", timeout=60)
        check(rc == 2 and one_error_line(rc, err, r"^bareperf record: the machine refused the "
                                         r"run: unknown event 'cyclez'"),
              "record -q --tty --count cyclez: the kernel's ERROR as one line, status 2", err)
        # A function the kernel has not: the run cannot start (exit 2, as
        # trace= on the command line), and the kernel says why.
        rc, _, err = run("record", "--tty", str(pts), "-o", os.path.join(OUT, "x.bpc"),
                         "--trace", "nosuchfunc", "--", "loopnest", timeout=60)
        check(rc == 2 and "trace: no function 'nosuchfunc' in this kernel" in err,
              "record --tty --trace nosuchfunc: exit 2 and the kernel's reason", err)
    finally:
        q.kill()
        q.wait()

    # 8. A failed run says why and exits with what happened (stderr is a
    # pipe here, so the console is not shown): the kernel's own message,
    # no damaged frames, no wrong hint, no "(ok)" from a failed QEMU.
    cap_x = os.path.join(OUT, "x.bpc")
    rc, _, err = run("record", "--kernel", "/bin/ls", "-o", cap_x, "--", "loopnest")
    check(rc == 125 and "qemu:" in err and "(ok)" not in err and
          "without a kernel exit code" in err,
          "record: QEMU failing to boot the kernel is status 125, never \"exit code 0 (ok)\"", err)
    for args, want, name in [
            (["--", "nosuchapp"], r"\| bareperf: no app named 'nosuchapp'", "an unknown app"),
            (["--append", "bogus=1", "--", "loopnest"],
             r"\| bareperf: bad command line: unknown option 'bogus'", "a bad kernel option"),
            (["-e", "nonsense", "--", "loopnest"], r"\| bareperf: unknown event 'nonsense'",
             "a misspelled event")]:
        rc, _, err = run("record", "--kernel", KERNEL, "-o", cap_x, *args)
        check(rc == 2 and re.search(want, err) and "kernel exit code 2" in err and
              "damaged frames, " in err and " 0 other damaged" in err and
              "did the kernel start" not in err and "no PMU" not in err,
              f"record: {name}: status 2 and the kernel's reason on stderr", err)
    rc, _, err = run("record", "--kernel", KERNEL, "-o", cap_x, "-e", "cycles", "--", "loopnest")
    check(rc == 0 and len(re.findall(r"^bareperf: warning: event 'cycles': this machine has no "
                                     r"PMU .*sampling cpu-clock", err, re.M)) == 1 and
          re.search(r"cpu 0: [1-9]\d* samples", err),
          "record -e cycles without a PMU: cpu-clock instead, one line says so", err)
    # The kernel's time for the app and the header's are one window,
    # APP_START to APP_STOP, and each says so.
    _, con, _ = run("script", "-i", cap_x, "--console")
    _, hdr, _ = run("report", "-i", cap_x, "--kernel", KERNEL, "--stdio")
    k = re.search(r"^app: loopnest: exit status 0 after \d+ TSC ticks \((\d+) us\) from "
                  r"APP_START to APP_STOP; starting the run took \d+ us before$", con, re.M)
    h = re.search(r"^# app: loopnest \(run \d+\) on cpu 0: ([\d.]+) ms, exit status 0", hdr, re.M)
    check(k and h and abs(int(k.group(1)) / 1000 - float(h.group(1))) <= 0.02 +
          float(h.group(1)) / 1000,
          "the kernel's app time and the header's are the same window "
          f"({k and k.group(1)} us, {h and h.group(1)} ms)", con + hdr)
    mk = subprocess.run(["make", "--no-print-directory", "run", f"BUILD={BUILD}", "UEFI=0",
                         "APP=loopnest", "EVENTS=nonsense",
                         "OUT=" + os.path.join(OUT, "make-run")], capture_output=True, text=True,
                        timeout=300, stdin=subprocess.DEVNULL)
    check(mk.returncode != 0 and "make run: wrote" not in mk.stdout + mk.stderr and
          "make run: the run failed (bareperf record exit status 2" in mk.stderr and
          "make-run/capture.bpc holds what arrived" in mk.stderr,
          "make run: a failed run stops there with a non-zero status", mk.stdout + mk.stderr)
    # A run refused before it boots writes no capture: the last run's is
    # removed, never pointed at.
    stale = os.path.join(OUT, "make-run", "capture.bpc")
    with open(stale, "w") as f:
        f.write("an earlier run's capture\n")
    mk = subprocess.run(["make", "--no-print-directory", "run", f"BUILD={BUILD}", "UEFI=0",
                         "APP=loopnest", "MEM=16", "OUT=" + os.path.join(OUT, "make-run")],
                        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    check(mk.returncode != 0 and "--mem: '16' is not a number from 64 to 65536" in mk.stderr and
          "make run: the run failed (bareperf record exit status 2, said above)\n" in mk.stderr and
          "holds what arrived" not in mk.stderr and not os.path.exists(stale),
          "make run MEM=16: refused, the earlier capture removed, not pointed at",
          mk.stdout + mk.stderr)

    # 9. Ctrl-C: a valid capture of what arrived, marked interrupted.
    cap_i = os.path.join(OUT, "e2e-interrupted.bpc")
    p = subprocess.Popen([BP, "record", "-v", "--kernel", KERNEL, "-o", cap_i, "--",
                          "test_hotspot", "scale=100"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    seen = ""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        seen += line
        if not line or "app: test_hotspot: start" in line:
            break
    p.send_signal(signal.SIGINT)
    try:
        rest = p.communicate(timeout=20)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        rest = p.communicate()[1]
    rc, out, err = run("report", "-i", cap_i, "--kernel", KERNEL, "--stdio")
    check(p.returncode == 130 and "interrupted" in rest and rc == 0 and
          re.search(r"^# capture: .*interrupted by the user", out, re.M) is not None,
          "Ctrl-C: status 130, the capture is valid and says it was interrupted",
          seen + rest + out + err)

    return T.done(summary=True)


if __name__ == "__main__":
    built = os.path.join(BUILD, "kernel.elf")
    out_dir("e2e", fresh=True, need=(built,))
    shutil.copy(built, KERNEL)
    sys.exit(main())
