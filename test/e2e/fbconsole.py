#!/usr/bin/env python3
"""The screen console, read back from the screen: boot kernel.elf through
OVMF with a display device, let the kernel halt (no isa-debug-exit, so the
picture stays), take QEMU's screendump over QMP, and decode every 8x16
cell against the font's glyphs (tools/psf2c.py reads the same font the
build converts). Checks, as TAP:

  - every cell is a glyph or blank, in the two colours the console uses
    (a blank, shifted or garbled screen fails);
  - the screen's text is exactly the last lines the kernel wrote to the
    serial console (long lines wrapped at the screen's width);
  - what a person must see is there: the fault dump with its backtrace,
    in red; the exit; the screen-console line with the resolution.

Boots: a #PF fault dump at OVMF's default mode, and app=test_fb at
1920x1080 (-device VGA,xres=1920,yres=1080), whose timings are printed.
"""
import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

from e2e_common import ROOT, Tap, bpqemu
import psf2c  # noqa: E402  (tools/, on the path e2e_common sets)

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
FONT = os.environ.get("FONT_PSF", "/usr/share/consolefonts/Lat15-Terminus16.psf.gz")
FG, ERR, BG = (0xc0, 0xc0, 0xc0), (0xff, 0x50, 0x30), (0, 0, 0)	# kernel/dev/fb.h
TIMEOUT = 240		# seconds for one boot to halt: 120 was passed at load 34

TAP = Tap()
check = TAP.check


def qmp(sock_path, commands, deadline):
    s = socket.socket(socket.AF_UNIX)
    while True:
        try:
            s.connect(sock_path)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    f = s.makefile("rw")
    json.loads(f.readline())			# the greeting
    out = []
    for cmd in [{"execute": "qmp_capabilities"}] + commands:
        f.write(json.dumps(cmd) + "\n")
        f.flush()
        while True:
            r = json.loads(f.readline())
            if "return" in r or "error" in r:
                out.append(r)
                break
    s.close()
    return out


def boot(name, cfg, extra):
    """Boot, wait for the halt, screendump. Returns (serial text, ppm path) or raises."""
    work = os.path.join(BUILD, "test", "fb-" + name)
    shutil.rmtree(work, ignore_errors=True)
    esp = os.path.join(work, "esp")
    os.makedirs(os.path.join(esp, "EFI", "BOOT"))
    shutil.copy(os.path.join(BUILD, "esp", "EFI", "BOOT", "BOOTX64.EFI"),
                os.path.join(esp, "EFI", "BOOT", "BOOTX64.EFI"))
    shutil.copy(os.path.join(BUILD, "kernel.elf"), os.path.join(esp, "kernel.elf"))
    with open(os.path.join(esp, "bareperf.cfg"), "w") as f:
        f.write(cfg + "\n")
    sock, ppm = os.path.join(work, "qmp.sock"), os.path.join(work, "screen.ppm")
    cmd = bpqemu.qemu_command(BUILD, uefi=True, esp=esp, vars_file=os.path.join(work, "vars.fd"),
                              extra=["-qmp", f"unix:{sock},server=on,wait=off"] + extra)
    # Without the exit device the kernel halts and the picture stays.
    i = cmd.index("isa-debug-exit,iobase=0xf4,iosize=0x04")
    del cmd[i - 1:i + 1]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    os.set_blocking(p.stdout.fileno(), False)
    out, t0 = b"", time.monotonic()
    try:
        while b"bareperf: halted" not in out:
            if p.poll() is not None or time.monotonic() - t0 > TIMEOUT:
                raise RuntimeError(f"{name}: no 'bareperf: halted' after "
                                   f"{time.monotonic() - t0:.0f} s (QEMU status {p.poll()})")
            out += p.stdout.read() or b""
            time.sleep(0.05)
        time.sleep(0.2)
        out += p.stdout.read() or b""
        r = qmp(sock, [{"execute": "screendump", "arguments": {"filename": ppm, "format": "ppm"}}],
                time.monotonic() + 30)
        if "error" in r[-1]:
            raise RuntimeError(f"{name}: screendump: {r[-1]['error']}")
    finally:
        p.kill()
        p.wait()
    with open(os.path.join(work, "serial.log"), "wb") as f:
        f.write(out)
    return out.decode(errors="replace").replace("\r", ""), ppm


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    m = re.match(rb"P6\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
    if not m or m.group(3) != b"255":
        raise ValueError(f"{path}: not an 8-bit binary PPM")
    w, h = int(m.group(1)), int(m.group(2))
    return w, h, data[m.end():m.end() + w * h * 3]


def decode(w, h, pix, glyphs):
    """Rows of text, the set of colours per row, and the cells no glyph
    matches. glyphs is keyed by cell_key() of each glyph's rows."""
    cols, rows = w // 8, h // 16
    lit = bytes([0] + [1] * 255)			# any non-zero channel lights a pixel
    rows_text, rows_colors, bad = [], [], []
    for r in range(rows):
        masks, colors = [], set()
        for y in range(16):
            line = pix[(r * 16 + y) * w * 3:(r * 16 + y + 1) * w * 3]
            red, green, blue = line[0::3], line[1::3], line[2::3]
            masks.append(bytes(a | b | c for a, b, c in zip(red, green, blue)).translate(lit))
            colors |= set(zip(red, green, blue))
        colors.discard(BG)
        chars = []
        for c in range(cols):
            key = tuple(int.from_bytes(m[c * 8:c * 8 + 8], "big") for m in masks)
            ch = glyphs.get(key)
            if ch is None:
                bad.append((r, c))
                ch = "\0"
            chars.append(ch)
        rows_text.append("".join(chars).rstrip())
        rows_colors.append(colors)
    return rows_text, rows_colors, bad, cols


def cell_key(rows):
    """A glyph's 16 row bytes as decode() sees a cell: 8 bytes of 0/1 per row."""
    return tuple(int.from_bytes(bytes((b >> (7 - x)) & 1 for x in range(8)), "big") for b in rows)


def pattern_line(i, cols):
    """test/guest/test_fb.c's pattern_line, cut to cols characters."""
    head = f"{i:04d} "
    n = 0x7e - 0x20 + 1
    return (head + "".join(chr(0x20 + (i + c) % n) for c in range(len(head), cols)))[:cols].rstrip()


def screen_matches_serial(rows_text, serial, cols, first=0):
    """Is the screen, from row first down to its last text row, the serial
    console's last lines?"""
    last = max((i for i, t in enumerate(rows_text) if t), default=-1)
    shown = rows_text[first:last + 1]
    wrapped = []
    for line in serial.rstrip("\n").split("\n"):
        line = line.expandtabs(8)
        wrapped += [line[i:i + cols].rstrip() for i in range(0, max(len(line), 1), cols)]
    tail = wrapped[-len(shown):] if shown else []
    for i, (a, b) in enumerate(zip(shown, tail)):
        if a != b:
            return False, f"screen row {i}: {a!r} but serial says {b!r}"
    return bool(shown), f"{len(shown)} rows"


def screen_checks(name, serial, ppm, glyphs, expect_res, must_show, red_line, from_rx=None):
    w, h, pix = read_ppm(ppm)
    check((w, h) == expect_res, f"{name}: screendump is {w}x{h}", f"expected {expect_res}")
    rows_text, rows_colors, bad, cols = decode(w, h, pix, glyphs)
    nonblank = sum(1 for t in rows_text if t)
    check(nonblank >= 8, f"{name}: {nonblank} rows of text on the screen")
    check(not bad, f"{name}: every cell is a glyph of the font or blank",
          f"{len(bad)} cells match no glyph, first at row/col {bad[:3]}")
    colors = set().union(*rows_colors)
    check(colors <= {FG, ERR}, f"{name}: text only in the console's colours",
          f"saw {sorted(colors)[:4]}")
    first = next((i for i, t in enumerate(rows_text) if from_rx and re.search(from_rx, t)), 0)
    ok, why = screen_matches_serial(rows_text, serial, cols, first)
    check(ok, f"{name}: the screen holds the serial console's last lines ({why})", why)
    text = "\n".join(rows_text)
    for rx in must_show:
        check(re.search(rx, text, re.M) is not None, f"{name}: the screen shows /{rx}/")
    if red_line:
        reds = [i for i, t in enumerate(rows_text) if re.search(red_line, t)]
        check(bool(reds) and all(rows_colors[i] == {ERR} for i in reds),
              f"{name}: /{red_line}/ is drawn in red (R, G, B = {ERR})",
              f"rows {reds}, colours {[rows_colors[i] for i in reds]}")
        plain = [i for i, t in enumerate(rows_text) if t.startswith("Call trace:")]
        check(bool(plain) and all(rows_colors[i] == {FG} for i in plain),
              f"{name}: ordinary lines are grey")
    return rows_text


def main():
    glyphs = {cell_key(v): chr(k) for k, v in psf2c.load_ascii(FONT).items()}
    # Both boots at once: each is mostly OVMF's few seconds.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        fault = pool.submit(boot, "fault", "app=test_fault -- null", [])
        hd = pool.submit(boot, "1080p", "app=test_fb",
                         ["-vga", "none", "-device", "VGA,xres=1920,yres=1080"])
    try:
        serial, ppm = fault.result()
    except Exception as e:		# noqa: BLE001 - reported as a failed check
        check(False, "fault: boot and screendump", str(e))
    else:
        screen_checks("fault", serial, ppm, glyphs, (1280, 800),
                      [r"^bareperf: FATAL: CPU exception #PF page fault \(vector 14\) on cpu 0$",
                       r"^Call trace:$", r"\] fault_null\+0x[0-9a-f]+/0x[0-9a-f]+$",
                       r"\] test_fault_main\+0x", r"^bareperf: halted \(exit status 3\)"],
                      r"^bareperf: FATAL")
        check(re.search(r"^fb: 1280x800 BGR, 1280 pixels per line, at 0x[0-9a-f]+: screen "
                        r"console 160x50$", serial, re.M) is not None,
              "fault: the boot log names the screen console")
        check(re.search(r"^fb: framebuffer mapped write-combining \(4 MiB of BAR0 of the display "
                        r"controller\)$", serial, re.M) is not None,
              "fault: the framebuffer is mapped write-combining")
    try:
        serial, ppm = hd.result()
    except Exception as e:		# noqa: BLE001
        check(False, "1080p: boot and screendump", str(e))
    else:
        rows = screen_checks("1080p", serial, ppm, glyphs, (1920, 1080),
                             [r"^1000 ", r"^1007 ", r"^fb: 240x67 cells: a screenful of new "
                              r"text in \d+ us", r"^# 1 passed, 0 failed",
                              r"^bareperf: halted \(exit status 0\)"], None,
                             from_rx=r"^fb: 240x67 cells")
        # Above that, the lines test_fb drew straight onto the screen
        # (scrolled by a quarter screen at a time): its pattern, in order.
        drawn = [t for t in rows if re.match(r"^00\d\d ", t)]
        check(len(drawn) >= 16 and all(t == pattern_line(int(t[:4]), 239) for t in drawn) and
              [int(t[:4]) for t in drawn] == list(range(int(drawn[0][:4]), int(drawn[0][:4]) + len(drawn))),
              f"1080p: {len(drawn)} pattern rows drawn directly, consecutive and exact")
        m = re.search(r"^fb: 240x67 cells: .*$", serial, re.M)
        if m:
            print("# " + m.group(0), flush=True)
    return TAP.done()


if __name__ == "__main__":
    sys.exit(main())
