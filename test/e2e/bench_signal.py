#!/usr/bin/env python3
"""A stop signal to a command that boots QEMU (bench, record --qemu, stat
--qemu: tools/util/qemu.c with tools/util/sigclean.c, or record's own
handler) ends its QEMU and removes its private directory: each command
is started, sent SIGINT, SIGTERM or SIGHUP once its QEMU runs, and must
end by that signal (or exit 128 + it) within STOP_S of wall-clock time,
with no QEMU of its own left and no directory behind. The directory is
read from QEMU's command line: the ESP copy (--uefi) or the virtio
socket (--virtio). Prints TAP."""
import glob
import os
import signal
import subprocess
import sys
import time

from e2e_common import BP, BUILD, Tap

START_S = 120.0	# QEMU started (a compile or an assembly first), loaded host
RUN_S = 2.0	# then the boot runs this long before the signal
STOP_S = 15.0	# the command's end after it: QEMU has 2 s before SIGKILL


def children(pid):
    """The pids whose parent is pid."""
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.split("/")[2]))
    return out


def qemu_of(pid):
    """(QEMU's pid, its private directory or None) once pid started it, else None."""
    for c in children(pid):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if not argv[0].startswith("qemu-system"):
            continue
        d = None
        for a in argv:
            at = a.find("/tmp/bareperf-rec-")
            if at >= 0:
                d = "/".join(a[at:].split("/")[:3])
        return c, d
    return None


def alive(pid):
    """pid runs (a zombie is dead, and no longer ours once reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def interrupted(t, name, args, sig, want_dir):
    p = subprocess.Popen([BP, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in
                                             (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])
    t0 = time.monotonic()
    q = None
    while time.monotonic() - t0 < START_S and p.poll() is None:
        q = qemu_of(p.pid)
        if q:
            break
        time.sleep(0.05)
    if not q:
        p.kill()
        err = p.communicate()[1]
        t.check(False, f"{name}: QEMU started", err)
        return
    time.sleep(RUN_S)
    p.send_signal(sig)
    try:
        err = p.communicate(timeout=STOP_S)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        err = p.communicate()[1]
        t.check(False, f"{name}: ended within {STOP_S:.0f} s of {sig.name}", err)
    qpid, qdir = q
    t.check(p.returncode in (-sig, 128 + sig),
            f"{name}: {sig.name} ends it by the signal (status {p.returncode})", err)
    t.check(not alive(qpid), f"{name}: its QEMU (pid {qpid}) is gone", err)
    if qpid and alive(qpid):
        os.kill(qpid, signal.SIGKILL)
    if want_dir:
        t.check(qdir is not None and not os.path.exists(qdir),
                f"{name}: its directory {qdir} is removed", err)


def main():
    t = Tap()
    k = os.path.join(BUILD, "kernel.elf")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "bench_code_batch.txt")) as f:
        batch_src = f.read()
    batch = f"/tmp/bareperf-sigtest-{os.getpid()}.txt"
    # Every command must still be running when the signal comes, RUN_S
    # after its QEMU started, on a quiet host too: a batch of a thousand
    # snippets, runs of many repetitions.
    with open(batch, "w") as f:
        f.write(batch_src * 60)
    try:
        interrupted(t, "bench --uefi", ["bench", "--uefi", "--build", BUILD, "--kernel", k,
                                        "-asm", "add rax, rbx"], signal.SIGINT, True)
        interrupted(t, "bench --batch", ["bench", "--icount", "--kernel", k, "--batch", batch],
                    signal.SIGTERM, False)
        interrupted(t, "bench --batch", ["bench", "--kernel", k, "--batch", batch],
                    signal.SIGHUP, False)
        out = f"/tmp/bareperf-sigtest-{os.getpid()}.bpc"
        # bench_memlat at its most repetitions and warm-up runs: seconds
        # of every working set, far past RUN_S.
        long_run = ["--", "bench_memlat", "reps=1001", "warmup=1000"]
        interrupted(t, "record --qemu --virtio", ["record", "--qemu", "--virtio", "--kernel", k,
                                                  "-o", out, *long_run],
                    signal.SIGINT, True)
        interrupted(t, "stat --qemu --virtio", ["stat", "-r", "2", "--qemu", "--virtio",
                                                "--kernel", k, *long_run],
                    signal.SIGINT, True)
    finally:
        for f in glob.glob(f"/tmp/bareperf-sigtest-{os.getpid()}*"):
            os.remove(f)
    return t.done(summary=True)


if __name__ == "__main__":
    sys.exit(main())
