"""What the end-to-end tests of the host tool share (test/e2e/e2e_bareperf.py,
coverage.py, control.py; Tap also for the OVMF boots fbconsole.py,
fwnoise.py and bootimage.py): the build directory from the command line, TAP
output, running build/bareperf, the output directory and the boot of the
kernel in QEMU (tools/bpqemu.py), and the test side's own implementation
of the wire format's framing (COBS, CRC32C: uapi/wire.h §2, written from
the header's text, independent of the C codec it checks).
"""
import os
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bpqemu  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
BP = os.path.join(BUILD, "bareperf")


class Tap:
    """Numbered TAP lines; a failed check shows the last lines of its detail."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        self.t0 = time.monotonic()

    def check(self, ok, name, detail=""):
        """One TAP line; returns ok."""
        self.n += 1
        if not ok:
            self.failed += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {name}", flush=True)
        if not ok and detail:
            for line in str(detail).splitlines()[-30:]:
                print(f"#   {line}", flush=True)
        return ok

    def skip(self, name, why):
        self.n += 1
        print(f"ok {self.n} - {name} # SKIP {why}", flush=True)

    def done(self, summary=False):
        """The plan line (and with summary, the totals and the time); the exit status."""
        print(f"1..{self.n}")
        if summary:
            print(f"# {self.n - self.failed} passed, {self.failed} failed, "
                  f"{time.monotonic() - self.t0:.1f} s")
        return 1 if self.failed else 0


def run(*args, timeout=300):
    """build/bareperf ARGS: (status, stdout, stderr)."""
    p = subprocess.run([BP, *args], capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def out_dir(name, fresh=False, need=()):
    """build/test/NAME, emptied first if fresh. The files in need (besides
    bareperf) must have been built: otherwise one failed TAP check and exit 1."""
    for f in (BP, *need):
        if not os.path.exists(f):
            print(f"1..1\nnot ok 1 - {' and '.join((BP, *need))} must be built first")
            sys.exit(1)
    d = os.path.join(BUILD, "test", name)
    if fresh:
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d, exist_ok=True)
    return d


def boot(cmdline, build="build"):
    """QEMU running the kernel with this command line, as tools/bpqemu.py
    starts it; its serial line is the process's stdin and stdout."""
    cmd = bpqemu.qemu_command(build, cmdline=cmdline)
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)


def cpu_s(pid):
    """The CPU time (user and system, seconds) process pid has used, or
    None when /proc does not say (proc(5): fields 14 and 15, in ticks)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Progress:
    """A wait that counts a QEMU's progress, not wall time: the time since
    its last output, and of that only the CPU time QEMU got (a loaded host
    stretches the wall time its work takes, not the work), within CAP
    times the bound in wall time for a machine that runs without end."""
    CAP = 4

    def __init__(self, proc, bound):
        self.p, self.bound = proc, bound
        self.t0 = time.monotonic()
        self.cpu0 = cpu_s(proc.pid)
        self.output()

    def output(self):
        """The machine said something: the wait starts again."""
        self.mark, self.cpu_mark = time.monotonic(), cpu_s(self.p.pid)

    def over(self):
        """None while the wait goes on; else why it ended."""
        now, cpu = time.monotonic(), cpu_s(self.p.pid)
        spent = now - self.mark
        if cpu is not None and self.cpu_mark is not None:
            spent = min(spent, cpu - self.cpu_mark)
        used = "" if cpu is None or self.cpu0 is None else f", {cpu - self.cpu0:.0f} s of CPU time"
        if now - self.t0 >= self.CAP * self.bound:
            return (f"{now - self.t0:.0f} s of wall time, the bound for a machine that keeps "
                    f"running ({self.CAP} times {self.bound} s{used})")
        if spent >= self.bound:
            return (f"{self.bound} s since its last output, counting only the CPU time QEMU got "
                    f"({now - self.t0:.0f} s of wall time in all{used})")
        return None


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def cobs_encode(data):
    out, block = bytearray(), bytearray()
    for b in data:
        if b == 0:
            out += bytes([len(block) + 1]) + block
            block = bytearray()
        else:
            block.append(b)
            if len(block) == 254:
                out += bytes([255]) + block
                block = bytearray()
    return bytes(out + bytes([len(block) + 1]) + block)


def cobs_decode(data):
    out, i = bytearray(), 0
    while i < len(data):
        code, end = data[i], i + data[i]
        if code == 0 or end > len(data):
            return None
        out += data[i + 1:end]
        i = end
        if code < 255 and i < len(data):
            out.append(0)
    return bytes(out)


def capture_parts(path):
    """A capture's header and its stream split at the 0x00 delimiters."""
    with open(path, "rb") as f:
        data = f.read()
    hs = struct.unpack_from("<I", data, 16)[0]
    return data[:hs], data[hs:].split(b"\0")
