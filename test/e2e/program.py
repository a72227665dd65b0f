#!/usr/bin/env python3
"""End-to-end test of programs the host loads (LOAD, apps/program.c): the
small C programs in test/programs/ built with the SDK's flags
(include/bareperf.h; `bareperf cflags` prints the same list) and
`ld -r --build-id=sha1`, sent in pieces over the serial line to a kernel
booted with control=1 code=1, run with START_RUN, and checked: the exit
status, the program's text, its PROGRAM record (build-id, the sections
where the LOAD reply placed them), two programs in one boot, replacing
one, a bp_bench row; and each failure with its message and the kernel
serving the next request: undefined symbols, an unsupported relocation,
not an object, a truncated one, another machine's, a fault, a hang (also with interrupts off), malloc
running dry, a built-in app's name, a newer SDK. Prints TAP, and the load
time of a ~100 KB object (measured on the unpaced line; the time the same
bytes take at 115200 baud is computed from their encoded size).
"""
import os
import struct
import subprocess
import sys
import time

from e2e_common import ROOT, Tap, bpqemu, cobs_decode, cobs_encode, crc32c

CH_CONSOLE, CH_RECORDS, CH_CONTROL, CPU_HOST = 0, 1, 3, 0xFFFF
LIST_APPS, START_RUN, LOAD = 1, 3, 5
OK, ERROR, ITEM = 0x8001, 0x8002, 0x8003
RUN_APP, RUN_EVENT, RUN_PERIOD, RUN_ARG, RUN_TIMEOUT_MS = 1, 2, 3, 6, 11
LOAD_NAME, LOAD_SIZE, LOAD_OFFSET, LOAD_DATA = 1, 2, 3, 4
RECORD_PROGRAM = 0x400A
PIECE = 32 * 1024
CFLAGS = ("-std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie -mcmodel=kernel -mno-red-zone "
          "-fno-stack-protector -fno-omit-frame-pointer -fno-asynchronous-unwind-tables "
          "-msse2").split()

seq = 0


def frame(payload):
    global seq
    hdr = struct.pack("<BBHI", 1 << 4 | CH_CONTROL, 1 if seq == 0 else 0, CPU_HOST, seq)
    seq += 1
    body = hdr + payload
    return b"\0" + cobs_encode(body + struct.pack("<I", crc32c(body))) + b"\0"


def param(kind, value):
    return struct.pack("<HH", kind, len(value)) + value


def msg(kind, value=b""):
    return frame(struct.pack("<HH", kind, len(value)) + value)


class NoReply(Exception):
    pass


class Link:
    """The serial line: requests out; replies, console text and records in."""

    def __init__(self, proc):
        self.p, self.buf, self.console, self.records = proc, b"", b"", b""
        os.set_blocking(proc.stdout.fileno(), False)

    def replies(self, timeout=60):
        out, t0 = [], time.monotonic()
        self.console, self.records = b"", b""
        while time.monotonic() - t0 < timeout:
            chunk = self.p.stdout.read() or b""
            self.buf += chunk
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                f = cobs_decode(raw) if raw else None
                if not f or len(f) < 12 or crc32c(f[:-4]) != struct.unpack("<I", f[-4:])[0]:
                    self.console += raw
                    continue
                hs = 8 if f[0] >> 4 == 1 else 12
                ch = f[0] & 0xF
                if ch == CH_CONSOLE:
                    self.console += f[hs:-4]
                elif ch == CH_RECORDS:
                    self.records += f[hs:-4]
                elif ch == CH_CONTROL:
                    kind, n = struct.unpack("<HH", f[hs:hs + 4])
                    out.append((kind, f[hs + 4:hs + 4 + n].decode(errors="replace")))
                    if kind in (OK, ERROR):
                        return out
            if not chunk:
                if self.p.poll() is not None:
                    break
                time.sleep(0.02)
        tail = self.console.decode(errors="replace").replace("\r", "").splitlines()[-15:]
        raise NoReply(f"no reply within {timeout} s; the kernel's last lines:\n" + "\n".join(tail))

    def send(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def text(self):
        return self.console.decode(errors="replace")

    def load(self, name, data, piece=PIECE):
        """LOAD in pieces; the last reply list (ITEMs and OK, or ERROR)."""
        r = []
        for off in range(0, max(len(data), 1), piece):
            self.send(msg(LOAD, param(LOAD_NAME, name.encode())
                          + param(LOAD_SIZE, struct.pack("<Q", len(data)))
                          + param(LOAD_OFFSET, struct.pack("<Q", off))
                          + param(LOAD_DATA, data[off:off + piece])))
            r = self.replies()
            if r[-1][0] == ERROR:
                break
        return r

    def run(self, app, *args, timeout_ms=None, wait=90, event=b"cpu-clock"):
        v = param(RUN_APP, app.encode()) + param(RUN_EVENT, event) \
            + param(RUN_PERIOD, struct.pack("<Q", 1000000))
        for a in args:
            v += param(RUN_ARG, a.encode())
        if timeout_ms is not None:
            v += param(RUN_TIMEOUT_MS, struct.pack("<Q", timeout_ms))
        self.send(msg(START_RUN, v))
        return self.replies(timeout=wait)


def build(out, name, extra=(), flags=CFLAGS):
    """test/programs/NAME.c as a relocatable object with a build-id."""
    src = os.path.join(ROOT, "test", "programs", name + ".c")
    obj = os.path.join(out, name + "".join(e.replace("-", "_").replace("=", "") for e in extra))
    subprocess.run(["gcc", *flags, *extra, "-I", os.path.join(ROOT, "include"), "-c", src,
                    "-o", obj + ".c.o"], check=True)
    subprocess.run(["ld", "-r", "--build-id=sha1", obj + ".c.o", "-o", obj + ".o"], check=True)
    return open(obj + ".o", "rb").read()


def sections(elf):
    """{index: name} of an ELF64 object's section headers."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", elf, 0x3C)
    hdr = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + 64 * i) for i in range(shnum)]
    strs = elf[hdr[shstrndx][4]:hdr[shstrndx][4] + hdr[shstrndx][5]]
    return {i: strs[h[0]:strs.index(b"\0", h[0])].decode() for i, h in enumerate(hdr)}


def build_id(elf):
    """The GNU build-id note's 20 bytes (namesz 4, descsz 20, type 3, "GNU")."""
    pos = elf.find(struct.pack("<III", 4, 20, 3) + b"GNU\0")
    return elf[pos + 16:pos + 36] if pos >= 0 else b""


def program_records(records, name):
    """(build_id, start, end, [(addr, size, shndx, flags)]) of each PROGRAM record named name."""
    out, at = [], 0
    while True:
        at = records.find(struct.pack("<I", RECORD_PROGRAM), at)
        if at < 0:
            return out
        if at + 88 <= len(records):
            _, _, size = struct.unpack_from("<IHH", records, at)
            bid = records[at + 8:at + 28]
            blen, nr = records[at + 28], struct.unpack_from("<I", records, at + 32)[0]
            pname = records[at + 40:at + 72].split(b"\0")[0].decode(errors="replace")
            start, end = struct.unpack_from("<QQ", records, at + 72)
            if pname == name and size == 88 + 24 * nr and at + size <= len(records):
                secs = [struct.unpack_from("<QQII", records, at + 88 + 24 * k) for k in range(nr)]
                out.append((bid[:blen], start, end, secs))
        at += 4


def app_starts(records, name):
    """(text_start, text_end) of each APP_START record naming name."""
    out, at = [], 0
    while (at := records.find(struct.pack("<IHH", 0x4004, 0, 88), at)) >= 0:
        if at + 88 <= len(records) and records[at + 40:at + 72].split(b"\0")[0] == name.encode():
            out.append(struct.unpack_from("<QQ", records, at + 24))
        at += 4
    return out


def items(r):
    """The LOAD reply's sections: [(shndx, name, addr, size, flags)]."""
    out = []
    for k, v in r:
        f = v.split("\t")
        if k == ITEM and f[0] == "section":
            out.append((int(f[1]), f[2], int(f[3], 16), int(f[4], 16), int(f[5])))
    return out


def check_loaded(T, link, obj, name):
    """LOAD name; the reply's sections against the object's; the ITEMs."""
    t0 = time.monotonic()
    r = link.load(name, obj)
    secs = items(r)
    names = sections(obj)
    T.check(r[-1][0] == OK and secs and all(names.get(i) == n for i, n, *_ in secs)
            and any(n.startswith(".text") and f == 1 for _, n, _, _, f in secs),
            f"LOAD {name} ({len(obj)} bytes in {(len(obj) + PIECE - 1) // PIECE} pieces): "
            f"{len(secs)} sections placed, text executable, in {time.monotonic() - t0:.2f} s",
            r[-3:])
    return secs


def check_hello(T, link, out):
    hello = build(out, "hello")
    secs = check_loaded(T, link, hello, "hello")
    r = link.run("hello", "world")
    con = link.text()
    T.check(r[-1] == (OK, "exit 7"), f"START_RUN hello world: {r[-1]}", con)
    T.check("hello from a loaded program, 2 args" in con and "argv[1]=world" in con,
            "its printf and puts text is on the console", con)
    T.check("add_up" in con, "bp_bench printed a BENCH row for add_up", con)
    T.check("hello: bp_run_on cpu 1: 0, it ran on cpu 1" in con,
            "bp_run_on and bp_wait ran a function on cpu 1", con)
    recs = program_records(link.records, "hello")
    want = [(a, s, i, f) for i, _, a, s, f in secs]
    T.check(recs and recs[0][0] == build_id(hello) and len(recs[0][0]) == 20
            and sorted(recs[0][3]) == sorted(want),
            f"PROGRAM record: build-id {build_id(hello).hex()[:12]}..., "
            f"{len(want)} sections where LOAD placed them", str(recs)[:2000])
    T.check(b"\x07\x40\x00\x00" in link.records, "a BENCH record in the run's records")
    text = [(a, s) for _, n, a, s, f in secs if f == 1]
    starts = app_starts(link.records, "hello")
    T.check(starts and all(t == (min(a for a, _ in text), max(a + s for a, s in text))
                           for t in starts),
            f"APP_START's text range is the program's text ({len(starts)} records)", starts)
    r = link.run("hello")
    T.check(r[-1] == (OK, "exit 3"), f"hello runs again in the same boot: {r[-1]}")
    link.send(msg(LIST_APPS))
    r = link.replies()
    T.check(any(v.startswith("hello\tloaded program") for k, v in r if k == ITEM),
            "LIST_APPS lists hello as a loaded program", r)


def check_two(T, link, out):
    check_loaded(T, link, build(out, "second"), "second")
    r1, r2 = link.run("second"), link.run("hello")
    T.check(r1[-1] == (OK, "exit 11") and r2[-1] == (OK, "exit 3"),
            f"two programs in one boot: second {r1[-1]}, hello {r2[-1]}")
    check_loaded(T, link, build(out, "second", ["-DVERSION=2"]), "second")
    r = link.run("second")
    T.check(r[-1] == (OK, "exit 12") and "version 2" in link.text(),
            f"loading second again replaces it: {r[-1]}", link.text())


def refusals(out):
    """(what, name, object, the ERROR's text it must hold)."""
    hello = build(out, "hello")
    pic = build(out, "hello", ["-fpic", "-mcmodel=small"],
                [f for f in CFLAGS if f not in ("-fno-pic", "-fno-pie", "-mcmodel=kernel")])
    wrong = bytearray(hello)
    wrong[0x12:0x14] = struct.pack("<H", 3)		# EM_386
    return [
        ("undefined symbols", "undef", build(out, "undef"), "undefined symbols '"),
        ("an unsupported relocation", "pic", pic,
         "relocation R_X86_64_REX_GOTPCRELX in .text.startup+0x"),
        ("not an ELF object", "text", b"int main(void) { return 0; }\n" * 20, "not an ELF object"),
        ("a truncated object", "cut", hello[:len(hello) // 2], "truncated?"),
        ("another machine's object", "i386", bytes(wrong), "ELF machine 3, not x86-64"),
        ("a built-in app's name", "loopnest", hello, "'loopnest' is a built-in app's name"),
        ("a newer SDK", "newsdk", build(out, "newsdk"), "built for SDK version 99"),
    ]


def check_stops(T, link, out):
    check_loaded(T, link, build(out, "faults"), "faults")
    for arg, exc, fn in (("null", "#PF", "crash_null+0x"), ("div", "#DE", "crash_div+0x"),
                         ("ud2", "#UD", "main+0x")):
        r = link.run("faults", arg)
        T.check(r[-1][0] == ERROR and f"program 'faults' faulted: {exc}" in r[-1][1]
                and fn in r[-1][1], f"a fault ends the run: {r[-1][1]!r}", link.text())
        T.check("Call trace:" in link.text() and fn.split("+")[0] in link.text(),
                f"{arg}: the register dump and a backtrace naming the program's function",
                link.text())
    check_loaded(T, link, build(out, "hang"), "hang")
    r = link.run("hang", timeout_ms=2000)
    T.check(r[-1][0] == ERROR and "still running after 2000 ms" in r[-1][1]
            and "spin_forever" in r[-1][1], f"a hang is stopped: {r[-1][1]!r}", link.text())
    check_loaded(T, link, build(out, "cli_spin"), "cli_spin")
    r = link.run("cli_spin", timeout_ms=1000)
    T.check(r[-1][0] == ERROR and "still running after 1000 ms" in r[-1][1]
            and "spin_masked" in r[-1][1], f"a hang with interrupts off is stopped: {r[-1][1]!r}",
            link.text())
    r = link.run("cli_spin", timeout_ms=1000, event=b"none")
    T.check(r[-1][0] == ERROR and "still running after 1000 ms" in r[-1][1],
            f"... also in a run without sampling NMIs: {r[-1][1]!r}", link.text())
    check_loaded(T, link, build(out, "oom"), "oom")
    r = link.run("oom", wait=180)
    T.check(r[-1] == (OK, "exit 0") and "malloc ran out of memory" in link.text(),
            f"malloc runs dry: {r[-1]}; the run's end says so", link.text())
    r = link.run("hello", "again")
    T.check(r[-1] == (OK, "exit 7"), f"the kernel serves the next run after all that: {r[-1]}")


def check_big(T, link, out):
    big = build(out, "big")
    t0 = time.monotonic()
    r = link.load("big", big)
    dt = time.monotonic() - t0
    wire = sum(len(msg(LOAD, b"x" * 28 + big[o:o + PIECE])) for o in range(0, len(big), PIECE))
    T.check(r[-1][0] == OK, f"LOAD of a {len(big) // 1024} KiB object: {dt:.2f} s on the "
            f"unpaced line; its {wire} encoded bytes take {wire * 10 / 115200:.1f} s at 115200 "
            f"baud", r[-3:])


def main():
    out = os.path.join(ROOT, "build", "test", "program")
    os.makedirs(out, exist_ok=True)
    # Two CPUs: a program runs a function on the other with bp_run_on.
    p = subprocess.Popen(bpqemu.qemu_command("build", cmdline="control=1 code=1 stream=uart "
                                             "events=none", smp=2),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    link, T = Link(p), Tap()
    try:
        link.send(msg(LIST_APPS))
        link.replies(timeout=150)
        check_hello(T, link, out)
        check_two(T, link, out)
        for what, name, obj, want in refusals(out):
            r = link.load(name, obj)
            T.check(r[-1][0] == ERROR and want in r[-1][1] and (name != "undef" or all(
                f"'{s}'" in r[-1][1] for s in ("nosuch_function", "another_missing"))),
                f"refused, {what}: {r[-1][1]!r}")
            r = link.run("second")
            T.check(r[-1] == (OK, "exit 12"), f"... and the next request is served: {r[-1]}")
        check_stops(T, link, out)
        check_big(T, link, out)
    except NoReply as e:
        T.check(False, "the kernel answers every request", str(e))
    finally:
        p.kill()
        p.wait()
    return T.done()


if __name__ == "__main__":
    sys.exit(main())
