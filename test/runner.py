#!/usr/bin/env python3
"""bareperf test runner: host unit tests and in-guest tests, one verdict.

Every check prints one line, PASS/FAIL/SKIP; the last line is
"N passed, N failed, N skipped" and the exit status is 1 on any failure.
A timeout is a failure; a skip is never a pass.

The tests run --jobs at once (the host tests beside the guest tests), the
longest of the last run first; each test's lines are printed together, in
the order of the list. A test in ALONE runs last, with nothing beside it.

Host tests: each binary prints TAP (cmocka with CMOCKA_MESSAGE_OUTPUT=TAP,
or its own). Guest tests (test/guest_tests.py) boot kernel.elf in QEMU:
  kind "tap":    the guest prints TAP lines; each is a check, and the
                 kernel's exit code must agree with them;
  kind "expect": regexes that must (and must not) appear, and an exit code.
"""
import argparse
import concurrent.futures
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import bpqemu  # noqa: E402

# Guest timeouts, wall clock: generous, because these machines are shared
# and busy. Measured with both cores loaded by other work: a PVH boot with
# an icount test took 30 s (timers_rates), a UEFI boot 43 s
# (uefi_missing_kernel). A test's own "timeout" can only raise its floor.
GUEST_TIMEOUT_PVH = 60
GUEST_TIMEOUT_SLOW = 150        # UEFI (OVMF) and -icount (one insn per tick)
# Host tests that need the machine to themselves: they run last, one at a
# time. uefi_coverage.py judges the soft PMU's coverage by PVH boots of the
# same minute: beside other tests no boot covers 99% and it can only skip.
ALONE = ("uefi_coverage.py",)
# Each test's time in the last run (build/test/logs/): the longest start first.
DURATIONS = "durations.json"
# A fresh build directory has no last run: then the times of a quiet run
# kept beside this file order the tests (without them the longest might
# start last, when the rest are done, and run alone).
SEED_DURATIONS = os.path.join(HERE, "durations.json")
# A check that took more than this share of its timeout is named on a
# "# slow:" line, so a timeout creeping closer shows before it fails.
SLOW_SHARE = 0.5

TAP_RE = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?(.*?)\s*$")
SKIP_RE = re.compile(r"#\s*SKIP\b\s*(.*)$", re.I)


class Results:
    def __init__(self, log_dir):
        self.passed = self.failed = self.skipped = 0
        self.log_dir = log_dir
        self.failures = []

    def add(self, status, name, detail=""):
        line = f"{status} {name}" + (f": {detail}" if detail else "")
        print(line, flush=True)
        if status == "PASS":
            self.passed += 1
        elif status == "FAIL":
            self.failed += 1
            self.failures.append(line)
        else:
            self.skipped += 1

    def tail(self, text, n=40):
        lines = text.splitlines()[-n:]
        print("    | " + "\n    | ".join(lines), flush=True)

    def note(self, line):
        print(line, flush=True)


class Held:
    """One test's lines, held while tests run at once and printed when its
    turn comes: each test's lines stay together, in the order of the list."""
    def __init__(self):
        self.items = []

    def add(self, status, name, detail=""):
        self.items.append(("add", status, name, detail))

    def tail(self, text, n=40):
        self.items.append(("tail", text, n))

    def note(self, line):
        self.items.append(("note", line))

    def replay(self, res):
        for what, *args in self.items:
            getattr(res, what)(*args)


def parse_tap(text):
    """[(status, name, reason)] from TAP lines anywhere in text."""
    out = []
    for line in text.splitlines():
        m = TAP_RE.match(line.strip("\r"))
        if not m:
            continue
        ok, _, desc = m.groups()
        skip = SKIP_RE.search(desc)
        name = SKIP_RE.sub("", desc).strip(" -#") or "(unnamed)"
        if skip:
            out.append(("SKIP", name, skip.group(1) or "skipped"))
        else:
            out.append(("PASS" if ok == "ok" else "FAIL", name, ""))
    return out


def run_host(binary, log_dir, timeout):
    """Run one host test binary; returns its lines (a Held) and its time."""
    res = Held()
    name = "host/" + os.path.basename(binary)
    env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP")
    t0 = time.monotonic()
    try:
        p = subprocess.run([binary], capture_output=True, text=True, env=env,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        res.add("FAIL", name, f"timed out after {timeout} s")
        res.tail((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
        return res, time.monotonic() - t0
    except OSError as e:
        res.add("FAIL", name, f"cannot run: {e}")
        return res, time.monotonic() - t0
    out = p.stdout + p.stderr
    with open(os.path.join(log_dir, os.path.basename(binary) + ".log"), "w") as f:
        f.write(out)
    checks = parse_tap(p.stdout)
    for status, case, reason in checks:
        res.add(status, f"{name}: {case}", reason)
    nfail = sum(1 for c in checks if c[0] == "FAIL")
    if p.returncode != 0 and nfail == 0:
        res.add("FAIL", name, f"exited with status {p.returncode} "
                f"without a failing check (crash or sanitizer report?)")
        res.tail(out)
    elif not checks:
        res.add("FAIL", name, "printed no TAP results")
        res.tail(out)
    elif nfail:
        res.tail(out, 60)
    took = time.monotonic() - t0
    res.note(f"     ({name}: {took:.1f} s)")
    if took > SLOW_SHARE * timeout:
        res.note(f"# slow: {name} took {took:.0f} s of its {timeout} s timeout")
    return res, took


def prepare_esp(build, t, workdir):
    """A private ESP for a UEFI test: kernel normal, missing or corrupt."""
    esp = os.path.join(workdir, "esp-" + t["name"])
    shutil.rmtree(esp, ignore_errors=True)
    os.makedirs(os.path.join(esp, "EFI", "BOOT"))
    shutil.copy(os.path.join(build, "esp", "EFI", "BOOT", "BOOTX64.EFI"),
                os.path.join(esp, "EFI", "BOOT", "BOOTX64.EFI"))
    kernel = os.path.join(build, "kernel.elf")
    mode = t.get("kernel", "normal")
    dst = os.path.join(esp, "kernel.elf")
    if mode == "normal":
        shutil.copy(kernel, dst)
    elif mode == "truncated":
        with open(kernel, "rb") as f:
            data = f.read()
        with open(dst, "wb") as f:
            f.write(data[:200])
    elif mode == "garbage":
        with open(dst, "wb") as f:
            f.write(bytes((i * 37 + 11) & 0xff for i in range(8192)))
    elif mode != "missing":
        raise ValueError(f"unknown kernel mode {mode}")
    if t.get("cfg") is not None:
        with open(os.path.join(esp, "bareperf.cfg"), "w") as f:
            f.write(t["cfg"])
    return esp


def prepare_host_file(path, hf):
    """No stale host file can pass: remove it; make a FIFO if asked."""
    if os.path.lexists(path):
        os.remove(path)
    if hf.get("fifo"):
        os.mkfifo(path)


def check_host_file(name, path, hf):
    """The host file against sha256 / expect_bytes / expect_regex, or None (FIFO)."""
    if hf.get("fifo"):
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return ("FAIL", f"{name}: host file", f"cannot read {path}: {e}")
    problems = []
    if "expect_bytes" in hf and len(data) != hf["expect_bytes"]:
        problems.append(f"{len(data)} bytes, expected {hf['expect_bytes']}")
    if "sha256" in hf and hashlib.sha256(data).hexdigest() != hf["sha256"]:
        problems.append("sha256 differs")
    if "expect_regex" in hf and not re.search(hf["expect_regex"].encode(), data, re.M):
        problems.append(f"no match for {hf['expect_regex']!r}")
    return ("FAIL" if problems else "PASS", f"{name}: host file {path} ({len(data)} bytes)",
            "; ".join(problems))


_qemu_version = None


def qemu_version():
    """(major, minor) of qemu-system-x86_64, or (0, 0) if it does not say."""
    global _qemu_version
    if _qemu_version is None:
        try:
            out = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                                 text=True, timeout=30).stdout
            m = re.search(r"version (\d+)\.(\d+)", out)
            _qemu_version = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        except (OSError, subprocess.TimeoutExpired):
            _qemu_version = (0, 0)
    return _qemu_version


def run_host_cmd(t, build):
    """A guest test driven by a host command (kind "cmd": its argv in "cmd",
    "{build}" replaced): its output must match every "expect" regex and it
    must exit with "exit"."""
    cmd = [a.replace("{build}", build) for a in t["cmd"]]
    timeout = max(t.get("timeout", 0), GUEST_TIMEOUT_SLOW)
    name = "guest/" + t["name"]
    t0 = time.monotonic()
    # Every file the command names under the build directory must exist:
    # a target that forgot to build it fails here, saying which.
    missing = [a for a in cmd if a.startswith(build + "/") and not os.path.exists(a)]
    if missing:
        return ([("FAIL", name, "not built: " + ", ".join(missing))], "",
                time.monotonic() - t0)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        return [("FAIL", name, f"timed out after {timeout} s")], out, time.monotonic() - t0
    text = p.stdout + p.stderr
    problems = []
    missing = [r for r in t.get("expect", []) if not re.search(r, text, re.M)]
    if missing:
        problems.append("missing output: " + "; ".join(missing))
    if p.returncode != t.get("exit", 0):
        problems.append(f"exit status {p.returncode}, expected {t.get('exit', 0)}")
    return ([("FAIL" if problems else "PASS", name, "; ".join(problems))], text,
            time.monotonic() - t0)


def run_guest(t, build, workdir, res_lines):
    """Run one guest test; returns (results, log text)."""
    if t.get("kind") == "cmd":
        return run_host_cmd(t, build)
    need = t.get("min_qemu")
    if need and qemu_version() < tuple(need):
        have = "%d.%d" % qemu_version()
        return ([("SKIP", "guest/" + t["name"],
                  f"needs QEMU >= {need[0]}.{need[1]} ({t.get('min_qemu_why', '')}); "
                  f"this one is {have}")], "", 0.0)
    uefi = t.get("boot", "pvh") == "uefi"
    esp = prepare_esp(build, t, workdir) if uefi else None
    hf = t.get("host_file")
    hf_path = os.path.join(workdir, hf["path"]) if hf else ""
    if hf:
        prepare_host_file(hf_path, hf)
    for fname, data in t.get("files", {}).items():
        with open(os.path.join(workdir, fname), "wb") as f:
            f.write(data() if callable(data) else data)
    extra = [a.replace("{host_file}", hf_path).replace("{workdir}", workdir)
             for a in t.get("qemu_args", [])]
    cmd = bpqemu.qemu_command(build, uefi=uefi, kvm=t.get("kvm", False), smp=t.get("smp", 1),
                              mem=t.get("mem", 256), cmdline=t.get("append", ""),
                              esp=esp, icount=t.get("icount", False),
                              vars_file=os.path.join(workdir, f"vars-{t['name']}.fd"),
                              extra=extra, serial=t.get("serial", "stdio"))
    timeout = max(t.get("timeout", 0),
                  GUEST_TIMEOUT_SLOW if uefi or t.get("icount") else GUEST_TIMEOUT_PVH)
    stop_on = [re.compile(r) for r in t.get("stop_on", [])]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    out = []
    timed_out = stopped = False
    os.set_blocking(p.stdout.fileno(), False)
    while True:
        chunk = p.stdout.read()
        if chunk:
            out.append(chunk)
            if stop_on and all(r.search(b"".join(out).decode(errors="replace"))
                               for r in stop_on):
                stopped = True
                p.kill()
        if p.poll() is not None:
            rest = p.stdout.read()
            if rest:
                out.append(rest)
            break
        if time.monotonic() - t0 > timeout:
            timed_out = True
            p.kill()
            p.wait()
            break
        time.sleep(0.02)
    text = b"".join(out).decode(errors="replace").replace("\r", "")
    took = time.monotonic() - t0
    name = "guest/" + t["name"]
    results = []
    t["_timeout"] = timeout

    if timed_out:
        results.append(("FAIL", name, f"timed out after {timeout} s"))
        return results, text, took
    code = None if stopped else bpqemu.kernel_status(p.returncode)
    if t.get("kind", "tap") == "tap":
        checks = parse_tap(text)
        results += [(s, f"{name}: {c}", r) for s, c, r in checks]
        nfail = sum(1 for c in checks if c[0] == "FAIL")
        want = 1 if nfail else 0
        if not checks:
            results.append(("FAIL", name, "printed no TAP results"))
        if code != want:
            results.append(("FAIL", name, f"kernel exit code {code}, expected {want} "
                            f"for {nfail} failed checks"))
        plan = re.search(r"^1\.\.(\d+)$", text, re.M)
        if checks and (not plan or int(plan.group(1)) != len(checks)):
            results.append(("FAIL", name, "TAP plan missing or wrong: the guest stopped early?"))
    else:
        missing = [r for r in t.get("expect", []) if not re.search(r, text, re.M)]
        present = [r for r in t.get("forbid", []) if re.search(r, text, re.M)]
        want = t.get("exit")
        problems = []
        if missing:
            problems.append("missing output: " + "; ".join(missing))
        if present:
            problems.append("unexpected output: " + "; ".join(present))
        if want is not None and code != want:
            problems.append(f"kernel exit code {code}, expected {want}")
        if want is None and not stopped:
            problems.append(f"expected to stop on output, but QEMU ended with {p.returncode}")
        results.append(("FAIL" if problems else "PASS", name, "; ".join(problems)))
    # Lines any kind of test must also print (a variant's mode, e.g. the
    # APIC mode the kernel chose).
    for r in t.get("log_expect", []):
        if not re.search(r, text, re.M):
            results.append(("FAIL", name, f"missing output: {r}"))
    if hf:
        r = check_host_file(name, hf_path, hf)
        if r:
            results.append(r)
    return results, text, took


def guest_job(t, build, workdir, log_dir):
    """Run one guest test, its log written; returns its lines (a Held) and its time."""
    out = Held()
    results, text, took = run_guest(t, build, workdir, None)
    with open(os.path.join(log_dir, t["name"] + ".log"), "w") as f:
        f.write(text)
    for r in results:
        out.add(*r)
    if any(r[0] == "FAIL" for r in results):
        out.tail(text)
    out.note(f"     (guest/{t['name']}: {took:.1f} s)")
    if took > SLOW_SHARE * t.get("_timeout", took):
        out.note(f"# slow: guest/{t['name']} took {took:.0f} s of its "
                 f"{t['_timeout']} s timeout")
    return out, took


def run_all(jobs, workers, res, log_dir):
    """Run the tests, [(name, function returning (Held, seconds))], and print
    their lines in the list's order. Those named in ALONE run last, one at
    a time, with nothing beside them; the others run `workers` at once, the
    longest of the last run's (DURATIONS in log_dir) started first, so that
    no long test starts when the others are nearly done (SEED_DURATIONS
    for a test the last run did not have)."""
    path = os.path.join(log_dir, DURATIONS)
    took = {}
    for p in (SEED_DURATIONS, path):	# the last run's times win
        try:
            with open(p) as f:
                took.update(json.load(f))
        except (OSError, ValueError):
            pass
    alone = [j for j in jobs if j[0].rsplit("/", 1)[-1] in ALONE]
    shared = [j for j in jobs if j[0].rsplit("/", 1)[-1] not in ALONE]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futs = [None] * len(shared)
        for i in sorted(range(len(shared)), key=lambda i: -took.get(shared[i][0], 0)):
            futs[i] = pool.submit(shared[i][1])
        for (name, _), fut in zip(shared, futs):
            held, took[name] = fut.result()
            held.replay(res)
    for name, fn in alone:
        held, took[name] = fn()
        held.replay(res)
    with open(path, "w") as f:
        json.dump({k: round(v, 1) for k, v in took.items()}, f, indent=0, sort_keys=True)


def kvm_unusable():
    """Why `make test-kvm` cannot run here, or None."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "no usable /dev/kvm"
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        flags = []
    if "arch_perfmon" not in flags and "perfctr_core" not in flags:
        return ("the host CPU shows no PMU (neither arch_perfmon nor perfctr_core "
                "in /proc/cpuinfo flags)")
    # What kvm-unit-tests' x86/pmu.c asks of the host: KVM's vPMU on, and
    # no NMI watchdog holding a counter the guest's would be multiplexed with.
    try:
        with open("/sys/module/kvm/parameters/enable_pmu") as f:
            if f.read().strip() in ("N", "0"):
                return "KVM's vPMU is off (/sys/module/kvm/parameters/enable_pmu = N)"
    except OSError:
        pass
    try:
        with open("/proc/sys/kernel/nmi_watchdog") as f:
            if f.read().strip() not in ("", "0"):
                return ("the host's NMI watchdog holds a counter "
                        "(echo 0 > /proc/sys/kernel/nmi_watchdog)")
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--host", nargs="*", default=[], help="host test binaries")
    ap.add_argument("--guest", action="store_true", help="run the guest tests")
    ap.add_argument("--kvm", action="store_true",
                    help="run the KVM_TESTS (real PMU) instead of the TCG guest tests")
    ap.add_argument("--only", help="regex: run the guest tests whose name matches")
    ap.add_argument("--only-host", help="regex: run the host tests whose path matches")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    # e2e_bareperf took 178 s with both cores loaded; bench_code, many
    # boots in one script, took 529 s at load 30 and 779 s at load 20
    # (four whole test suites at once).
    ap.add_argument("--host-timeout", type=int, default=1200)
    a = ap.parse_args()

    log_dir = os.path.join(a.build, "test", "logs")
    os.makedirs(log_dir, exist_ok=True)
    res = Results(log_dir)
    t0 = time.monotonic()

    jobs = [("host/" + os.path.basename(b), functools.partial(run_host, b, log_dir,
                                                               a.host_timeout))
            for b in a.host if not a.only_host or re.search(a.only_host, b)]
    if a.guest or a.kvm:
        import guest_tests
        tests = [t for t in (guest_tests.KVM_TESTS if a.kvm else guest_tests.TESTS)
                 if not a.only or re.search(a.only, t["name"])]
        why = kvm_unusable() if a.kvm else None
        if why:
            for t in tests:
                res.add("SKIP", "guest/" + t["name"], why)
            tests = []
        workdir = os.path.join(a.build, "test")
        jobs += [("guest/" + t["name"], functools.partial(guest_job, t, a.build, workdir,
                                                          log_dir))
                 for t in tests]
    run_all(jobs, a.jobs, res, log_dir)

    # The failures again, last: a log read from its end shows them.
    for line in res.failures:
        print(f"# failed: {line}")
    print(f"# logs in {log_dir}; {time.monotonic() - t0:.0f} s")
    print(f"{res.passed} passed, {res.failed} failed, {res.skipped} skipped")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
