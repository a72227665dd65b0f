#!/usr/bin/env python3
"""check_layers.py — the dependency direction, checked on the source and on
the objects.

    apps/ -> profile/ -> pmu/ -> ringbuf/ -> kernel/   never back (each
              may reach every layer below it)
    kernel/, ringbuf/, pmu/, profile/, apps/ -> wire/   the codec, below them all
    wire/ -> kernel/lib/ and the ring's SAMPLE parser (ringbuf/ringbuf.*)
    boot/ -> include/uapi/ only
    tools/ -> include/uapi/ and the few pure modules shared with the kernel
              (SHARED below), never the rest of kernel-side code

Two views of the same rule:
  includes  every #include "..." / <uapi/...> / %include in boot/ kernel/
            pmu/ profile/ ringbuf/ wire/ apps/ tools/ include/;
  calls     every undefined symbol of every kernel object (build/k/) and of
            every build/bareperf object (build/tool/), resolved to the
            object that defines it. A call or a data reference is an edge.

The integer types: code shared with the host (uapi, ringbuf/, kernel/lib,
wire/) writes <stdint.h>'s uint64_t, never the kernel's u64.

A last check bounds the knots: the strongly connected components of the
kernel's object graph. Small cycles inside one layer are legitimate
(kernel/isr.asm's stubs call trap.c's dispatch, whose IDT points at the
stubs) and are listed; a cycle that crosses layers, or one
over more than MAX_KNOT objects, is the "big loop" this check exists to
keep away, and fails.

Usage: check_layers.py [BUILD_DIR]   (after make all; default build/).
Prints TAP, one line per check, each violation under it; exits 1 on any.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Layer of a path: its top folder, uapi apart.
def layer(path):
    if path.startswith("include/uapi/") or path.startswith("uapi/"):
        return "uapi"
    top = path.split("/", 1)[0]
    return top

# Which layers each layer may reach (itself and uapi always).
ALLOWED = {
    "kernel":  {"wire"},
    "ringbuf": {"kernel", "wire"},
    "pmu":     {"ringbuf", "kernel", "wire"},
    "profile": {"pmu", "ringbuf", "kernel", "wire"},
    "apps":    {"profile", "pmu", "ringbuf", "kernel", "wire"},
    "boot":    set(),
    "tools":   set(),
    "uapi":    set(),
}

# The codec sits under the kernel (kernel/stream.c frames, ringbuf/drain.c
# encodes) and over the two pure modules it is made of: string functions
# and the ring's SAMPLE parser. A path prefix each.
WIRE_BASE = (
    "kernel/lib/",
    "ringbuf/ringbuf",
)

# Pure modules that build for both sides (no hardware access, no kernel
# state): tools may link and include them. A path prefix each.
SHARED = (
    "ringbuf/",             # the ring code
    "wire/",                # the codec
    "kernel/lib/",          # string and printf
    "pmu/events",           # the generic event table
    "pmu/pmu.h",            # its declarations
    "apps/bench_stats",     # the harness's statistics
    "apps/bench_code.h",    # the snippet register convention
)

SRC_DIRS = ("boot", "kernel", "pmu", "profile", "ringbuf", "wire", "apps", "tools", "include")
EXTS = (".c", ".h", ".asm", ".S")


def allowed(src, dst):
    a, b = layer(src), layer(dst)
    if a == b or b == "uapi":
        return True
    if a == "tools":
        return dst.startswith(SHARED)
    if a == "wire":
        return dst.startswith(WIRE_BASE)
    if a not in ALLOWED:
        return True
    return b in ALLOWED[a]


def includes():
    bad = []
    for d in SRC_DIRS:
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if not f.endswith(EXTS):
                    continue
                path = os.path.relpath(os.path.join(base, f), ROOT)
                with open(os.path.join(ROOT, path), errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        s = line.strip()
                        if s.startswith("#include"):
                            rest = s[len("#include"):].strip()
                        elif s.startswith("%include"):
                            rest = s[len("%include"):].strip()
                        else:
                            continue
                        if rest[:1] == '"':
                            target = rest[1:].split('"', 1)[0]
                        elif rest.startswith("<uapi/"):
                            target = rest[1:].split(">", 1)[0]
                        else:
                            continue        # system headers
                        if "/" not in target:
                            continue        # same-folder include
                        if not allowed(path, target):
                            bad.append("%s:%d includes %s" % (path, n, target))
    return bad


# Code shared with the host compiles without kernel/x86.h: <stdint.h> types.
# ringbuf/drain.c is the kernel's (it writes to the stream) and is not.
SHARED_CODE = ("include/uapi", "ringbuf", "kernel/lib", "wire")
KERNEL_ONLY = ("ringbuf/drain.c", "ringbuf/drain.h")
KERNEL_INT = re.compile(r"\b(u8|u16|u32|u64|s32|s64)\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"", re.S)


def int_types():
    bad = []
    for base in SHARED_CODE:
        paths = []
        if os.path.isdir(os.path.join(ROOT, base)):
            for b, _, files in os.walk(os.path.join(ROOT, base)):
                paths += [os.path.join(b, f) for f in files if f.endswith((".c", ".h"))]
        else:
            paths = [os.path.join(ROOT, base + e) for e in (".c", ".h")
                     if os.path.exists(os.path.join(ROOT, base + e))]
        for path in sorted(paths):
            if os.path.relpath(path, ROOT) in KERNEL_ONLY:
                continue
            with open(path, errors="replace") as fh:
                text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), fh.read())
            for n, line in enumerate(text.splitlines(), 1):
                m = KERNEL_INT.search(line)
                if m:
                    bad.append("%s:%d uses %s (shared code: uint64_t etc.)"
                               % (os.path.relpath(path, ROOT), n, m.group(1)))
    return bad


def nm(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    defined, undef = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w"):
            undef.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TtDdBbRrVWGgSs":
            if parts[1].isupper() or parts[1] in "VW":
                defined.add(parts[2])
    return defined, undef


def objects(top):
    objs = []
    for base, _, files in os.walk(top):
        for f in files:
            if f.endswith(".o"):
                objs.append(os.path.join(base, f))
    return objs


def graph(build, sub):
    """{src path: {dst path}} from the objects under build/sub/."""
    top = os.path.join(build, sub)
    if not os.path.isdir(top):
        return None
    owner, uses = {}, {}
    for o in objects(top):
        src = os.path.relpath(o, top)[:-2]
        # Tests may reach anything; generated objects (the font, ksyms)
        # are data of whoever uses them; an object whose source is gone is
        # stale.
        if src.startswith(("test/", "build/")) or not any(
                os.path.exists(os.path.join(ROOT, src + e)) for e in (".c", ".asm", ".S")):
            continue
        d, u = nm(o)
        for s in d:
            owner.setdefault(s, src)
        uses[src] = u
    g = {}
    for src, u in uses.items():
        g[src] = {owner[s] for s in u if s in owner and owner[s] != src}
    return g


def calls(g):
    bad = []
    for src in sorted(g):
        for dst in sorted(g[src]):
            if not allowed(src, dst):
                bad.append("%s reaches %s" % (src, dst))
    return bad


def sccs(g):
    """Tarjan's strongly connected components, iterative."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in g:
        if root in index:
            continue
        work = [(root, iter(sorted(g.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


# The largest cycle allowed inside one layer: a few objects that call each
# other for a reason (the interrupt stubs and the C dispatch they enter).
# Anything larger is a knot to untie.
MAX_KNOT = 6


def main():
    if len(sys.argv) > 2:
        print("usage: check_layers.py [BUILD_DIR]", file=sys.stderr)
        return 2
    build = sys.argv[1] if len(sys.argv) == 2 else os.path.join(ROOT, "build")
    failed = 0
    number = 0

    def verdict(name, problems, detail_limit=40):
        nonlocal failed, number
        number += 1
        if problems:
            failed += 1
            print("not ok %d - %s: %d violations" % (number, name, len(problems)))
            for p in problems[:detail_limit]:
                print("#   " + p)
            if len(problems) > detail_limit:
                print("#   ... %d more" % (len(problems) - detail_limit))
        else:
            print("ok %d - %s" % (number, name))

    verdict("layers_includes", includes())
    verdict("shared_code_int_types", int_types())

    kg = graph(build, "k")
    tg = graph(build, "tool")
    if kg is None or tg is None:
        verdict("layers_calls", ["no objects under %s/k or %s/tool (run make all first)"
                                 % (build, build)])
        return 1
    verdict("layers_calls_kernel", calls(kg))
    verdict("layers_calls_tools", calls(tg))

    knots, small = [], []
    for comp in sccs(kg):
        layers = sorted({layer(p) for p in comp})
        line = "cycle over %d objects in %s: %s" % (len(comp), ", ".join(layers), " ".join(comp))
        (knots if len(layers) > 1 or len(comp) > MAX_KNOT else small).append(line)
    verdict("layers_no_big_cycle", knots)
    for line in small:
        print("#   (allowed: %s)" % line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
