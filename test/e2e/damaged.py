"""Captures damaged on purpose, and lines that carry no machine, through
build/bareperf: a stream's first frame twice counts once (a duplicate);
every reader says on stderr what report says about damage, a cut or a
missing END; a capture with a bit flipped in every 500 bytes still gives
most of its samples (the kernel sends the run's descriptors again), and
report says how many did not come or could not be read; -i - reads a
pipe as a stream and refuses a non-capture from its first bytes; record
--tty gives up on a silent or noisy line (--wait) and names a closed one;
two records to one -o: the second is refused.

Usage: python3 test/e2e/damaged.py [BUILD_DIR]   (from the repository root)
"""
import glob
import os
import pty
import random
import re
import shutil
import struct
import subprocess
import sys
import time

from e2e_common import BP, BUILD, Tap, cobs_decode, out_dir, run

T = Tap()
OUT = out_dir("damaged", fresh=True, need=(os.path.join(BUILD, "kernel.elf"),))
K = os.path.join(OUT, "kernel.elf")
shutil.copy(os.path.join(BUILD, "kernel.elf"), K)
CAP = os.path.join(OUT, "loop.bpc")


def frames(path):
    """The capture's header, and its stream cut at the delimiters: [chunk]."""
    d = open(path, "rb").read()
    hs = struct.unpack_from("<I", d, 16)[0]
    return d[:hs], d[hs:].split(b"\0")


def write(path, header, chunks):
    """A capture of these chunks, its header's data_size made to fit."""
    data = b"\0".join(chunks)
    h = bytearray(header)
    struct.pack_into("<Q", h, 24, len(data))
    open(path, "wb").write(bytes(h) + data)


def frame(chunk):
    """(channel, flags, seq) of a well-formed chunk, else None."""
    f = cobs_decode(chunk) if chunk else None
    if not f or len(f) < 16:
        return None
    return f[0] & 15, f[1], struct.unpack_from("<I", f, 4)[0]


def report(path, *args, stdin=None):
    p = subprocess.run([BP, "report", "-i", path, "-k", K, "--stdio", *args],
                       capture_output=True, timeout=60, stdin=stdin)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def samples(text):
    m = re.search(r"^# samples: (\d+)", text, re.M)
    return int(m.group(1)) if m else -1


rc, _, err = run("record", "--qemu", "--icount", "--kernel", K, "-q", "-o", CAP, "--", "loopnest")
if not T.check(rc == 0 and os.path.exists(CAP), "record --qemu --icount loopnest", err):
    sys.exit(T.done())
_, rep, _ = report(CAP)
n = samples(rep)
header, chunks = frames(CAP)

# 1. The first RECORDS frame (channel 1, seq 0, START) right after itself.
first = next(i for i, c in enumerate(chunks) if (frame(c) or (0,))[0] == 1 and
             frame(c)[1] & 1 and frame(c)[2] == 0)
write(os.path.join(OUT, "dup.bpc"), header, chunks[:first + 1] + chunks[first:])
rc, out, err = report(os.path.join(OUT, "dup.bpc"))
T.check(rc == 0 and n > 0 and samples(out) == n and
        "# WARNING: duplicate frames dropped: 1" in out and "# losses: none" not in out,
        f"the first RECORDS frame twice: {n} samples, one duplicate dropped and counted",
        out + err)


def flipped(path, seed):
    """A copy of the capture with one bit flipped in every 500 stream bytes."""
    d = bytearray(open(path, "rb").read())
    hs = struct.unpack_from("<I", d, 16)[0]
    rng = random.Random(seed)
    for at in range(hs, len(d), 500):
        d[at + rng.randrange(min(500, len(d) - at))] ^= 1 << rng.randrange(8)
    out = os.path.join(OUT, f"flip{seed}.bpc")
    open(out, "wb").write(bytes(d))
    return out


def accounted(text):
    """The samples report says did not arrive, or arrived unreadable."""
    lost = sum(int(m) for m in re.findall(r"samples missing: (\d+) of", text))
    bad = sum(int(m) for m in re.findall(r"unreadable samples: (\d+)", text))
    return lost + bad


# 1b. One bit in every 500 bytes: frames are dropped whole, the descriptors
# come again, most samples are read; the others are said.
SUITE = os.path.join(OUT, "suite.bpc")
# A receive-only capture: the kernel repeats the descriptors periodically.
rc, _, err = run("record", "--qemu", "--icount", "--listen-only", "--kernel", K, "-q", "-o", SUITE,
                "--", "suite")
_, rep0, _ = report(SUITE)
total, got, said, repeats = samples(rep0), 0, True, 0
for c in frames(SUITE)[1]:
    f = frame(c)
    repeats += bool(f and f[0] == 1 and f[1] & 2)
for seed in range(1, 6):
    rc, out, err = report(flipped(SUITE, seed))
    got += max(samples(out), 0)
    # Where a TICKS came through, every sample it counts is read or said.
    said &= rc == 0 and "# WARNING: damaged frames:" in out and \
        ("samples missing:" not in out or max(samples(out), 0) + accounted(out) == total)
T.check(rc == 0 and total > 100 and repeats >= 5 and got * 2 > total * 5 and said,
        f"a bit flipped in every 500 bytes: {got} of 5 x {total} samples read, the rest said "
        f"(missing or unreadable); {repeats} repeated descriptors in the capture", rep0 + out)

# 2. Readers on a capture without its END, on a damaged frame, and on one cut
# in the middle.
last_ctl = max(i for i, c in enumerate(chunks) if (frame(c) or (0,))[0] == 3)
write(os.path.join(OUT, "endless.bpc"), header, chunks[:last_ctl] + chunks[last_ctl + 1:])
hit = list(chunks)
hit[first + 1] = hit[first + 1][:5] + bytes([hit[first + 1][5] ^ 0x55 or 1]) + hit[first + 1][6:]
write(os.path.join(OUT, "hit.bpc"), header, hit)
whole = open(CAP, "rb").read()
open(os.path.join(OUT, "cut.bpc"), "wb").write(whole[:len(header) + (len(whole) - len(header)) // 2])
for name, says in (("endless", "the capture has no end"), ("hit", "damaged frames: 1 CRC error"),
                   ("cut", "capture truncated")):
    path = os.path.join(OUT, name + ".bpc")
    _, rep, _ = report(path)
    p = subprocess.run([BP, "script", "-i", path, "-k", K], capture_output=True, timeout=60)
    err = p.stderr.decode(errors="replace")
    said = re.search(rf"^# WARNING: ({re.escape(says)}.*)$", rep, re.M)
    T.check(p.returncode == 0 and said is not None and "truncated: truncated" not in rep and
            f"bareperf script: warning: {said.group(1)}" in err,
            f"script -i {name}.bpc says on stderr what report says: {says}", rep + err)

tmpdir = os.environ.get("TMPDIR") or "/tmp"
before = set(glob.glob(os.path.join(tmpdir, "bareperf-stdin.*")))
t0 = time.monotonic()
with open("/dev/zero", "rb") as z:
    rc, out, err = report("-", stdin=z)
T.check(rc == 1 and time.monotonic() - t0 < 10 and
        "(standard input): not a bareperf capture: its first bytes are zero" in err and
        set(glob.glob(os.path.join(tmpdir, "bareperf-stdin.*"))) <= before,
        "report -i - < /dev/zero: refused from the first bytes, nothing copied", err)
rc, out, err = report("/dev/zero")
T.check(rc == 1 and "/dev/zero: not a bareperf capture: its first bytes are zero" in err,
        "report -i /dev/zero: says what it is, not 'empty file'", err)
cat = subprocess.Popen(["cat", CAP], stdout=subprocess.PIPE)
rc, out, err = report("-", stdin=cat.stdout)
cat.wait()
T.check(rc == 0 and samples(out) == n and "# capture: (standard input) (complete" in out,
        "report -i - from a pipe: the same samples", out + err)


# 3. and 4. record --tty on lines with no machine.
def tty_record(out, *args):
    """record --tty on a fresh pty's slave: (Popen, master fd)."""
    m, s = pty.openpty()
    p = subprocess.Popen([BP, "record", "--tty", os.ttyname(s), "-o", out, *args, "--",
                          "loopnest"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(s)
    return p, m


def finish(p, timeout=20):
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        return None, err.decode(errors="replace") + "\n(killed: still waiting)"
    return p.returncode, err.decode(errors="replace")


t0 = time.monotonic()
p, m = tty_record(os.path.join(OUT, "silent.bpc"), "--wait", "2")
rc, err = finish(p)
os.close(m)
T.check(rc == 1 and time.monotonic() - t0 < 15 and "nothing arrived on" in err,
        "record --tty on a silent line: gives up after --wait, says why", err)

p, m = tty_record(os.path.join(OUT, "noise.bpc"), "--wait", "2")
for _ in range(5):
    os.write(m, bytes(range(1, 256)))
    time.sleep(0.1)
rc, err = finish(p)
os.close(m)
T.check(rc == 1 and re.search(r"\d+ bytes arrived on .* not one frame", err) is not None,
        "record --tty on a line of noise: gives up after --wait, says why", err)

p, m = tty_record(os.path.join(OUT, "closed.bpc"))
time.sleep(0.5)
os.close(m)
rc, err = finish(p)
T.check(rc == 1 and "closed before the machine answered" in err and "refused" not in err,
        "record --tty on a line that closes: says the line closed", err)

same = os.path.join(OUT, "same.bpc")
p1, m1 = tty_record(same, "--wait", "4")
time.sleep(0.5)
p2, m2 = tty_record(same, "--wait", "1")
rc2, err2 = finish(p2)
rc1, err1 = finish(p1)
os.close(m1)
os.close(m2)
T.check(rc2 not in (0, None) and "another bareperf record is writing this capture" in err2 and
        rc1 == 1 and "nothing arrived on" in err1,
        "two records to one -o: the second is refused, the first goes on", err1 + err2)

sys.exit(T.done())
