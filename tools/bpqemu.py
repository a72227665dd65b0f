#!/usr/bin/env python3
"""Boot the bareperf kernel in QEMU.

Used by `make run` and by the test runner (test/runner.py). Two boot paths:
  UEFI: OVMF firmware -> build/esp (BOOTX64.EFI loads kernel.elf); the
        command line goes into the ESP's bareperf.cfg.
  PVH:  QEMU -kernel build/kernel.elf -append CMDLINE (~0.1 s to long mode).

The kernel leaves through isa-debug-exit: QEMU's status is (code << 1) | 1,
so this script maps it back to the kernel's code (0 ok, 1 fail, 2 usage,
3 panic). A QEMU status of 0 means the guest reset or powered off instead.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
# qboot (in Debian's qemu-system-data) starts a PVH kernel in ~0.1 s and,
# unlike SeaBIOS, prints nothing of its own on the serial line.
QBOOT = "/usr/share/qemu/qboot.rom"
EXIT_NAMES = {0: "ok", 1: "failure reported", 2: "bad usage", 3: "panic"}


def kernel_status(qemu_rc):
    """The kernel's exit code, or None if it did not exit through isa-debug-exit."""
    if qemu_rc is not None and qemu_rc > 0 and qemu_rc & 1:
        return qemu_rc >> 1
    return None


def need(path, hint):
    if not os.path.exists(path):
        sys.exit(f"bpqemu: {path} is missing: {hint}")


def qemu_command(build="build", uefi=False, kvm=False, smp=1, mem=256,
                 cmdline="", esp=None, vars_file=None, icount=False, extra=(),
                 serial="stdio", disk=None, ovmf_code=OVMF_CODE, ovmf_vars=OVMF_VARS):
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        sys.exit("bpqemu: qemu-system-x86_64 not found: apt-get install qemu-system-x86")
    cmd = [qemu, "-machine", "q35", "-m", str(mem), "-smp", str(smp),
           "-nographic", "-no-reboot", "-display", "none", "-monitor", "none",
           "-serial", serial, "-nic", "none",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if kvm:
        cmd += ["-enable-kvm", "-cpu", "host"]
    if icount:
        # One TSC tick per retired instruction, timers on that clock: runs
        # are deterministic (QEMU docs, "-icount").
        cmd += ["-icount", "shift=0,sleep=off"]
    if uefi:
        need(ovmf_code, "apt-get install ovmf")
        esp = esp or os.path.join(build, "esp")
        if not disk:
            need(os.path.join(esp, "EFI/BOOT/BOOTX64.EFI"), "run 'make esp' first")
        vars_file = vars_file or os.path.join(build, "ovmf-vars.fd")
        shutil.copyfile(ovmf_vars, vars_file)
        cmd += ["-drive", f"if=pflash,format=raw,readonly=on,file={ovmf_code}",
                "-drive", f"if=pflash,format=raw,file={vars_file}"]
        if disk:
            # A disk image on a USB stick, as a user boots build/bareperf.img.
            cmd += ["-device", "qemu-xhci", "-drive", f"if=none,id=stick,format=raw,file={disk}",
                    "-device", "usb-storage,drive=stick"]
        else:
            cmd += ["-drive", f"format=raw,file=fat:rw:{esp}"]
    else:
        kernel = os.path.join(build, "kernel.elf")
        need(kernel, "run 'make' first")
        if os.path.exists(QBOOT):
            cmd += ["-bios", QBOOT]
        cmd += ["-kernel", kernel, "-append", cmdline]
    return cmd + list(extra)


# ECMA-48 CSI sequences (OVMF clears the screen and moves the cursor) and
# other control characters but newline and tab.
_NOISE = re.compile(rb"\x1b\[[0-9;=?]*[@-~]|\x1b[^\[]|[\x00-\x08\x0b-\x1f\x7f]")


class FirmwareFilter:
    """Console text for the user's terminal: escape sequences dropped, and
    the firmware's own lines (before the first "bareperf..." line, the
    loader's or the kernel's) held back unless show_firmware; if our code
    never starts, they are the clue, and held() returns them."""

    def __init__(self, out, show_firmware=False):
        self.out, self.show, self.ours, self.partial, self.fw = out, show_firmware, False, b"", []

    def feed(self, data):
        lines = (self.partial + _NOISE.sub(b"", data)).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, line):
        if not self.ours and line.startswith(b"bareperf"):
            self.ours = True
        if self.ours or self.show:
            self.out.write(line + b"\n")
            self.out.flush()
        elif line.strip():
            self.fw.append(line)

    def finish(self):
        if self.partial:
            self._line(self.partial)
            self.partial = b""
        return [] if self.ours else self.fw


def write_cfg(esp, cmdline):
    """The UEFI path takes its command line from \\bareperf.cfg on the ESP."""
    with open(os.path.join(esp, "bareperf.cfg"), "w") as f:
        f.write("# written by tools/bpqemu.py\n" + cmdline + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--uefi", action="store_true", help="boot through OVMF (default: PVH)")
    ap.add_argument("--kvm", action="store_true", help="-enable-kvm -cpu host (real Linux hosts)")
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--mem", type=int, default=256, help="MiB")
    ap.add_argument("--icount", action="store_true")
    ap.add_argument("--timeout", type=float, default=0, help="seconds, 0 = none")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also show the firmware's own output (otherwise shown only if "
                         "the loader never starts)")
    ap.add_argument("cmdline", nargs=argparse.REMAINDER, help="kernel command line words")
    a = ap.parse_args()

    cmdline = " ".join(a.cmdline)
    if a.uefi:
        write_cfg(os.path.join(a.build, "esp"), cmdline)
    cmd = qemu_command(a.build, uefi=a.uefi, kvm=a.kvm, smp=a.smp, mem=a.mem,
                       cmdline=cmdline, icount=a.icount)
    print("bpqemu: " + " ".join(cmd), file=sys.stderr)
    t0 = time.monotonic()
    filt = FirmwareFilter(sys.stdout.buffer, a.verbose)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    timed_out = False
    os.set_blocking(p.stdout.fileno(), False)
    while True:
        data = p.stdout.read()
        if data:
            filt.feed(data)
        if p.poll() is not None:
            filt.feed(p.stdout.read() or b"")
            break
        if a.timeout and time.monotonic() - t0 > a.timeout:
            p.kill()
            p.wait()
            timed_out = True
            break
        time.sleep(0.02)
    held = filt.finish()
    if held:
        print("bpqemu: the loader never started; the firmware said:", file=sys.stderr)
        sys.stderr.write("".join(l.decode(errors="replace") + "\n" for l in held))
    if timed_out:
        print(f"bpqemu: timed out after {a.timeout:.0f} s", file=sys.stderr)
        return 124
    rc = p.returncode
    code = kernel_status(rc)
    took = time.monotonic() - t0
    if code is None:
        print(f"bpqemu: QEMU ended with status {rc} without a kernel exit code "
              f"({took:.1f} s)", file=sys.stderr)
        return 125
    print(f"bpqemu: kernel exit code {code} ({EXIT_NAMES.get(code, '?')}), "
          f"{took:.1f} s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
