#!/usr/bin/env python3
"""virtio_mb_per_s for `make bench`: boot test_virtio in its bench mode
under TCG (PVH, q35, virtio-serial-pci with a virtserialport on a file
chardev, QEMU's default ioeventfd=on), three times; print the median of the
guest's "BENCH virtio_mb_per_s X MB/s" lines, after checking that the host
file got every byte (BENCH_QUICK=1 in the environment: one run). Exit status 1, with the guest's output, on any failure.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import bpqemu  # noqa: E402
import guest_tests  # noqa: E402

BENCH_BYTES = 16 << 20          # test/guest/test_virtio.c
RUNS = 3
LINE = re.compile(r"^BENCH virtio_mb_per_s ([0-9.]+) MB/s$", re.M)


def one(build, out):
    if os.path.lexists(out):
        os.remove(out)
    cmd = bpqemu.qemu_command(build, cmdline="app=test_virtio -- bench",
                              extra=guest_tests._virtio_args(f"file,id=vc0,path={out}"))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           stdin=subprocess.DEVNULL, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "timed out after 120 s"
    m = LINE.search(p.stdout)
    size = os.path.getsize(out) if os.path.exists(out) else -1
    if os.path.exists(out):
        os.remove(out)
    if bpqemu.kernel_status(p.returncode) != 0 or not m:
        return None, p.stdout[-3000:] + p.stderr[-1000:]
    if size != BENCH_BYTES:
        return None, f"the host file has {size} bytes, expected {BENCH_BYTES}"
    return float(m.group(1)), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    os.makedirs(os.path.join(a.build, "bench"), exist_ok=True)
    out = os.path.join(a.build, "bench", "virtio-bench.out")
    rates = []
    runs = 1 if os.environ.get("BENCH_QUICK") == "1" else RUNS
    for _ in range(runs):
        rate, err = one(a.build, out)
        if rate is None:
            print(f"bench_virtio: failed: {err}", file=sys.stderr)
            return 1
        rates.append(rate)
    print(f"BENCH virtio_mb_per_s {statistics.median(rates):.1f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
