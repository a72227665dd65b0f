#!/usr/bin/env python3
"""The SDK's header (include/bareperf.h) and the kernel's export table
(SDK_EXPORT in apps/sdk.c) name the same functions, and the limits the
header promises are the ones the kernel keeps (apps/sdk.h). Prints TAP."""
import re
import sys


def header_functions(text):
    """Functions the header declares (not the inline ones it defines)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"__attribute__\(\(.*?\)\)\)?", "", text)
    names = set()
    for decl in re.findall(r"^[a-z][^;{}#]*?\b(\w+)\s*\([^;{]*\)[^;{]*;", text, flags=re.M):
        names.add(decl)
    inline = set(re.findall(r"static inline [\w\s\*]*?\b(\w+)\s*\(", text))
    return names - inline


def main():
    hdr = open("include/bareperf.h").read()
    sdk_c = open("apps/sdk.c").read()
    sdk_h = open("apps/sdk.h").read()
    declared = header_functions(hdr)
    exported = set(re.findall(r"^SDK_EXPORT\((\w+),", sdk_c, flags=re.M))
    checks = [
        (declared == exported, "the header declares what the kernel exports",
         f"only declared: {sorted(declared - exported)}; only exported: "
         f"{sorted(exported - declared)}"),
        (len(exported) >= 20, f"{len(exported)} functions exported", ""),
    ]
    for hname, kname in (("BAREPERF_SDK_VERSION", "SDK_VERSION"),
                         ("BP_MALLOC_LIMIT", "SDK_MALLOC_LIMIT"), ("BP_WAIT_MS", "SDK_WAIT_MS")):
        h = re.search(r"#define\s+%s\s+\(?(\d+)u?\s*(?:<<\s*(\d+))?" % hname, hdr)
        k = re.search(r"#define\s+%s\s+\(?(\d+)u?l?\s*(?:<<\s*(\d+))?" % kname, sdk_h)
        val = lambda m: int(m.group(1)) << int(m.group(2) or 0) if m else None
        checks.append((h and k and val(h) == val(k), f"{hname} = {kname} ({val(h)})", ""))
    print(f"1..{len(checks)}")
    bad = 0
    for i, (ok, what, why) in enumerate(checks, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {what}")
        if not ok:
            bad += 1
            print(f"# {why}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
