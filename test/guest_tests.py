"""The in-guest tests: what test/runner.py boots, and what it expects.

Fields: name, boot ("pvh" | "uefi"), append (PVH command line), cfg (UEFI:
the ESP's bareperf.cfg), kernel (UEFI: normal | missing | truncated |
garbage), smp, mem, icount, timeout (s), kind ("tap" | "expect"), expect /
forbid (regexes), exit (the kernel's exit code: 0 ok, 1 fail, 2 usage,
3 panic; None = QEMU is stopped once every stop_on regex has appeared).
"""

FAULT_REPORT = [r"^Call trace:$", r"RIP [0-9a-f]{16} ", r"RSP [0-9a-f]{16}",
                r"\] test_fault_main\+0x[0-9a-f]+/0x[0-9a-f]+$"]

TESTS = [
    dict(name="boot_pvh", append="app=test_boot -- source=pvh mem=256"),
    dict(name="boot_pvh_1g", mem=1024, append="app=test_boot -- source=pvh mem=1024"),
    dict(name="default_app", kind="expect", append="",
         expect=[r"^app: loopnest: start", r"9592 primes.*results correct",
                 r"^boot: kernel entry to app start: \d+ TSC ticks",
                 r"^profile: cpu-clock \(soft PMU: HPET NMIs\), \d+ samples on 1 CPU, 0 lost",
                 # matmul is the hot spot by construction: first line of the table.
                 r"^profile: .*\n +\d+\.\d% +\d+  matmul\n"],
         exit=0),
    dict(name="events_unknown_without_pmu", kind="expect", append="events=cycles", exit=2,
         expect=[r"event 'cycles': this machine has no PMU .*use events=cpu-clock"]),
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
    dict(name="timers_rates", icount=True, append="events=none app=test_timers -- rates"),
    dict(name="timers_nmi", append="events=none app=test_timers -- nmi"),
    dict(name="timers_icount", icount=True, append="events=none app=test_timers -- icount"),
    dict(name="smp1", smp=1, append="app=test_smp -- cpus=1"),
    dict(name="smp2", smp=2, append="app=test_smp -- cpus=2"),
    dict(name="smp4", smp=4, append="app=test_smp -- cpus=4"),
    # Sampling: the soft PMU writes SAMPLE records into the per-CPU rings.
    dict(name="profile_exact", icount=True, append="events=none app=test_profile -- exact"),
    dict(name="profile_smp", smp=2, append="events=none app=test_profile -- smp"),
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
KVM_TESTS = [
    dict(name="kvm_pmu_probe", kvm=True, append="app=test_pmu_probe"),
    dict(name="kvm_pmu_hw", kvm=True, append="events=none app=test_pmu_hw"),
    dict(name="kvm_default_app", kvm=True, kind="expect", append="events=cycles",
         expect=[r"^pmu: (Intel|AMD)", r"^profile: cycles, \d+ samples",
                 r"^ +\d+\.\d% +\d+  matmul$"], exit=0),
]
