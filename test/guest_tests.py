"""The in-guest tests: what test/runner.py boots, and what it expects.

Fields: name, boot ("pvh" | "uefi"), append (PVH command line), cfg (UEFI:
the ESP's bareperf.cfg), kernel (UEFI: normal | missing | truncated |
garbage), smp, mem, icount, timeout (s; it only raises the runner's floor,
GUEST_TIMEOUT_* in test/runner.py), kind ("tap" | "expect"), expect /
forbid (regexes), exit (the kernel's exit code: 0 ok, 1 fail, 2 usage,
3 panic; None = QEMU is stopped once every stop_on regex has appeared),
qemu_args (more QEMU arguments; "{host_file}" and "{workdir}" in them are
replaced), min_qemu ((major, minor): SKIP, with min_qemu_why, on an older
QEMU), log_expect (regexes the log must hold, for any kind), serial (what QEMU's first -serial is: "stdio" unless given),
files (dict: name -> bytes, or a function returning them, written into
build/test before booting, e.g. an ACPI table for -acpitable), host_file (dict: path, relative to build/test; the runner
removes any old file there, or makes a FIFO if fifo=True, before booting,
and afterwards checks it against sha256, expect_bytes and expect_regex,
whichever are given: one more check line).
"""

FAULT_REPORT = [r"^Call trace:$", r"RIP [0-9a-f]{16} ", r"RSP [0-9a-f]{16}",
                r"\] test_fault_main\+0x[0-9a-f]+/0x[0-9a-f]+$"]

TESTS = [
    dict(name="boot_pvh", append="app=test_boot -- source=pvh mem=256"),
    dict(name="boot_pvh_1g", mem=1024, append="app=test_boot -- source=pvh mem=1024"),
    # With no command line the kernel runs the benchmark suite.
    dict(name="default_app", kind="expect", append="", timeout=60,
         expect=[r"^app: suite: start", r"^suite: 5 benchmark groups, 0 failed",
                 r"^boot: kernel entry to app start: \d+ TSC ticks",
                 r"^profile: cpu-clock \(soft PMU: HPET NMIs\), \d+ samples on 1 CPU, (\d+) lost "
                 r"\(\1 ticks without a sample, 0 dropped: ring full\)$"],
         exit=0),
    dict(name="loopnest", kind="expect", append="app=loopnest",
         expect=[r"^app: loopnest: start", r"9592 primes.*results correct",
                 r"^profile: cpu-clock \(soft PMU: HPET NMIs\), \d+ samples on 1 CPU, (\d+) lost "
                 r"\(\1 ticks without a sample, 0 dropped: ring full\)$",
                 # matmul or sieve is the hot spot by construction (their
                 # shares are close under TCG): first line of the table.
                 r"^profile: .*\n +\d+\.\d% +\d+  (matmul|sieve)\n"],
         exit=0),
    # Without a PMU, cycles falls back to cpu-clock with one line, as perf
    # does; another hardware event is refused with the reason; a misspelled
    # one is called unknown, not blamed on the PMU.
    dict(name="events_cycles_without_pmu", kind="expect", append="events=cycles app=loopnest",
         exit=0,
         expect=[r"^bareperf: warning: event 'cycles': this machine has no PMU \(.+\); sampling "
                 r"cpu-clock \(the HPET soft PMU\) instead",
                 r"^profile: cpu-clock \(soft PMU: HPET NMIs\), \d+ samples on 1 CPU"]),
    dict(name="events_hw_without_pmu", kind="expect", append="events=instructions app=loopnest",
         exit=2,
         expect=[r"'instructions' needs a hardware PMU, and this machine has none .*"
                 r"use events=cpu-clock"]),
    dict(name="events_misspelled", kind="expect", append="events=cyclez app=loopnest", exit=2,
         expect=[r"unknown event 'cyclez'"], forbid=[r"no PMU|has none"]),
    dict(name="fault_null", kind="expect", append="app=test_fault -- null", exit=3,
         expect=FAULT_REPORT + [r"#PF page fault \(vector 14\)",
                                r"CR2 0000000000000000",
                                r"\] fault_null\+0x"]),
    dict(name="fault_ud", kind="expect", append="app=test_fault -- ud", exit=3,
         expect=FAULT_REPORT + [r"#UD invalid opcode", r"\] fault_ud\+0x"]),
    dict(name="fault_gp", kind="expect", append="app=test_fault -- gp", exit=3,
         expect=FAULT_REPORT + [r"#GP general protection", r"\] fault_gp\+0x"]),
    dict(name="fault_div", kind="expect", append="app=test_fault -- div", exit=3,
         expect=FAULT_REPORT + [r"#DE divide error", r"\] fault_div\+0x"]),
    dict(name="fault_stack_overflow", kind="expect", append="app=test_fault -- stack",
         exit=3, expect=[r"#DF double fault", r"\] fault_stack\+0x[0-9a-f]+/0x[0-9a-f]+  \(x\d+\)"]),
    # A fault in an interrupt's handler: the trace crosses the interrupt
    # to the function it hit, named at its first byte, and its callers.
    dict(name="fault_in_irq", kind="expect", append="app=test_fault -- irq", exit=3,
         expect=FAULT_REPORT + [r"#UD invalid opcode", r"\] fault_in_handler\+0x",
                                r"\] irq_landing\+0x0/", r"\] fault_irq\+0x"]),
    # A handler that writes R12 into its frame: the return would not
    # reload it, and the trap's check says so.
    dict(name="fault_handler_r12", kind="expect", append="app=test_fault -- r12", exit=3,
         expect=[r"PANIC on cpu 0: trap: the handler of vector 113 wrote R12-R15 into its "
                 r"trap frame \(R12 ([0-9a-f]+) -> (?!\1 )[0-9a-f]+, R13",
                 r"\] fault_r12\+0x"]),
    dict(name="panic", kind="expect", append="app=test_fault -- panic", exit=3,
         expect=[r"PANIC on cpu 0: test_fault: deliberate panic",
                 r"\] panic\+0x", r"\] test_fault_main\+0x"]),
    dict(name="cmdline_unknown_option", kind="expect", append="app=loopnest bogus=1",
         exit=2, expect=[r"bad command line: unknown option 'bogus'; known options: app serial baud",
                         r"^  app=NAME"],
         forbid=[r"^app: loopnest: start"]),
    dict(name="cmdline_bad_baud", kind="expect", append="baud=1234", exit=2,
         expect=[r"bad command line: baud: '1234' is not a rate the 16550 can make"]),
    dict(name="unknown_app", kind="expect", append="app=nosuchapp", exit=2,
         expect=[r"no app named 'nosuchapp'", r"^  loopnest +matrix multiply"]),

    # Timers, NMIs and CPUs.
    # Rates under icount: virtual time then follows the instruction count, not
    # the host's scheduling of two QEMUs on two cores, so tolerances hold.
    # (timeout: under -icount a busy host runs ~10 guest MIPS; these wait
    # hundreds of virtual ms)
    dict(name="timers_rates", icount=True, timeout=120,
         append="events=none app=test_timers -- rates"),
    dict(name="timers_nmi", append="events=none app=test_timers -- nmi"),
    dict(name="timers_apic_hz", append="events=none app=test_timers -- apichz"),
    # A TSC rate 4% fast taken as CPUID's: the boot's end measures the rate
    # against the HPET, says both figures and adopts the measured one.
    dict(name="timers_tsc_refine", append="events=none app=test_timers -- refine",
         log_expect=[r"^tsc: against the HPET over \d+ ms: \d+\.\d{3} MHz, -\d+ ppm \(\+-\d+\) "
                     r"from CPUID \(a test's figure\)'s \d+\.\d{3} MHz: they disagree; the "
                     r"measured rate adopted$"]),
    dict(name="timers_icount", icount=True, timeout=120,
         append="events=none app=test_timers -- icount"),
    dict(name="apic_leftover_vectors", kind="expect", exit=0,
         append="events=none app=test_timers -- leftover",
         expect=[r"^apic: cpu 0: 2 vectors left in service \(EOI sent\), 1 requested",
                 r"^apic: unexpected vector 0x70 on cpu 0 \(in service: EOI sent\)",
                 r"^# 4 passed, 0 failed"]),
    dict(name="apic_leftover_vectors_x2apic", kind="expect", exit=0,
         qemu_args=["-cpu", "max"], append="events=none app=test_timers -- leftover",
         expect=[r"^apic: x2APIC", r"^apic: cpu 0: 2 vectors left in service",
                 r"^# 4 passed, 0 failed"]),
    dict(name="apic_x2apic_reenable", qemu_args=["-cpu", "max"],
         append="events=none app=test_timers -- x2apic"),
    dict(name="hpet_route_range", append="events=none app=test_timers -- route"),
    dict(name="hpet_setup", append="events=none app=test_timers -- hpet",
         log_expect=[r"^hpet: .*; LegacyReplacement was on: turned off"]),
    dict(name="hpet_counter32_wrap", append="events=none app=test_timers -- counter32"),
    # Named for what it keeps: the soft PMU's coverage under TCG.
    dict(name="coverage_rep_nmi_hold", append="events=none app=test_timers -- rep"),
    dict(name="timers_tiny_period", append="events=none app=test_timers -- tiny"),
    dict(name="hpet_start_retry", append="events=none app=test_timers -- retry"),
    dict(name="timers_dead_clock", kind="expect", exit=0,
         append="events=none app=test_timers -- deadclock",
         expect=[r"^tsc: the dead port did not advance 10 ms in 100 ms; not calibrating",
                 r"^ok 1 - calibration against a counter that never moves gives up"]),
    # The HPET calibration's window closes at the end of the boot, 10 ms
    # long at least, its error bound said; its first 2 ms were the boot's.
    dict(name="tsc_window_reported", kind="expect", append="events=none app=test_boot",
         expect=[r"^tsc: \d+\.\d{3} MHz \(HPET calibration\)$",
                 r"^tsc: against the HPET over (\d{3,}|[1-9]\d) ms: \d+\.\d{3} MHz \(\+-\d+ ppm\), "
                 r"the first 2 ms [+-]\d+ ppm from it$"], exit=0),
    # Periods and rates: one check for every source, a floor measured at
    # boot (the soft PMU's NMI handler at 25% of a CPU), a clear refusal.
    dict(name="period_floor_reported", kind="expect", append="events=none app=test_boot",
         expect=[r"^soft-pmu: the NMI handler takes \d+ ns \(fastest of 32\); shortest "
                 r"cpu-clock period \d+ ns \(sampling at most 25% of a CPU\)"], exit=0),
    dict(name="period_1", kind="expect", append="app=loopnest period=1", exit=2,
         expect=[r"bareperf: period=1 ns is below the soft PMU's shortest period here, "
                 r"\d+ ns \(its handler takes \d+ ns"], forbid=[r"^app: loopnest: start"]),
    dict(name="period_2000", kind="expect", append="app=loopnest period=2000", exit=2,
         expect=[r"bareperf: period=2000 ns is below the soft PMU's shortest period"]),
    dict(name="freq_1000000", kind="expect", append="app=loopnest freq=1000000", exit=2,
         expect=[r"bareperf: freq=1000000 is above max_rate=100000"]),
    dict(name="freq_above_floor", kind="expect", append="app=loopnest max_rate=0 freq=1000000",
         exit=2, expect=[r"bareperf: freq=1000000 is above the soft PMU's limit here, \d+ "
                         r"samples/s"]),
    dict(name="period_too_long", kind="expect", append="app=loopnest period=100000000000",
         exit=2, expect=[r"bareperf: period=100000000000 ns is longer than the HPET's "
                         r"longest, 21474836470 ns"]),
    dict(name="period_and_freq", kind="expect", append="app=loopnest period=100000 freq=100",
         exit=2, expect=[r"bareperf: period=100000 and freq=100 together: give one"]),
    dict(name="smp1", smp=1, append="app=test_smp -- cpus=1"),
    dict(name="smp2", smp=2, append="app=test_smp -- cpus=2"),
    dict(name="smp4", smp=4, append="app=test_smp -- cpus=4"),
    dict(name="smp2_console_lock", smp=2, append="events=none app=test_smp -- console",
         log_expect=[r"^console: cpu 0 gave up on the output lock after \d+ ms, held by cpu 1"]),
    # An AP the boot CPU gave up on may still wake (a busy host delays its
    # vCPU): it must park in the trampoline, never run the kernel.
    dict(name="smp4_refused_aps_park", smp=4, append="ap_wait_ms=0 app=test_smp -- parked=3"),
    # Sampling: the soft PMU writes SAMPLE records into the per-CPU rings.
    dict(name="profile_exact", icount=True, append="events=none app=test_profile -- exact"),
    # make bench's soft_pmi_insn_per_sample figures can be taken (8-frame chains).
    dict(name="profile_cost", icount=True, append="events=none app=test_profile -- cost"),
    # A sample inside an interrupt's handler names the function interrupted.
    dict(name="profile_unwind_frameless", append="events=none app=test_profile -- frameless"),
    dict(name="profile_irq_chain", icount=True, append="events=none app=test_profile -- irq"),
    dict(name="profile_smp", smp=2, append="events=none app=test_profile -- smp"),
    dict(name="profile_throttle", icount=True, append="events=none app=test_profile -- throttle"),
    dict(name="profile_took", icount=True, timeout=120,
         append="events=none app=test_profile -- took"),
    dict(name="profile_masked", icount=True, timeout=120,
         append="events=none app=test_profile -- masked"),
    dict(name="smp_panic_stops_others", kind="expect", smp=4, exit=3,
         append="app=test_smp -- panic",
         expect=[r"PANIC on cpu 1: test_smp: deliberate panic on cpu 1",
                 r"\] panic_here\+0x",
                 r"^cpu 0: stopped by cpu 1; it was at:",
                 r"^cpu 2: stopped by cpu 1; it was at:",
                 r"^cpu 3: stopped by cpu 1; it was at:",
                 r"\] spin_forever\+0x"],
         forbid=[r"did not answer the stop NMI"]),

    # The UEFI path: OVMF -> BOOTX64.EFI -> kernel.elf.
    dict(name="uefi_boot", boot="uefi",
         cfg="# test configuration\napp=test_boot -- source=uefi mem=256 marker=from-cfg\n"),
    dict(name="uefi_missing_kernel", boot="uefi", kind="expect", kernel="missing",
         stop_on=[r"bareperf-boot: error: \\kernel\.elf not found on the boot volume"],
         expect=[r"bareperf-boot: error: \\kernel\.elf not found on the boot volume"],
         exit=None, forbid=[r"bareperf: booted"]),
    dict(name="uefi_truncated_kernel", boot="uefi", kind="expect", kernel="truncated",
         stop_on=[r"bareperf-boot: error: \\kernel\.elf is not a bareperf kernel: .+"],
         expect=[r"bareperf-boot: error: \\kernel\.elf is not a bareperf kernel: .+"],
         exit=None, forbid=[r"bareperf: booted"]),
    dict(name="uefi_garbage_kernel", boot="uefi", kind="expect", kernel="garbage",
         stop_on=[r"bareperf-boot: error: \\kernel\.elf is not a bareperf kernel: .+"],
         expect=[r"bareperf-boot: error: \\kernel\.elf is not a bareperf kernel: .+"],
         exit=None, forbid=[r"bareperf: booted"]),

    # ACPI
    dict(name="acpi_smp1", smp=1, append="app=test_acpi -- cpus=1"),
    dict(name="acpi_smp2", smp=2, append="app=test_acpi -- cpus=2"),
    dict(name="acpi_smp4", smp=4, append="app=test_acpi -- cpus=4"),
    dict(name="acpi_uefi", boot="uefi", cfg="app=test_acpi -- cpus=1\n"),

    # PMU
    dict(name="pmu_probe_tcg", append="app=test_pmu_probe -- expect=none"),
]

# make test-kvm: the same kernel under -enable-kvm -cpu host, for a Linux host
# with a PMU. The runner reports every one as SKIP, with the reason, where
# there is no usable /dev/kvm or the host CPU has no PMU.
# The real-PMU suite's skip path under TCG: every check SKIPs with the
# reason, none fails (its checks pass on the register model: test_pmu_regs).
TESTS += [
    dict(name="pmu_hw_tcg", append="events=none app=test_pmu_hw"),
]

KVM_TESTS = [
    dict(name="kvm_pmu_probe", kvm=True, append="app=test_pmu_probe"),
    dict(name="kvm_pmu_hw", kvm=True, append="events=none app=test_pmu_hw"),
    # Two CPUs: the AP's own probe (pmu_ap_init) and the register checks there.
    dict(name="kvm_pmu_hw_smp2", kvm=True, smp=2, append="events=none app=test_pmu_hw"),
    # AMD's K7 legacy counters (no PerfCtrExtCore): 4 counters at 0xC0010000.
    # On an Intel host the flag is not there to remove: the same suite.
    dict(name="kvm_pmu_hw_k7", kvm=True, qemu_args=["-cpu", "host,-perfctr-core"],
         append="events=none app=test_pmu_hw"),
    dict(name="kvm_period_1", kvm=True, kind="expect", append="events=cycles period=1", exit=2,
         expect=[r"cycles: period=1 is too short: a hardware period is at least 2"]),
    dict(name="kvm_default_app", kvm=True, kind="expect", append="events=cycles",
         expect=[r"^pmu: (Intel|AMD)", r"^profile: cycles, \d+ samples",
                 r"^ +\d+\.\d% +\d+  matmul$"], exit=0),
]

# virtio: PCI enumeration and the virtio-console driver (test/guest/test_virtio.c).
# The pattern the guest writes, for the host-file check: little-endian u32
# words w[0] = 0x12345678, w[i+1] = w[i] * 1664525 + 1013904223 mod 2^32,
# then a trailer line.
def _virtio_pattern(nbytes=1 << 20):
    import struct
    words, x = [], 0x12345678
    for _ in range(nbytes // 4):
        words.append(x)
        x = (x * 1664525 + 1013904223) & 0xffffffff
    data = struct.pack(f"<{len(words)}I", *words)
    return data + f"bareperf virtio pattern end: {nbytes} bytes\n".encode()


def _virtio_args(chardev, port="name=bareperf.0"):
    return ["-device", "virtio-serial-pci,disable-legacy=on", "-chardev", chardev,
            "-device", f"virtserialport,chardev=vc0,{port}"]


def _virtio_sha256():
    import hashlib
    data = _virtio_pattern()
    return len(data), hashlib.sha256(data).hexdigest()


_VIRTIO_BYTES, _VIRTIO_SHA256 = _virtio_sha256()

TESTS += [
    dict(name="virtio_console", append="app=test_virtio",
         qemu_args=_virtio_args("file,id=vc0,path={host_file}"),
         host_file=dict(path="virtio-console.out", expect_bytes=_VIRTIO_BYTES,
                        sha256=_VIRTIO_SHA256)),
    # PCI: the bridge walk against the scan of every bus, behind root ports
    # and a PCI bridge, and with a second root bus (pxb-pcie: every bus).
    dict(name="pci_bridges", append="events=none app=test_virtio -- pci",
         qemu_args=["-device", "pcie-root-port,id=rp1,bus=pcie.0,chassis=1",
                    "-device", "pcie-root-port,id=rp2,bus=pcie.0,chassis=2",
                    "-device", "virtio-serial-pci,disable-legacy=on,bus=rp2",
                    "-device", "pci-bridge,id=br1,bus=rp1,chassis_nr=3",
                    "-device", "virtio-rng-pci,bus=br1,addr=3"]),
    dict(name="pci_second_root", append="events=none app=test_virtio -- pci",
         qemu_args=["-device", "pxb-pcie,id=pxb1,bus_nr=32,bus=pcie.0",
                    "-device", "pcie-root-port,id=rp3,bus=pxb1,chassis=4"]),
    dict(name="virtio_missing", kind="expect", append="app=test_virtio -- missing", exit=0,
         expect=[r"^vcon: no virtio-console device \(PCI 1af4:1043\); in QEMU add "
                 r"-device virtio-serial-pci,disable-legacy=on",
                 r"^ok 1 - no virtio-console: vcon_init returns -E_NODEV",
                 r"^# 2 passed, 0 failed"]),
    dict(name="virtio_no_port", kind="expect", append="app=test_virtio -- missing", exit=0,
         qemu_args=["-device", "virtio-serial-pci,disable-legacy=on"],
         expect=[r"^vcon: 00:0\d\.0 announced no ports \(add -device virtserialport,",
                 r"^ok 1 - no virtio-console: vcon_init returns -E_NODEV",
                 r"^# 2 passed, 0 failed"]),
    dict(name="virtio_unnamed", append="app=test_virtio -- unnamed",
         qemu_args=_virtio_args("file,id=vc0,path={host_file}", port="nr=3"),
         host_file=dict(path="virtio-unnamed.out",
                        expect_regex=r"\Abareperf unnamed port 3\n\Z")),
    dict(name="virtio_disconnected", append="app=test_virtio -- disconnected",
         qemu_args=_virtio_args("socket,id=vc0,path={workdir}/virtio-disconnected.sock,"
                                "server=on,wait=off")),
    dict(name="virtio_loopback", append="app=test_virtio -- loopback",
         qemu_args=_virtio_args("pipe,id=vc0,path={host_file}"),
         host_file=dict(path="virtio-loopback.fifo", fifo=True)),
    # 15 ports, bareperf.0 the last: every DEVICE_ADD arrives at once, and
    # the names only if the control buffers go back before PORT_READY.
    dict(name="virtio_many_ports", append="app=test_virtio",
         qemu_args=["-device", "virtio-serial-pci,disable-legacy=on",
                    "-chardev", "null,id=vcn", "-device", "virtconsole,chardev=vcn"] +
         sum((["-chardev", f"null,id=vn{i}", "-device",
               f"virtserialport,chardev=vn{i},name=other.{i}"] for i in range(13)), []) +
         ["-chardev", "file,id=vc0,path={host_file}",
          "-device", "virtserialport,chardev=vc0,name=bareperf.0"],
         host_file=dict(path="virtio-many-ports.out", expect_bytes=_VIRTIO_BYTES,
                        sha256=_VIRTIO_SHA256)),
    # OVMF puts the 64-bit BAR above 4 GiB, outside the identity map: moved.
    dict(name="virtio_uefi", boot="uefi", cfg="app=test_virtio\n",
         qemu_args=_virtio_args("file,id=vc0,path={host_file}"),
         host_file=dict(path="virtio-uefi.out", expect_bytes=_VIRTIO_BYTES,
                        sha256=_VIRTIO_SHA256)),
]

# bench
# The microbenchmark harness (apps/bench.c, test/guest/test_bench.c): exact
# counts under icount with no sampling; then each suite app on 1 and 2 CPUs
# inside the kernel's soft-PMU sampling run, its BENCH records checked in
# the rings (4 MiB of ring per CPU: no sample may crowd a record out); and
# the suite as `make run` shows it.
TESTS += [
    dict(name="bench_exact", icount=True, timeout=60,
         append="events=none app=test_bench -- exact"),
] + [
    dict(name=f"bench_{app[6:]}_smp{n}", smp=n, timeout=60,
         append=f"ring_pages=1024 app=test_bench -- records app={app} quick=1" +
         (" cpu=all" if n > 1 else "") + (" cpuid=0" if app == "bench_insn" else ""))
    for app in ("bench_memlat", "bench_membw", "bench_branch", "bench_insn", "bench_priv")
    for n in (1, 2)
] + [
    # QEMU's "max" CPU has POPCNT, RDTSCP, AVX and AVX2: the rows qemu64 skips.
    dict(name=f"bench_{app[6:]}_cpu_max", timeout=60, qemu_args=["-cpu", "max"],
         append=f"ring_pages=1024 app=test_bench -- records app={app} quick=1")
    for app in ("bench_membw", "bench_insn", "bench_priv")
] + [
    dict(name="bench_suite", kind="expect", smp=2, timeout=60, append="app=suite", exit=0,
         expect=[r"^suite: no PMU here \(QEMU TCG: .*\), so there are no real cycle counts",
                 r"^memlat: pointer chase on 2 MiB pages",
                 r"^  working set +event +median +iqr +reps +note$",
                 r"^memlat: 4 KiB pages: (knee|no knee)",
                 r"^membw: read, write, copy passes",
                 r"^branch: one conditional branch per copy",
                 r"^  add r64 lat +tsc +\d+\.\d{3}",
                 r"^  NMI round trip with cpu 1 +tsc",
                 r"^  IPI round trip with cpu 1 +tsc",
                 r"^suite: 5 benchmark groups, 0 failed, in \d+ TSC ticks",
                 r"^profile: cpu-clock \(soft PMU: HPET NMIs\), \d+ samples on 2 CPUs"],
         # no negative figure is ever printed as a result (below the noise
         # floor a row shows "< F")
         forbid=[r"FATAL", r"malformed", r"^  .*\btsc +-\d", r"found no room"]),
    # An AMD family 17h model (EPYC) under TCG: DE_CFG takes no write, so
    # LFENCE is not known to serialize; the harness reads the TSC between
    # cpuid instructions and every result says so, on the table and in
    # its BENCH record (test_bench checks the flag is set).
    dict(name="bench_lfence_cpuid", kind="expect", timeout=60, qemu_args=["-cpu", "EPYC"],
         append="ring_pages=1024 app=test_bench -- records app=bench_insn quick=1 cpuid=1",
         exit=0,
         expect=[r"^pmu: lfence may not serialize \(DE_CFG\.LFENCE_SERIALIZE not settable\); "
                 r"bench serializes its reads with cpuid$",
                 r"^  add r64 lat +tsc .*reads serialized by cpuid",
                 r"^# \d+ passed, 0 failed"]),
]

# counting
# Counting runs (count=, COUNTS records), group reads (READ in samples) and
# throttling, with the soft events that need no PMU (test/guest/test_count.c);
# exact counts under icount, where the TSC counts retired instructions.
TESTS += [
    dict(name="count_exact", icount=True, append="events=none app=test_count -- exact"),
    dict(name="count_smp", smp=2, append="events=none app=test_count -- smp"),
    dict(name="count_read", icount=True, append="events=none app=test_count -- read"),
    dict(name="count_throttle", icount=True,
         append="events=none max_rate=2500 app=test_count -- throttle"),
    dict(name="count_stat", kind="expect", append="app=loopnest count=tsc,cpu-clock,task-clock",
         exit=0,
         expect=[r"^count: loopnest on cpu 0: \d+ TSC ticks \(\d+ us\)$", r"^count: tsc \d+$",
                 r"^count: cpu-clock \d+$", r"^count: task-clock \d+$"],
         forbid=[r"^profile: "]),
    dict(name="count_without_pmu", kind="expect", append="count=tsc,instructions", exit=2,
         expect=[r"'instructions' needs a hardware PMU, and this machine has none .*"
                 r"soft events: tsc, cpu-clock, task-clock"]),
]
# counting on a real PMU (make test-kvm): ten events on fewer counters are
# multiplexed, and the console shows the scaled counts perf stat's way.
KVM_TESTS += [
    dict(name="kvm_count_multiplex", kvm=True, kind="expect", exit=0,
         append="count=instructions,cycles,branches,branch-misses,cache-references,"
                "cache-misses,branches,branch-misses,cache-references,cache-misses",
         expect=[r"^count: loopnest on cpu 0: \d+ TSC ticks",
                 r"^count: branches \d+ \(scaled x\d+\.\d\d, running \d+\.\d%\)$"]),
]

# Instruction tracing : the single-step tracer against the TSC
# under icount (test/guest/test_trace.c); Intel PT is absent under TCG, so
# its probe is a SKIP with the reason, and trace=pt: is refused with it.
# A bad trace= is refused with the other settings, before the run starts.
TESTS += [
    dict(name="trace_exact", icount=True, timeout=120,
         append="events=none app=test_trace -- exact"),
    dict(name="trace_pt_probe", append="app=test_trace -- pt"),
    dict(name="trace_pt_refused", kind="expect", exit=2,
         append="trace=pt:all events=none app=test_trace -- run",
         expect=[r"bareperf: trace: pt:all: Intel PT is not available: .+\. The single-step "
                 r"tracer works on any x86-64 CPU: trace=all"],
         forbid=[r"cannot start sampling"]),
    dict(name="trace_no_function", kind="expect", exit=2,
         append="trace=tt_nosuch events=none app=test_trace -- run",
         expect=[r"bareperf: trace: no function 'tt_nosuch' in this kernel"],
         forbid=[r"cannot start sampling", r"^app: test_trace: start"]),
    dict(name="trace_app_range", kind="expect", icount=True, exit=0, timeout=120,
         append="trace=tt_fib events=none app=test_trace -- run n=100",
         expect=[r"^trace: cpu 0: 1500 instructions traced in 1 call, \d+ bytes"]),
]
KVM_TESTS += [
    dict(name="kvm_trace_pt_probe", kvm=True, append="app=test_trace -- pt"),
]

# bareperf bench on the real PMU: add rax, rbx retires exactly one
# instruction per copy (the n/2n difference cancels the harness), and its
# cycles are counted.
KVM_TESTS += [
    dict(name="kvm_bench_add", kind="cmd", exit=0,
         cmd=["{build}/bareperf", "bench", "--kvm", "--kernel", "{build}/kernel.elf", "--json",
              "-asm", "add rax, rbx", "-e", "instructions,cycles"],
         expect=[r'^\{"asm": "add rax, rbx", "results": \{"Instructions retired": 1\.000, '
                 r'"Core cycles": \d+\.\d{3}\}, "error": null\}$']),
]


# The same SMP, NMI, timer and soft-PMU tests with the local APIC in x2APIC
# mode (QEMU >= 8.1 TCG offers it on -cpu max; 7.2 does not), and a set
# with no HPET (-machine q35,hpet=off: the kernel calibrates on the PM
# timer and says so).
# (QEMU 10.0 stops with "Bad icount read" when the kernel reads the APIC
# through its x2APIC MSRs under -icount, with -cpu max or qemu64,+x2apic:
# the icount tests stay in xAPIC mode.) The soft PMU needs an HPET comparator, so
# the no-HPET set runs without sampling (events=none).
_X2APIC_BASES = ["smp2", "smp4", "timers_nmi", "profile_smp", "count_smp",
                 "smp4_refused_aps_park"]
_NO_HPET_BASES = ["boot_pvh", "smp2", "pmu_probe_tcg", "count_without_pmu"]


def _variant(base, prefix, events_none=False, **kw):
    t = dict(next(t for t in TESTS if t["name"] == base))
    t["name"] = prefix + base
    if events_none and "events=" not in t.get("append", ""):
        t["append"] = "events=none " + t.get("append", "")
    t["qemu_args"] = list(t.get("qemu_args", [])) + kw.pop("qemu_args")
    t["log_expect"] = list(t.get("log_expect", [])) + kw.pop("log_expect")
    t.update(kw)
    return t


TESTS += [_variant(b, "x2apic_", qemu_args=["-cpu", "max"], log_expect=[r"^apic: x2APIC"],
                   min_qemu=(8, 1), min_qemu_why="x2APIC under TCG")
          for b in _X2APIC_BASES]
# The x2APIC ICR write with an Intel vendor string: the MFENCE;LFENCE path
# (test_smp's "x2APIC ICR fence"; AMD's writes need none).
TESTS += [_variant("smp2", "x2apic_intel_", qemu_args=["-cpu", "max,vendor=GenuineIntel"],
                   log_expect=[r"^apic: x2APIC"], min_qemu=(8, 1),
                   min_qemu_why="x2APIC under TCG")]
TESTS += [_variant(b, "nohpet_", qemu_args=["-machine", "q35,hpet=off"], events_none=True,
                   log_expect=[r"^tsc: .*\((ACPI PM timer|PIT) calibration\)"])
          for b in _NO_HPET_BASES]
# Without an HPET the soft PMU samples from the APIC timer: the same one
# rate check, its floor timed without the HPET accesses, its ceiling the
# timer's 32-bit count.
TESTS += [
    dict(name="nohpet_period_1", kind="expect", qemu_args=["-machine", "q35,hpet=off"],
         append="app=loopnest period=1", exit=2,
         expect=[r"^soft-pmu: the APIC timer handler takes \d+ ns",
                 r"bareperf: period=1 ns is below the soft PMU's shortest period here"]),
    dict(name="nohpet_period_too_long", kind="expect", qemu_args=["-machine", "q35,hpet=off"],
         append="app=loopnest period=100000000000", exit=2,
         expect=[r"bareperf: period=100000000000 ns is longer than the APIC timer's longest"]),
]
# The console UART: serial=auto takes ACPI SPCR's UART, else a PCI serial
# controller, else COM1 (kernel/dev/serial.c). Each test leaves the guest only
# the UART it should find wired to stdout.
def spcr_table(port, baud_code=7, space=1, bits=8, access=1, rev=2):
    """An 80-byte SPCR (Microsoft's Serial Port Console Redirection Table,
    revision 2) naming a 16550 at port, with a correct checksum."""
    import struct
    t = bytearray(80)
    t[0:4] = b"SPCR"
    struct.pack_into("<IB", t, 4, len(t), rev)
    t[10:16], t[16:24], t[28:32] = b"BPTEST", b"BPSPCR  ", b"BPTC"
    struct.pack_into("<I", t, 24, 1)
    struct.pack_into("<I", t, 32, 1)
    t[36] = 0                                   # interface type: full 16550
    struct.pack_into("<BBBBQ", t, 40, space, bits, 0, access, port)
    t[58] = baud_code                           # 7 = 115200
    struct.pack_into("<HH", t, 64, 0xffff, 0xffff)   # not a PCI device
    t[9] = -sum(t) & 0xff
    return bytes(t)


_PCI_SERIAL = ["-chardev", "stdio,id=s0", "-device", "pci-serial,chardev=s0,addr=0x5"]
TESTS += [
    dict(name="serial_default_com1", kind="expect", exit=0,
         append="app=test_boot -- source=pvh mem=256",
         expect=[r"^serial: console on I/O 0x3f8, 115200 baud: COM1 answers the "
                 r"scratch-register test \(no usable SPCR table, no PCI serial controller\)$",
                 r"^ok 1 - boot source is pvh"]),
    # SPCR names COM2; COM1 exists but is not wired anywhere.
    dict(name="serial_spcr", kind="expect", exit=0, serial="null",
         files={"spcr-com2.bin": spcr_table(0x2f8)},
         qemu_args=["-serial", "stdio", "-acpitable", "file={workdir}/spcr-com2.bin"],
         append="app=test_boot -- source=pvh mem=256",
         expect=[r"^acpi: RSDP .*tables: .*\bSPCR\b",
                 r"^serial: console on I/O 0x2f8, 115200 baud: ACPI SPCR names it$",
                 r"^bareperf: booted via PVH",      # the early boot log was replayed
                 r"^ok 1 - boot source is pvh"]),
    # Watching COM1 while SPCR names COM2: the boot so far, then where the
    # console went.
    dict(name="serial_spcr_com1_note", kind="expect", exit=0,
         files={"spcr-com2n.bin": spcr_table(0x2f8)},
         qemu_args=["-serial", "null", "-acpitable", "file={workdir}/spcr-com2n.bin"],
         append="app=test_boot -- source=pvh mem=256",
         expect=[r"^bareperf: booted via PVH",
                 r"^serial: the console continues on I/O 0x2f8 \(ACPI SPCR names it\)$"],
         forbid=[r"^ok 1 -"]),
    # SPCR names COM4, where nothing answers: said, then COM1.
    dict(name="serial_spcr_absent_uart", kind="expect", exit=0,
         files={"spcr-com4.bin": spcr_table(0x2e8)},
         qemu_args=["-acpitable", "file={workdir}/spcr-com4.bin"],
         append="app=test_boot -- source=pvh mem=256",
         expect=[r"^serial: no UART answers at I/O 0x2e8 \(ACPI SPCR names it\)$",
                 r"^serial: console on I/O 0x3f8, 115200 baud: COM1 answers the "
                 r"scratch-register test \(SPCR's UART did not answer, no PCI serial"]),
    # No ISA serial at all: the PCI 16550 (its I/O BAR placed by the kernel
    # on the PVH path, where qboot assigns none).
    dict(name="serial_pci", kind="expect", exit=0, serial="none", qemu_args=_PCI_SERIAL,
         append="app=test_boot -- source=pvh mem=256",
         expect=[r"^serial: console on I/O 0x[0-9a-f]+, 115200 baud: PCI serial controller "
                 r"00:05\.0 \(1b36:0002\), no SPCR table$",
                 r"^bareperf: booted via PVH", r"^ok 1 - boot source is pvh"]),
    dict(name="serial_explicit_pci", kind="expect", exit=0, serial="none",
         qemu_args=_PCI_SERIAL, append="serial=pci:00:05.0 app=test_boot -- source=pvh mem=256",
         expect=[r"^serial: console on I/O 0x[0-9a-f]+, 115200 baud: serial= names it$",
                 r"^ok 1 - boot source is pvh"]),
    dict(name="serial_explicit_com2", kind="expect", exit=0, serial="null",
         qemu_args=["-serial", "stdio"], append="serial=com2 app=test_boot -- source=pvh mem=256",
         expect=[r"^serial: console on I/O 0x2f8, 115200 baud: serial= names it$",
                 r"^ok 1 - boot source is pvh"]),
    # Through OVMF: the SPCR among the firmware's tables (XSDT). COM1 goes
    # nowhere; the kernel's log is on COM2.
    dict(name="serial_spcr_uefi", boot="uefi", kind="expect", exit=0, serial="null",
         files={"spcr-com2u.bin": spcr_table(0x2f8)},
         qemu_args=["-serial", "stdio", "-acpitable", "file={workdir}/spcr-com2u.bin"],
         cfg="app=test_boot -- source=uefi mem=256\n",
         expect=[r"^acpi: RSDP rev 2 .*XSDT.*tables: .*\bSPCR\b",
                 r"^serial: console on I/O 0x2f8, 115200 baud: ACPI SPCR names it$",
                 r"^bareperf: booted via UEFI", r"^ok 1 - boot source is uefi"]),
    # A bad command line is reported on the UART SPCR names, too.
    dict(name="serial_spcr_bad_cmdline", kind="expect", exit=2, serial="null",
         files={"spcr-com2b.bin": spcr_table(0x2f8)},
         qemu_args=["-serial", "stdio", "-acpitable", "file={workdir}/spcr-com2b.bin"],
         append="app=loopnest bogus=1",
         expect=[r"bad command line: unknown option 'bogus'"]),
]

# No HPET (-machine hpet=off, as on many recent PCs) and no PMU: cpu-clock
# samples on the local APIC timer, an ordinary interrupt. Under icount the
# timer runs on the instruction count, so a loop's samples do not depend on
# how the host schedules QEMU.
TESTS += [
    dict(name="profile_no_hpet", icount=True, qemu_args=["-machine", "hpet=off"],
         append="events=none app=test_profile -- lapic"),
    dict(name="profile_no_hpet_loopnest", kind="expect", exit=0, smp=2, icount=True,
         qemu_args=["-machine", "hpet=off"], append="app=loopnest",
         expect=[r"^acpi: no HPET",
                 r"^profile: cpu-clock \(soft PMU: APIC timer interrupts, blind where interrupts "
                 r"are off\), [1-9]\d* samples on 2 CPUs, 0 lost \(dropped: ring full\)$",
                 r"^ +\d+\.\d% +\d+  (matmul|sieve)$",
                 r"^  cpu 0: [1-9]\d* samples, 0 lost \(dropped: ring full\)$",
                 r"^  cpu 1: \d+ samples, 0 lost \(dropped: ring full\)$"]),
]

# A quiet machine: turbo=off and prefetch=off through MSR probes. Under TCG
# the MSR writes do not hold: refused, reported, never fatal; the run's
# metadata says what was asked, done and refused (BP_QUIET_* bits 0 turbo,
# 1 prefetch). QEMU sets CPUID.1:ECX[31] under TCG too: a guest, whose
# turbo is the host's.
TESTS += [
    # QEMU's default CPU (AMD family 15): turbo is the host's; no
    # documented prefetch control for the family.
    dict(name="quiet_amd", kind="expect", exit=0, smp=2,
         append="turbo=off prefetch=off app=test_boot -- source=pvh mem=256",
         expect=[r"^quiet: turbo=off refused on 2 of 2 CPUs \(cpu 0: not controllable from a "
                 r"guest: the host's turbo runs as the host sets it\)",
                 r"^quiet: prefetch=off refused on 2 of 2 CPUs \(cpu 0: no documented control "
                 r"on AuthenticAMD family 0xf\); left as the firmware set it there$",
                 r"^quiet: idle CPUs wait in hlt with interrupts on",
                 r"^# \d+ passed, 0 failed"]),
    # An Intel model: MSR 1A4H's write does not hold under TCG.
    dict(name="quiet_intel", kind="expect", exit=0, qemu_args=["-cpu", "Skylake-Client"],
         append="turbo=off prefetch=off app=test_boot -- source=pvh mem=256",
         expect=[r"^quiet: turbo=off refused on 1 of 1 CPUs \(cpu 0: not controllable from a "
                 r"guest",
                 r"^quiet: prefetch=off refused on 1 of 1 CPUs \(cpu 0: MSR 1A4H\[3:0\] "
                 r"\(MSR 0x1a4\): the write did not hold"]),
    # A Goldmont Plus model: MSR 1A4H's bits 0 and 2 only.
    dict(name="quiet_goldmont", kind="expect", exit=0,
         qemu_args=["-cpu", "Skylake-Client,model=0x7a"],
         append="prefetch=off app=test_boot -- source=pvh mem=256",
         expect=[r"^quiet: prefetch=off refused on 1 of 1 CPUs \(cpu 0: MSR 1A4H\[2,0\] "
                 r"\(MSR 0x1a4\): the write did not hold"]),
    dict(name="quiet_meta", qemu_args=["-cpu", "Skylake-Client"],
         append="turbo=off prefetch=off events=none app=test_profile -- quiet asked=3 done=0 "
                "refused=3"),
    dict(name="quiet_meta_none", append="events=none app=test_profile -- quiet asked=0 done=0 "
                                        "refused=0"),
]

# console=: the screen only (nothing on the UART at all), or the UART only.
TESTS += [
    dict(name="console_fb_only", boot="uefi", kind="expect", exit=0,
         cfg="console=fb app=test_boot -- source=uefi mem=256\n",
         expect=[r"bareperf-boot: exiting boot services"],
         forbid=[r"bareperf: booted", r"^ok \d+"]),
    dict(name="console_serial_only", boot="uefi", kind="expect", exit=0,
         cfg="console=serial app=test_boot -- source=uefi mem=256\n",
         expect=[r"^fb: 1280x800 framebuffer left alone \(console=serial\)$",
                 r"^ok 1 - boot source is uefi"]),
]
