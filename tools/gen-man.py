#!/usr/bin/env python3
"""Man pages from the tool's own --help text, so the two never drift.

    gen-man.py BAREPERF OUTDIR

writes OUTDIR/bareperf.1 (the commands, from `bareperf --help`) and
OUTDIR/bareperf-COMMAND.1 for each command (from `bareperf COMMAND --help`).
The help text has one layout (tools/*.c usage()): "usage:" lines, then
description lines indented two spaces, option lines "  -x, --long ARG  text"
whose text may continue on lines indented under it, and paragraphs after a
blank line. Each part becomes its man section: SYNOPSIS, DESCRIPTION,
OPTIONS, NOTES.
"""
import os
import re
import subprocess
import sys

OPTION = re.compile(r"^ {2,6}(-[A-Za-z0-9](?:[,|] ?-{1,2}[\w-]+)?|--?[\w][\w.-]*)"
                    r"((?:[ =[][^ ]+)*?)(?: {2,}(.*))?$")


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def run(bp, *args):
    p = subprocess.run([bp, *args], capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        sys.exit("gen-man: %s %s: status %d\n%s" % (bp, " ".join(args), p.returncode, p.stderr))
    return p.stdout


def commands(bp):
    """(name, summary) of each command, from the top-level help."""
    out, cur = [], None
    for line in run(bp, "--help").splitlines():
        m = re.match(r"^  ([a-z][\w-]*) +(\S.*)$", line)
        if m and not line.startswith("  bareperf"):
            cur = [m.group(1), m.group(2)]
            out.append(cur)
        elif cur and re.match(r"^ {13,15}\S", line):
            cur[1] += " " + line.strip()
        elif not line.strip():
            cur = None
    return out


def parse(text):
    synopsis, desc, opts, notes = [], [], [], []
    lines = text.rstrip("\n").splitlines()
    i = 0
    while i < len(lines) and (lines[i].startswith("usage:") or
                              (synopsis and re.match(r"^ {4,}(bareperf|\[)", lines[i]))):
        synopsis.append(re.sub(r"^usage: ", "", lines[i]).strip())
        i += 1
    para = desc
    for line in lines[i:]:
        if not line.strip():
            para = notes
            notes.append("")
            continue
        m = OPTION.match(line)
        if m and para is not notes:
            opts.append([m.group(1) + (m.group(2) or ""), (m.group(3) or "").strip()])
            continue
        indent = len(line) - len(line.lstrip())
        if opts and para is not notes and indent > 8 and opts[-1][0]:
            opts[-1][1] += " " + line.strip()
        elif opts and para is not notes and re.match(r"^ {2,6}\S.*? {3,}\S", line):
            left, right = re.split(r" {3,}", line.strip(), maxsplit=1)
            opts.append([left, right])               # "record options   passed to ..."
        elif opts and para is not notes:
            opts.append([None, line.strip()])      # a heading among the options
        else:
            para.append(line.strip())
    return synopsis, desc, opts, notes


def paragraphs(lines):
    out, cur = [], []
    for l in lines + [""]:
        if l:
            cur.append(l)
        elif cur:
            out.append(" ".join(cur))
            cur = []
    return out


def page(name, summary, text, version, see):
    synopsis, desc, opts, notes = parse(text)
    w = ['.TH "%s" 1 "" "%s" "bareperf manual"' % (name.upper(), version),
         ".SH NAME", "%s \\- %s" % (roff(name), roff(summary)),
         ".SH SYNOPSIS", ".nf"]
    w += [roff(s) for s in synopsis] + [".fi"]
    if desc:
        w += [".SH DESCRIPTION"]
        for p in paragraphs(desc):
            w += [roff(p), ".PP"]
        w.pop()
    if opts:
        w += [".SH OPTIONS"]
        for o, d in opts:
            if o is None:
                w += [".SS", roff(d)]
            else:
                w += [".TP", "\\fB%s\\fR" % roff(o), roff(d)]
    if [n for n in notes if n]:
        w += [".SH NOTES"]
        for p in paragraphs(notes):
            w += [roff(p), ".PP"]
        w.pop()
    w += [".SH SEE ALSO", ", ".join("\\fB%s\\fR(1)" % roff(s) for s in see)]
    return "\n".join(w) + "\n"


def main():
    bp, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    version = run(bp, "--version").split(" (")[0]
    cmds = commands(bp)
    if not cmds:
        sys.exit("gen-man: no commands in %s --help" % bp)
    names = ["bareperf-" + c for c, _ in cmds]
    top = run(bp, "--help")
    w = ['.TH "BAREPERF" 1 "" "%s" "bareperf manual"' % version, ".SH NAME",
         "bareperf \\- a bare-metal x86_64 profiler: record, report, stat, script, convert",
         ".SH SYNOPSIS", ".nf", "bareperf COMMAND [options]", ".fi", ".SH COMMANDS"]
    for c, s in cmds:
        w += [".TP", "\\fBbareperf %s\\fR" % roff(c), roff(s)]
    w += [".SH NOTES", roff(" ".join(l.strip() for l in top.split("commands:")[1]
                                     .split("\n\n", 2)[-1].splitlines() if l.strip())),
          ".SH SEE ALSO", ", ".join("\\fB%s\\fR(1)" % roff(n) for n in names) + ", \\fBperf\\fR(1)"]
    with open(os.path.join(outdir, "bareperf.1"), "w") as f:
        f.write("\n".join(w) + "\n")
    for c, s in cmds:
        name = "bareperf-" + c
        see = ["bareperf"] + [n for n in names if n != name]
        with open(os.path.join(outdir, name + ".1"), "w") as f:
            f.write(page(name, s, run(bp, c, "--help"), version, see))


main()
