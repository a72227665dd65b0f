#!/usr/bin/env python3
"""Firmware noise: `bareperf record --uefi` (what `make run` uses) must not
pass OVMF's own output to the user's terminal: no escape sequence (OVMF
clears the screen and moves the cursor), no "BdsDxe: failed to load
Boot0001 ..." lines, while every line of the loader and the kernel still
shows. With -v -v the firmware's lines are shown (still without escape
sequences). Two OVMF boots, at once. Prints TAP.
"""
import concurrent.futures
import os
import subprocess
import sys
import io
import re
import tempfile

from e2e_common import ROOT, Tap, bpqemu

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TIMEOUT = 180
TAP = Tap()
check = TAP.check


def record(tmp, name, verbose):
    cmd = [os.path.join(BUILD, "bareperf"), "record", *(["-v"] * verbose), "--uefi",
           "--build", BUILD, "--timeout", str(TIMEOUT), "-o", os.path.join(tmp, name + ".bpc"),
           "--", "test_boot", "source=uefi"]
    p = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT + 30)
    return p.returncode, p.stderr.decode(errors="replace")


OVMF_SAMPLE = (b"\x1b[2J\x1b[01;01H\x1b[=3h\x1b[2J\x1b[01;01HBdsDxe: failed to load Boot0001 "
               b"\"UEFI QEMU DVD-ROM QM00005 \" from PciRoot(0x0): Not Found\r\n\x1b[0m")


def filter_checks():
    """tools/bpqemu.py's FirmwareFilter, the same rule for `bpqemu.py` runs."""
    out = io.BytesIO()
    f = bpqemu.FirmwareFilter(out)
    f.feed(OVMF_SAMPLE + b"bareperf-bo")
    f.feed(b"ot: exiting boot services\r\n\nbareperf: booted\x1b[2J\r\n")
    check(out.getvalue() == b"bareperf-boot: exiting boot services\n\nbareperf: booted\n" and
          not f.finish(), "bpqemu filter: firmware held back, ours shown whole, escapes dropped",
          repr(out.getvalue()))
    out = io.BytesIO()
    f = bpqemu.FirmwareFilter(out)
    f.feed(OVMF_SAMPLE + b"BdsDxe: No bootable option or device was found.\r\n")
    held = f.finish()
    check(out.getvalue() == b"" and len(held) == 2 and held[0].startswith(b"BdsDxe: failed") and
          b"\x1b" not in b"".join(held),
          "bpqemu filter: when our code never starts, the firmware's lines are kept to show",
          repr(held))
    out = io.BytesIO()
    f = bpqemu.FirmwareFilter(out, show_firmware=True)
    f.feed(OVMF_SAMPLE)
    check(out.getvalue().startswith(b"BdsDxe: failed") and b"\x1b" not in out.getvalue(),
          "bpqemu filter -v: firmware lines shown, without escapes", repr(out.getvalue()))


def ovmf_checks():
    """`bareperf record --uefi` (tools/util/qemu.h) boots the firmware files bpqemu.py boots."""
    with open(os.path.join(ROOT, "tools", "util", "qemu.h")) as f:
        c = dict(re.findall(r'^#define\s+QEMU_(OVMF_\w+)\s+"([^"]+)"', f.read(), re.M))
    check(c == {"OVMF_CODE": bpqemu.OVMF_CODE, "OVMF_VARS": bpqemu.OVMF_VARS},
          "record --uefi and bpqemu.py boot the same OVMF code and variable store",
          f"tools/util/qemu.h {c}, bpqemu.py {bpqemu.OVMF_CODE}, {bpqemu.OVMF_VARS}")


def main():
    ovmf_checks()
    filter_checks()
    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            quiet = pool.submit(record, tmp, "v", 1)
            loud = pool.submit(record, tmp, "vv", 2)
        for (rc, err), label, fw in ((quiet.result(), "-v", False), (loud.result(), "-v -v", True)):
            check(rc == 0, f"record {label}: exit status 0", f"status {rc}: {err[-400:]!r}")
            check("\x1b" not in err, f"record {label}: no escape sequence reaches the terminal",
                  repr(err[max(0, err.find("\x1b") - 40):err.find("\x1b") + 40]))
            check("\nbareperf-boot: exiting boot services\n" in err and
                  "\nbareperf: booted via UEFI" in err and "ok 1 - boot source is uefi" in err,
                  f"record {label}: the loader's and the kernel's lines are shown", err[-400:])
            shown = "BdsDxe" in err
            check(shown == fw, f"record {label}: firmware lines " + ("shown" if fw else "held back"),
                  err[:400])
    return TAP.done()


if __name__ == "__main__":
    sys.exit(main())
