"""The README's `make run` transcript against a real `make run`: every line
of the transcript block (the one that starts `$ make run`) must have the
shape of a line the run prints, numbers (and hex words: build-ids,
addresses) masked and spaces collapsed, so that a changed message names
the README line it made wrong. Lines of `...` (what the README cuts) are
not checked. The run writes to build/test/readme_run (OUT=), which is
shown as build/out, where a plain `make run` writes.

Usage: python3 test/e2e/readme_run.py [BUILD_DIR]   (from the repository root)
"""
import os
import re
import subprocess
import sys

from e2e_common import BUILD, ROOT, Tap, out_dir

T = Tap()
OUT = out_dir("readme_run", fresh=True, need=(os.path.join(BUILD, "kernel.elf"),))
NUMBER = re.compile(r"[0-9A-Fa-fx.+-]*[0-9][0-9A-Fa-fx.,+-]*")


def shape(line):
    """The line with every word holding a digit masked, spaces collapsed."""
    return " ".join(NUMBER.sub("#", line).split())


def transcript(path):
    """[(line number, text)] of the README's `$ make run` block."""
    lines, inside, out = open(path).read().splitlines(), False, []
    for i, text in enumerate(lines, 1):
        if text.startswith("$ make run"):
            inside = True
            continue
        if inside and text.startswith("```"):
            break
        if inside and text.strip() and not re.fullmatch(r"\s*\[?\.\.\..*", text):
            out.append((i, text))
    return out


want = transcript(os.path.join(ROOT, "README.md"))
T.check(len(want) > 20, f"README.md has a `$ make run` transcript ({len(want)} lines)")
p = subprocess.run(["make", "-s", "--no-print-directory", "run", f"OUT={OUT}"], cwd=ROOT,
                   capture_output=True, timeout=570)
got = (p.stdout + p.stderr).decode(errors="replace").replace(OUT, "build/out")
T.check(p.returncode == 0, f"make run OUT={OUT}: exit status {p.returncode}", got)
shapes = {shape(line) for line in got.splitlines()}
wrong = [f"README.md:{i}: {text.strip()}" for i, text in want if shape(text) not in shapes]
T.check(not wrong, f"every transcript line has the shape of a line make run prints "
        f"({len(want) - len(wrong)} of {len(want)})", "\n".join(wrong))
sys.exit(T.done())
