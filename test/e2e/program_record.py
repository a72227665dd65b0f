#!/usr/bin/env python3
"""The user's own programs end to end: `bareperf record -- FILE.c|FILE.o`
and `bareperf bench -code_c FILE.c -function NAME` (tools/util/program.c)
against the kernel's LOAD (uapi/wire.h), with the programs of
test/programs/.

On the host, before any machine: a file that does not compile (the
compiler's own messages, nothing sent, no capture written), a file that is
no object, an ELF executable. In QEMU booted by record: hello.c runs, its
printf reaches the console, its exit status is record's, its full object
is kept beside the capture (STEM.hello.o) with the build-id the capture's
PROGRAM record names; fault.c's fault is reported naming main; hang.c is
stopped by --run-timeout 2, where it spun named; a file
named after a built-in app and undef.c are refused, the latter naming the
symbol, and the file at -o from an earlier run
stays as it was. Over a pty standing in for the
serial cable, one boot with control=1 code=1 pace=115200: two programs one
after the other, a bench function that
reads through a null pointer (its fault named, the next function measured),
and the load time of big.c (~100 KB), printed. bench
measures addchain's 100 dependent adds under -icount (the TSC counts
instructions) and names a function the object lacks.

A kernel without LOAD (it answers "unknown request type 0x5") skips the
checks that need one. Prints TAP.

Usage: program_record.py [BUILD_DIR]   (run from the repository root)
"""
import os
import re
import select
import struct
import subprocess
import termios
import time
import tty

from e2e_common import BP, BUILD, Tap, capture_parts, cobs_decode, crc32c, out_dir

import bpqemu

KERNEL = os.path.join(BUILD, "kernel.elf")
PROGS = "test/programs"
READY = b"control: waiting for requests from the host"
BOOT_WAIT_S = 120.0
RUN_WAIT_S = 300.0
NO_LOAD = "unknown request type 0x5"

OUT = out_dir("program_record", fresh=True, need=(KERNEL,))
T = Tap()
ENV = dict(os.environ, PERF_BUILDID_DIR=os.path.join(OUT, "buildid"))


def bp(*args):
    """build/bareperf ARGS: (status, stdout, stderr, wall seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([BP, *args], capture_output=True, text=True, errors="replace",
                           stdin=subprocess.DEVNULL, timeout=RUN_WAIT_S, env=ENV)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        err = (e.stderr or b"").decode(errors="replace")
        return None, "", err + f"\n(no end in {RUN_WAIT_S:.0f} s: killed)", RUN_WAIT_S


def detail(rc, out, err, secs):
    return f"exit {rc} after {secs:.1f} s\nstdout:\n{out}\nstderr:\n{err}"


def build_id(path):
    """The GNU build-id of an ELF file, in hex, or None."""
    p = subprocess.run(["readelf", "-n", path], capture_output=True, text=True)
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout)
    return m.group(1) if m else None


def program_build_id(capture):
    """The build-id of the capture's first PROGRAM record (perf_ring.h
    BP_RECORD_PROGRAM: after the 8-byte record header, 20 bytes and their
    length), in hex, read off the RECORDS frames; or None."""
    for raw in capture_parts(capture)[1]:
        f = cobs_decode(raw) if raw else None
        if not f or len(f) < 16 or crc32c(f[:-4]) != struct.unpack("<I", f[-4:])[0]:
            continue
        hs = 8 if f[0] >> 4 == 1 else 12
        at = f.find(struct.pack("<I", 0x400a), hs, len(f) - 4)
        if f[0] & 0xF == 1 and at >= 0 and at + 29 <= len(f) - 4:
            rec = f[at:]
            return rec[8:8 + rec[28]].hex()
    return None


def out(name, text):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def host_refusals():
    """What the host refuses before it touches a machine."""
    cap = os.path.join(OUT, "never.bpc")
    bad = out("bad.c", "int main(void) { return undeclared_thing; }\n")
    r = bp("record", "-o", cap, "--", bad)
    T.check(r[0] == 1 and "undeclared_thing" in r[2] and "error" in r[2] and
            f"{bad} does not compile; nothing was sent" in r[2] and not os.path.exists(cap),
            "record -- bad.c: the compiler's messages, 'does not compile; nothing was "
            "sent', exit 1, no capture", detail(*r))
    junk = out("junk.o", "not an object\n")
    r = bp("record", "-o", cap, "--", junk)
    T.check(r[0] == 1 and "is not an object file" in r[2] and not os.path.exists(cap),
            "record -- junk.o: not an object file", detail(*r))
    exe = os.path.join(OUT, "exe.o")
    subprocess.run(["cp", "/bin/true", exe], check=True)
    r = bp("record", "-o", cap, "--", exe)
    T.check(r[0] == 1 and "not a relocatable object" in r[2], "record -- an ELF executable: "
            "not a relocatable object", detail(*r))
    r = bp("bench", "-code_c", bad, "-function", "main")
    T.check(r[0] == 2 and "does not compile" in r[2], "bench -code_c bad.c: does not compile",
            detail(*r))


def qemu_runs():
    """record --qemu: hello.c runs; undef.c is refused; -o kept. False
    when the kernel has no LOAD."""
    cap = os.path.join(OUT, "hello.bpc")
    r = bp("record", "-v", "-o", cap, "--timeout", "240", "--", f"{PROGS}/hello.c", "one")
    if NO_LOAD in r[2]:
        T.skip("record --qemu -- hello.c", "this kernel has no LOAD")
        return False
    T.check(r[0] == 7 and "hello: argv[1]=one" in r[2] and
            "hello from a loaded program, 2 args" in r[2],
            "record --qemu -- hello.c one: its exit status (7), its printf on the console",
            detail(*r))
    T.check("section" in r[2], "record -v: the placed sections", detail(*r))
    kept = os.path.join(OUT, "hello.hello.o")
    bid = build_id(kept) if os.path.exists(kept) else None
    T.check(bid is not None and os.path.exists(os.path.join(OUT, "buildid", ".build-id",
                                                            bid[:2], bid[2:])),
            "hello.hello.o kept beside the capture, with a build-id, in the build-id cache",
            f"kept: {os.path.exists(kept)}, build-id {bid}")
    T.check(bid is not None and program_build_id(cap) == bid, "the capture's PROGRAM record "
            "names the kept object's build-id", f"kept {bid}, PROGRAM {program_build_id(cap)}")
    r = bp("record", "-o", os.path.join(OUT, "fault.bpc"), "--timeout", "240", "--",
           f"{PROGS}/fault.c")
    T.check(r[0] == 1 and "fault" in r[2] and "main+" in r[2],
            "record -- fault.c: exit 1, the kernel's report of the fault names main",
            detail(*r))
    r = bp("record", "-o", os.path.join(OUT, "hang.bpc"), "--timeout", "240", "--run-timeout",
           "2", "--", f"{PROGS}/hang.c")
    T.check(r[0] == 1 and "still running after 2000 ms" in r[2] and "spin_forever" in r[2]
            and r[3] < 50, "record --run-timeout 2 -- hang.c: stopped after 2 s (not the "
            "default 60), exit 1, where it spun named", detail(*r))
    clash = out("loopnest.c", open(f"{PROGS}/hello.c").read())
    r = bp("record", "-o", os.path.join(OUT, "clash.bpc"), "--timeout", "240", "--", clash)
    T.check(r[0] == 1 and "built-in" in r[2] and f"rename {clash}" in r[2],
            "record -- loopnest.c: a built-in app's name, refused; rename it", detail(*r))
    keep = os.path.join(OUT, "earlier.bpc")
    with open(keep, "wb") as f:
        f.write(b"an earlier run's capture")
    r = bp("record", "-o", keep, "--timeout", "240", "--", f"{PROGS}/undef.c")
    T.check(r[0] not in (0, None) and "nosuch_function" in r[2],
            "record -- undef.c: refused, the kernel names the symbol", detail(*r))
    with open(keep, "rb") as f:
        T.check(f.read() == b"an earlier run's capture", "the file at -o stays as it was")
    return True


def boot_pty():
    """QEMU with its UART on a pty, control=1 code=1 pace=115200, its
    banner read off the line: (process, pts, why)."""
    cmd = bpqemu.qemu_command(BUILD, cmdline="control=1 code=1 stream=uart pace=115200",
                              serial="pty")
    q = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    t0, said, pts = time.monotonic(), b"", None
    while pts is None and time.monotonic() - t0 < BOOT_WAIT_S:
        if select.select([q.stdout], [], [], 1.0)[0]:
            chunk = os.read(q.stdout.fileno(), 4096)
            if not chunk:
                return q, None, f"QEMU ended before naming its pty: {said!r}"
            said += chunk
            m = re.search(rb"(/dev/pts/\d+)", said)
            pts = m.group(1).decode() if m else None
    if pts is None:
        return q, None, f"QEMU named no pty: {said!r}"
    fd = os.open(pts, os.O_RDWR | os.O_NOCTTY)
    try:
        tty.setraw(fd, termios.TCSANOW)
        line = b""
        while READY not in line and time.monotonic() - t0 < BOOT_WAIT_S:
            if select.select([fd], [], [], 1.0)[0]:
                line += os.read(fd, 4096)
    finally:
        os.close(fd)
    return q, pts, "" if READY in line else f"no banner: {line[-2000:]!r}"


def pty_runs():
    """Two programs in one boot over a pty, and big.c's load time."""
    q, pts, why = boot_pty()
    try:
        if not T.check(pts is not None and not why, "a machine booted on a pty", why):
            return
        a = bp("record", "-v", "--tty", pts, "-o", os.path.join(OUT, "a.bpc"), "--",
               f"{PROGS}/hello.c", "first")
        b = bp("record", "-v", "--tty", pts, "-o", os.path.join(OUT, "b.bpc"), "--",
               f"{PROGS}/second.c")
        T.check(a[0] == 7 and "hello: argv[1]=first" in a[2] and b[0] == 11 and
                "second: version 1" in b[2], "--tty: hello.c, then second.c, in one boot",
                detail(*a) + "\n" + detail(*b))
        d = bp("bench", "--tty", pts, "-code_c", f"{PROGS}/nullcall.c", "-function",
               "deref_null")
        e = bp("bench", "--tty", pts, "-code_c", f"{PROGS}/addchain.c", "-function",
               "addchain", "-e", "tsc")
        T.check(d[0] not in (0, None) and "#PF" in d[2] and "deref_null+0x" in d[2] and
                # Without -icount the n- and 2n-runs' difference is noise
                # around the true count and may be below zero.
                e[0] == 0 and re.search(r"^TSC: -?[0-9.]+$", e[1], re.M),
                "--tty: bench -code_c nullcall.c -function deref_null faults, named; "
                "addchain is measured next in the same boot", detail(*d) + "\n" + detail(*e))
        c = bp("record", "-v", "--tty", pts, "-o", os.path.join(OUT, "big.bpc"), "--",
               f"{PROGS}/big.c")
        m = re.search(r"big loaded in ([0-9.]+) s", c[2])
        size = re.search(r"program big: (\d+) bytes", c[2])
        T.check(c[0] == 2 and m is not None,
                "--tty: big.c (~100 KB) loaded and run", detail(*c))
        if m and size:
            n = int(size.group(1))
            print(f"# load time of big.c ({n} bytes) over the pty, the kernel booted with "
                  f"pace=115200: {float(m.group(1)):.2f} s; on a 115200-baud line the "
                  f"bytes alone take {n / 11520.0:.1f} s")
    finally:
        q.kill()
        q.wait()


def bench_runs():
    """bench -code_c: addchain's 100 adds under -icount; a missing function."""
    r = bp("bench", "--icount", "-code_c", f"{PROGS}/addchain.c", "-function", "addchain",
           "-unroll_count", "10", "-e", "tsc", "-median")
    m = re.search(r"^TSC: ([0-9.]+)$", r[1], re.M)
    v = float(m.group(1)) if m else -1
    T.check(r[0] == 0 and 100 <= v <= 112 and "the TSC count instructions" in r[2], "bench -code_c addchain.c -function addchain "
            "--icount: 100 adds and the call's few instructions", detail(*r))
    r = bp("bench", "-code_c", f"{PROGS}/addchain.c", "-function", "nosuch")
    T.check(r[0] == 2 and "defines no function nosuch" in r[2],
            "bench -code_c -function nosuch: the missing function named", detail(*r))


def main():
    host_refusals()
    if qemu_runs():
        pty_runs()
        bench_runs()
    return T.done(summary=True)


if __name__ == "__main__":
    raise SystemExit(main())
