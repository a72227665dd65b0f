# test/ build fragment: guest test apps, host unit tests, and the targets
# that run them (test/runner.py prints one line per check and the totals).

# A host test or a benchmark is a program run without arguments: the
# recipe $(call gen_script,COMMAND LINE) writes its target as a script that
# runs that command line from the top directory.
define gen_script
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec %s\n' '$(CURDIR)' '$(strip $(1))' > $@
	$(Q)chmod +x $@
endef

APP_C += test/guest/report.c test/guest/test_boot.c test/guest/test_fault.c \
	test/guest/test_timers.c test/guest/test_smp.c test/guest/test_profile.c \
	test/guest/test_pmu_hw.c test/pmu_regs_check.c test/guest/test_fb.c

# ACPI: the parsers against broken tables on the host (test/host/kernel.mk);
# QEMU's tables in the guest.
APP_C += test/guest/test_acpi.c

# The dependency direction, the integer types of shared code and the
# kernel's cycles (test/check_layers.py, over the sources and the objects
# of the build; the README's "Rules of the house").
HOST_TESTS += test/check_layers.py

# The SDK's header and the kernel's export table name the same functions.
HOST_TESTS += test/sdk_exports.py

# End to end: the control channel, driven by an independent encoder of the
# wire format (needs build/kernel.elf).
HOST_TESTS += test/e2e/control.py
# Programs the host loads (LOAD): built from test/programs/ with the SDK's
# flags, run, and refused in each way they can be (needs build/kernel.elf).
HOST_TESTS += test/e2e/program.py
# The UART held to 115200 baud: exact LOST accounting when the line cannot
# keep up (needs build/bareperf); its --bench mode measures the line's
# lossless capacity in samples/s.
HOST_TESTS += test/e2e/pacing.py
# Repeats on request: a host that says it will ask gets no repeated
# descriptors unasked, and gets them at once when it asks (needs
# build/bareperf and build/kernel.elf).
HOST_TESTS += test/e2e/repeat_ask.py
# The soft PMU's tick account and the app's window, recorded and reported
# (needs build/bareperf and build/kernel.elf).
HOST_TESTS += $(BUILD)/host/e2e_coverage

$(BUILD)/host/e2e_coverage: test/e2e/coverage.py $(BUILD)/bareperf $(BUILD)/kernel.elf
	$(call gen_script,$(PYTHON) test/e2e/coverage.py $(BUILD))

# End to end (test/e2e/e2e_bareperf.py): record a soft-PMU profile of
# test_hotspot under -icount, report, -g, script, stat, list, and the bad
# inputs. (The guest app it profiles, test/guest/test_hotspot.c:
# test/host/tools.mk.)
HOST_TESTS += $(BUILD)/host/e2e_bareperf $(BUILD)/host/cli

$(BUILD)/host/e2e_bareperf: test/e2e/e2e_bareperf.py $(BUILD)/bareperf $(BUILD)/kernel.elf
	$(call gen_script,$(PYTHON) test/e2e/e2e_bareperf.py $(BUILD))

# Captures damaged on purpose and lines with no machine on them, through
# build/bareperf (test/e2e/damaged.py): duplicates, every reader's
# warnings, a bit flipped in every 500 bytes (the repeated descriptors),
# -i - as a stream, record --tty's --wait, one record per -o.
HOST_TESTS += $(BUILD)/host/damaged

$(BUILD)/host/damaged: test/e2e/damaged.py test/e2e/e2e_common.py $(BUILD)/bareperf \
		$(BUILD)/kernel.elf
	$(call gen_script,$(PYTHON) test/e2e/damaged.py $(BUILD))

# tools/bench/vs_perf_bench.sh twice across a kernel rebuild: its cached
# captures follow the kernel they were made from (test/e2e/vs_perf_cache.sh).
HOST_TESTS += $(BUILD)/host/vs_perf_cache

$(BUILD)/host/vs_perf_cache: test/e2e/vs_perf_cache.sh tools/bench/vs_perf_bench.sh \
		$(BUILD)/bareperf $(BUILD)/kernel.elf $(BUILD)/bench/gen_capture
	$(call gen_script,sh test/e2e/vs_perf_cache.sh $(BUILD))

# The README's `make run` transcript has the shape of a real make run's
# lines (test/e2e/readme_run.py): a changed message names the README line.
HOST_TESTS += $(BUILD)/host/readme_run

$(BUILD)/host/readme_run: test/e2e/readme_run.py test/e2e/e2e_common.py README.md \
		$(BUILD)/bareperf $(BUILD)/kernel.elf
	$(call gen_script,$(PYTHON) test/e2e/readme_run.py $(BUILD))

# perf's command-line habits (test/e2e/cli.sh): report's sort keys and
# columns, stat -x, list WORD, -C, -i -, make run's call chains, the help
# text and the man pages rendered from it, make install.
$(BUILD)/host/cli: test/e2e/cli.sh $(BUILD)/bareperf $(BUILD)/kernel.elf $(MAN_STAMP)
	$(call gen_script,sh test/e2e/cli.sh $(BUILD))

# An installed bareperf works anywhere (test/e2e/install.sh): make install
# into a scratch PREFIX, moved, then run from an empty directory: cflags,
# list-apps, record --qemu and --uefi, report, a C file compiled with
# $(bareperf cflags); BAREPERF_LIBDIR and -k.
HOST_TESTS += $(BUILD)/host/install

$(BUILD)/host/install: test/e2e/install.sh test/e2e/e2e_common.sh $(BUILD)/bareperf \
		$(BUILD)/kernel.elf $(ESP)/EFI/BOOT/BOOTX64.EFI $(MAN_STAMP)
	$(call gen_script,sh test/e2e/install.sh $(BUILD))

# bareperf bench (test/e2e/bench_code.sh): snippets measured exactly under
# -icount, faults and the watchdog in one boot, errors before sending.
HOST_TESTS += $(BUILD)/host/bench_code

$(BUILD)/host/bench_code: test/e2e/bench_code.sh test/e2e/bench_code_batch.txt $(BUILD)/bareperf \
		$(BUILD)/kernel.elf
	$(call gen_script,sh test/e2e/bench_code.sh $(BUILD))

# bareperf bench running nanoBench's -msr_config whole (test/e2e/bench_config.sh):
# MSRs written and put back, read like counters, a faulting line refused
# alone, more than 64 events in runs, under -icount.
HOST_TESTS += $(BUILD)/host/bench_config

$(BUILD)/host/bench_config: test/e2e/bench_config.sh $(BUILD)/bareperf $(BUILD)/kernel.elf
	$(call gen_script,sh test/e2e/bench_config.sh $(BUILD))

# A stop signal (SIGINT, SIGTERM, SIGHUP) to bench, record --qemu and stat
# --qemu ends their QEMU and removes its directory (test/e2e/bench_signal.py:
# tools/util/sigclean.c).
HOST_TESTS += $(BUILD)/host/bench_signal

$(BUILD)/host/bench_signal: test/e2e/bench_signal.py test/e2e/e2e_common.py $(BUILD)/bareperf \
		$(BUILD)/kernel.elf
	$(call gen_script,$(PYTHON) test/e2e/bench_signal.py $(BUILD))

# bareperf bench's saved state (test/e2e/bench_state.sh): hostile snippets
# in one boot, each reported, the snippet after each measured exactly.
HOST_TESTS += $(BUILD)/host/bench_state

$(BUILD)/host/bench_state: test/e2e/bench_state.sh $(BUILD)/bareperf $(BUILD)/kernel.elf
	$(call gen_script,sh test/e2e/bench_state.sh $(BUILD))

# bareperf bench against the kernel's entry paths (test/e2e/bench_entry.sh):
# INT n to exception and interrupt vectors, SWAPGS, CR0.TS/EM and
# CR4.OSFXSR, each reported and the next snippet measured in the same boot.
HOST_TESTS += $(BUILD)/host/bench_entry

$(BUILD)/host/bench_entry: test/e2e/bench_entry.sh $(BUILD)/bareperf $(BUILD)/kernel.elf
	$(call gen_script,sh test/e2e/bench_entry.sh $(BUILD))

# bareperf bench's machine state (test/e2e/bench_regs.sh): the registers'
# guarded areas, R14's size, nanoBench's init, drain and output options.
HOST_TESTS += $(BUILD)/host/bench_regs

$(BUILD)/host/bench_regs: test/e2e/bench_regs.sh $(BUILD)/bareperf $(BUILD)/kernel.elf
	$(call gen_script,sh test/e2e/bench_regs.sh $(BUILD))

# record -- FILE.c and bench -code_c (test/e2e/program_record.py, with
# test/programs/): in QEMU and over a pty (two programs in one boot, a
# 100 KB load timed), and each refusal: a compile error, no object, an
# undefined symbol, a fault.
HOST_TESTS += $(BUILD)/host/program_record

$(BUILD)/host/program_record: test/e2e/program_record.py test/e2e/e2e_common.py \
		$(BUILD)/bareperf $(BUILD)/kernel.elf $(wildcard test/programs/*.c)
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec %s test/e2e/program_record.py %s\n' \
		$(CURDIR) $(PYTHON) $(BUILD) > $@
	$(Q)chmod +x $@

# bareperf bench --check (test/e2e/bench_check.sh): nanoBench's -config and
# -msr_config lines parsed and laid out in runs, no machine booted.
HOST_TESTS += $(BUILD)/host/bench_check

$(BUILD)/host/bench_check: test/e2e/bench_check.sh $(BUILD)/bareperf
	$(call gen_script,sh test/e2e/bench_check.sh $(BUILD))

# bareperf bench --tty, QEMU's UART on a pty for the cable: exact results,
# a fault, and the machine lost (its row asks for a reset, the rest not
# sent) in two boots (test/e2e/bench_tty.py; needs build/bareperf and
# build/kernel.elf).
HOST_TESTS += $(BUILD)/host/bench_tty

$(BUILD)/host/bench_tty: test/e2e/bench_tty.py test/e2e/e2e_common.py $(BUILD)/bareperf \
		$(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec %s test/e2e/bench_tty.py %s\n' \
		$(CURDIR) $(PYTHON) $(BUILD) > $@
	$(Q)chmod +x $@

$(BUILD)/bench/uart_bench: test/e2e/pacing.py
	$(call gen_script,$(PYTHON) test/e2e/pacing.py --bench)

BENCH_DEPS += $(BUILD)/bench/uart_bench $(BUILD)/bareperf
BENCH_CMDS += $(BUILD)/bench/uart_bench

# make bench's driver (tools/bench/run_all.sh) against stand-in benchmarks.
HOST_TESTS += $(BUILD)/host/bench_driver

$(BUILD)/host/bench_driver: test/bench_driver_test.sh tools/bench/run_all.sh
	$(call gen_script,sh test/bench_driver_test.sh)

RUNNER := $(PYTHON) test/runner.py --build $(BUILD)

# HOST_TESTS grows in fragments included after this one: the prerequisite
# lists expand it a second time, once every fragment has been read.
.SECONDEXPANSION:
test-host: check-deps $$(HOST_TESTS)
	$(Q)$(RUNNER) --host $(HOST_TESTS) $(if $(ONLY),--only-host '$(ONLY)')

test-guest: check-deps kernel esp
	$(Q)$(RUNNER) --guest $(if $(ONLY),--only '$(ONLY)')

# Everything, one verdict: the last line is "N passed, N failed, N skipped".
test: check-deps $$(HOST_TESTS) kernel esp
	$(Q)$(RUNNER) --host $(HOST_TESTS) --guest $(if $(ONLY),--only '$(ONLY)')

# The guest PMU suite under KVM with the host's PMU (a real Linux host);
# kvm_bench_add drives build/bareperf.
test-kvm: check-deps kernel tools
	$(Q)$(RUNNER) --kvm $(if $(ONLY),--only '$(ONLY)')


# virtio: PCI enumeration and the virtio-console driver (test/guest/test_virtio.c).
APP_C += test/guest/test_virtio.c
# make bench: virtio_mb_per_s, the median of three 16 MiB bulk writes
# through virtio-console into a host file under TCG (test/bench_virtio.py).
# BENCH_CMDS takes one word per command: a generated script.
$(BUILD)/bench/virtio_bench: test/bench_virtio.py
	$(call gen_script,$(PYTHON) test/bench_virtio.py --build $(BUILD))

BENCH_DEPS += $(BUILD)/kernel.elf $(BUILD)/bench/virtio_bench
BENCH_CMDS += $(BUILD)/bench/virtio_bench

# make bench: the booted kernel's figures (test/bench_guest.py): the soft
# PMU's NMI path in instructions under -icount (test_profile -- cost),
# kernel_init_ms, and bench's time per snippet in one --batch boot.
$(BUILD)/bench/guest_bench: test/bench_guest.py
	$(call gen_script,$(PYTHON) test/bench_guest.py --build $(BUILD))

BENCH_DEPS += $(BUILD)/kernel.elf $(BUILD)/bareperf $(BUILD)/bench/guest_bench
BENCH_CMDS += $(BUILD)/bench/guest_bench

# The screen console: its drawing on the host (test/host/kernel.mk); QEMU's
# screendump of real boots, read back cell by cell against the font
# (test/e2e/fbconsole.py, in uefi_suite.py below).

# The host-side OVMF boots, at once (test/e2e/uefi_suite.py): the screen
# console read back from QEMU's screendump (fbconsole.py); firmware noise
# kept off the terminal by `bareperf record --uefi` and bpqemu.py
# (fwnoise.py); build/bareperf.img booted as a USB stick, and Secure Boot
# with OVMF's secure-boot build (bootimage.py).
HOST_TESTS += test/e2e/uefi_suite.py
# The soft PMU's coverage on a UEFI boot (make run's: the suite, -g) against
# PVH boots of the same minute, and the boot's first writes to RAM
# (test/e2e/uefi_coverage.py): apart from uefi_suite.py, whose three
# boots at once would leave no CPU to judge coverage by.
HOST_TESTS += test/e2e/uefi_coverage.py
test test-host: $(BUILD)/bareperf esp image
