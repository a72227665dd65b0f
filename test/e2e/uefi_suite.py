#!/usr/bin/env python3
"""The tests that boot through OVMF from the host side, run at once (each
is mostly firmware time): fbconsole.py (the screen console, read back from
QEMU's screendump), fwnoise.py (firmware output kept off the terminal),
bootimage.py (the disk image as a USB stick, Secure Boot). Their TAP lines
are passed on, each name prefixed with its script; the status is 1 if any
failed.
"""
import concurrent.futures
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = ["fbconsole.py", "fwnoise.py", "bootimage.py"]
TIMEOUT = 600


def run(script):
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, script)], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or ""), f"timed out after {TIMEOUT} s"


def main():
    with concurrent.futures.ThreadPoolExecutor(len(SCRIPTS)) as pool:
        results = list(pool.map(run, SCRIPTS))
    n, bad = 0, 0
    for script, (rc, out, err) in zip(SCRIPTS, results):
        name = script[:-3]
        checks = 0
        for line in out.splitlines():
            m = re.match(r"^(not ok|ok) \d+ - (.*)$", line)
            if m:
                n += 1
                checks += 1
                bad += m.group(1) == "not ok"
                print(f"{m.group(1)} {n} - {name}: {m.group(2)}", flush=True)
            elif line.startswith("#"):
                print(line, flush=True)
        if rc != 0 or not checks:
            n += 1
            bad += 1
            print(f"not ok {n} - {name}: exited with status {rc} ({checks} checks)")
            sys.stdout.write("".join(f"# {l}\n" for l in (out + err).splitlines()[-30:]))
    print(f"1..{n}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
