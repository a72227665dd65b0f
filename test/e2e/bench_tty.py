#!/usr/bin/env python3
"""`bareperf bench --tty` end to end, QEMU's UART on a pty standing in for
the serial cable to a machine booted with control=1 code=1 stream=uart.

Two boots, side by side. Under -icount shift=0,sleep=off (the TSC counts
instructions, as `bench --icount` boots QEMU) a snippet is measured
exactly, and the label says so because the kernel measured it, not
because the tool was told; a batch names a fault and measures the next
snippet right; a write to the kernel's text stops code in that boot: its
row asks for a reset, the snippets after it say they were not run, later
invocations are told that earlier code stopped the boot, and --json stays
JSON. Without -icount the TSC is only the TSC; then CR4 = -1, which
hangs QEMU's TCG past the watchdog, is reported in its own row with the
wall time the tool waited, the rest of the batch is not sent, and a later
invocation says the machine does not answer. Prints TAP.

The test reads the boot banner off the pty itself before bench opens it,
as on a machine booted long before: bench cannot count on seeing it.

Usage: bench_tty.py [BUILD_DIR]   (run from the repository root)
"""
import json
import os
import re
import select
import subprocess
import sys
import termios
import threading
import time
import tty

from e2e_common import BP, BUILD, Tap, out_dir

import bpqemu

KERNEL = os.path.join(BUILD, "kernel.elf")
READY = b"control: waiting for requests from the host"
BOOT_WAIT_S = 120.0	# QEMU's pty name, then the banner: generous on a loaded host
RUN_WAIT_S = 240.0	# one bench invocation, however slow the host

OUT = out_dir("bench_tty", fresh=True, need=(KERNEL,))
T = Tap()


def boot(icount):
    """QEMU with its UART on a pty, the kernel booted with control=1 code=1
    stream=uart, its banner read off the line: (process, pts, why)."""
    cmd = bpqemu.qemu_command(BUILD, cmdline="control=1 code=1 stream=uart", icount=icount,
                              serial="pty")
    q = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    t0 = time.monotonic()
    said, pts = b"", None
    while pts is None and time.monotonic() - t0 < BOOT_WAIT_S:
        if select.select([q.stdout], [], [], 1.0)[0]:
            chunk = os.read(q.stdout.fileno(), 4096)
            if not chunk:
                return q, None, f"QEMU ended before naming its pty: {said!r}"
            said += chunk
            m = re.search(rb"(/dev/pts/\d+)", said)
            pts = m.group(1).decode() if m else None
    if pts is None:
        return q, None, f"QEMU named no pty in {BOOT_WAIT_S:.0f} s: {said!r}"
    fd = os.open(pts, os.O_RDWR | os.O_NOCTTY)
    try:
        tty.setraw(fd, termios.TCSANOW)
        line = b""
        while READY not in line and time.monotonic() - t0 < BOOT_WAIT_S:
            if select.select([fd], [], [], 1.0)[0]:
                line += os.read(fd, 4096)
    finally:
        os.close(fd)
    if READY not in line:
        return q, None, (f"the kernel did not say '{READY.decode()}' in {BOOT_WAIT_S:.0f} s: "
                         f"{line[-2000:]!r}")
    return q, pts, ""


def bench(*args):
    """build/bareperf bench ARGS: (status, stdout, stderr, wall seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([BP, "bench", *args], capture_output=True, text=True,
                           errors="replace", stdin=subprocess.DEVNULL, timeout=RUN_WAIT_S)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        err = (e.stderr or b"").decode(errors="replace")
        return None, out, err + f"\n(no end in {RUN_WAIT_S:.0f} s: killed)", RUN_WAIT_S


def batch(name, lines):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


def detail(rc, out, err, secs):
    return f"exit {rc} after {secs:.1f} s\nstdout:\n{out}\nstderr:\n{err}"


ICOUNT = "Instructions retired (TSC under -icount)"
OK1 = f'"add rax, rbx","{ICOUNT}",1.000,'
nm = subprocess.run(["nm", KERNEL], capture_output=True, text=True).stdout
text = re.search(r"^([0-9a-f]+) . __text_start$", nm, re.M)
# CR0.WP cleared first: then ring 0 may write read-only pages.
WRITE_TEXT = ("mov rax, cr0; btr rax, 16; mov cr0, rax; mov rbx, 0x%s; inc BYTE PTR [rbx]" %
              (text.group(1) if text else "0"))
HANG = "mov rax, -1; mov cr4, rax"

def no_machine(result):
    """A line whose far end sends boot text and bytes that are no frame
    (a kernel streaming without control=1, or line noise), and never
    answers: bench's verdict, the far end's bytes never shown as text, and
    the frames bench sent (its probe, again every 2 s)."""
    master, slave = os.openpty()
    tty.setraw(slave, termios.TCSANOW)
    name = os.ttyname(slave)
    os.write(master, b"bareperf: booting\n" + bytes(range(0x80, 0x100)) * 4)
    try:
        result["r"] = bench("--tty", name, "-asm", "add rax, rbx")
        result["name"] = name
        os.set_blocking(master, False)
        got = b""
        try:
            while True:
                got += os.read(master, 4096)
        except (BlockingIOError, OSError):
            pass
        result["frames"] = len([c for c in got.split(b"\0") if c])
    finally:
        os.close(slave)
        os.close(master)


qa, pa, why_a = boot(icount=True)
qb, pb, why_b = boot(icount=False)
hang = {}
try:
    T.check(pa is not None, "-icount boot: the pty named, the control banner read", why_a)
    T.check(pb is not None, "plain TCG boot: the pty named, the control banner read", why_b)

    # The plain boot first gets a good snippet, then the hang, in the
    # background: its wait is the longest part of the test.
    rc, out, err, s = bench("--tty", str(pb), "-asm", "add rax, rbx")
    T.check(rc == 0 and re.fullmatch(r"TSC: -?\d+\.\d\d\n", out) and "icount" not in out + err,
            "without -icount: 'TSC', never claimed to count instructions",
            detail(rc, out, err, s))
    hang_file = batch("hang.txt", [HANG, "add rax, rbx", "ud2"])

    def run_hang():
        hang["r"] = bench("--tty", str(pb), "--timeout", "300", "--batch", hang_file)
        hang["again"] = bench("--tty", str(pb), "-asm", "add rax, rbx")
    th = threading.Thread(target=run_hang)
    th.start()
    silent = {}
    th2 = threading.Thread(target=no_machine, args=(silent,))
    th2.start()

    rc, out, err, s = bench("--tty", str(pa), "-asm", "add rax, rbx")
    T.check(rc == 0 and out == "TSC: 1.00\n" and err == "bareperf bench: TSC: QEMU's -icount "
            "makes the TSC count instructions: it is instructions retired\n",
            "--tty under -icount: add rax, rbx is exactly 1.00, labelled from the kernel's "
            "own measurement", detail(rc, out, err, s))

    good = batch("good.txt", ["add rax, rbx", "ud2", "add rax, rbx; add rbx, rax"])
    rc, out, err, s = bench("--tty", str(pa), "--batch", good)
    rows = out.splitlines()
    T.check(rc == 3 and rows[:1] == ["asm,event,value,error"] and len(rows) == 4 and
            rows[1] == OK1 and
            rows[2].startswith('"ud2",,,"fault: #UD invalid opcode at offset 0 of the snippet') and
            rows[3] == f'"add rax, rbx; add rbx, rax","{ICOUNT}",2.000,' and
            "bareperf bench: 3 snippets, 1 refused or failed; " in err,
            "--tty --batch: #UD named, the next snippet measured right in the same boot, "
            "exit 3", detail(rc, out, err, s))

    stop = batch("stop.txt", ["add rax, rbx", WRITE_TEXT, "add rax, rbx", "ud2"])
    rc, out, err, s = bench("--tty", str(pa), "--batch", stop)
    rows = out.splitlines()
    not_run = f'"not run: the machine ({pa}) stopped at line 2 of {stop}, reset it first"'
    T.check(rc == 1 and len(rows) == 5 and rows[1] == OK1 and
            re.fullmatch(r'"mov rax, cr0.*",,,"stopped: the code wrote the kernel.s code or '
                         r'read-only data \(their hash was 0x[0-9a-f]+, now 0x[0-9a-f]+\): this '
                         r'boot runs no more code, reboot the machine; the code changed CR0 '
                         r'\(was 0x[0-9a-f]+, now 0x[0-9a-f]+\): put back; reset the machine '
                         + re.escape(f"({pa}) to run more") + '"', rows[2]) and
            rows[3] == f'"add rax, rbx",,,{not_run}' and rows[4] == f'"ud2",,,{not_run}' and
            "bareperf bench: 4 snippets, 1 refused or failed, 2 not run; " in err,
            "--tty: a write to the kernel's text asks for a reset in its row, the two after "
            "it say they were not run, exit 1", detail(rc, out, err, s))

    # The boot refuses code now; a new invocation is told why, and not
    # that its own snippet wrote anything.
    rc, out, err, s = bench("--tty", str(pa), "-asm", "add rax, rbx")
    T.check(rc == 1 and out == "" and
            re.fullmatch(r"bareperf bench: stopped: not run, earlier code in this boot wrote "
                         r"the kernel's code or read-only data \(their hash was 0x[0-9a-f]+, "
                         r"now 0x[0-9a-f]+\): this boot runs no more code, reboot the machine; "
                         + re.escape(f"reset the machine ({pa}) to run more") + "\n", err),
            "--tty after the write: the refusal blames earlier code, not this snippet",
            detail(rc, out, err, s))

    two = batch("two.txt", ["add rax, rbx", "ud2"])
    rc, out, err, s = bench("--tty", str(pa), "--json", "--batch", two)
    try:
        js = json.loads(out)
    except ValueError as e:
        js, out = None, f"{out}\n(not JSON: {e})"
    T.check(rc == 1 and isinstance(js, list) and len(js) == 2 and
            js[0]["error"].startswith("stopped: not run, earlier code in this boot ") and
            js[1] == {"asm": "ud2", "results": {},
                      "error": f"not run: the machine ({pa}) stopped at line 1 of {two}, "
                               f"reset it first"},
            "--tty --json --batch on the stopped boot: valid JSON, one entry per snippet",
            detail(rc, out, err, s))

    th.join(2 * RUN_WAIT_S + 60)
    rc, out, err, s = hang.get("r", (None, "", "(the hang batch never ended)", 0))
    rows = out.splitlines()
    m = re.fullmatch(re.escape(f'"{HANG}",,,"the machine stopped answering while it ran: no '
                               'reply in ') + r'(\d+\.\d) s of wall time \(the code stopped the watchdog.s '
                     r'NMI, e\.g\. through the IDT, the HPET or its interrupt route, or hung '
                     r'the CPU\); reset the machine ' + re.escape(f'({pb}) to run more"'),
                     rows[1] if len(rows) > 1 else "")
    waited = float(m.group(1)) if m else 0.0
    not_run = f'"not run: the machine ({pb}) stopped at line 1 of {hang_file}, reset it first"'
    # The tool's wait is wall time: at least its 20 s floor, and the test's
    # own clock saw all of it; the snippets after the hang were not sent
    # (each would have cost another wait).
    T.check(rc == 1 and m and waited >= 20.0 and waited - 0.2 <= s < waited + 15 and
            rows[2:] == [f'"add rax, rbx",,,{not_run}', f'"ud2",,,{not_run}'] and
            "bareperf bench: 3 snippets, 1 refused or failed, 2 not run\n" in err,
            f"--tty: CR4 = -1 hangs QEMU's TCG: its row says so after {waited:.1f} s of wall "
            f"time (bench took {s:.1f} s) and asks for a reset; the rest not sent, exit 1",
            detail(rc, out, err, s))
    th2.join(RUN_WAIT_S + 60)
    rc, out, err, s = silent.get("r", (None, "", "(no verdict)", 0))
    T.check(rc == 1 and out == "" and
            err == f"bareperf bench: {silent.get('name')} (booted with control=1 code=1 "
                   "stream=uart? the line at 115200 baud?): no reply from the machine in 20 s\n",
            "--tty to a line that never answers: said in 20 s, its bytes not shown as text",
            detail(rc, out, err, s))
    frames = silent.get("frames", 0)
    T.check(9 <= frames <= 11,
            f"--tty: the probe sent again every 2 s while unanswered ({frames} frames in 20 s)",
            detail(rc, out, err, s))
    rc, out, err, s = hang.get("again", (None, "", "", 0))
    T.check(rc == 1 and out == "" and
            re.fullmatch(re.escape(f"bareperf bench: {pb} (booted with control=1 code=1 "
                                   "stream=uart? the line at 115200 baud?): no reply from the "
                                   "machine in ") + r"20 s\n", err) and s >= 20.0,
            "--tty to the hung machine: no reply in 20 s of wall time, said before any "
            "snippet is blamed, exit 1", detail(rc, out, err, s))
finally:
    for q in (qa, qb):
        q.kill()
        q.wait()
sys.exit(T.done(summary=True))
