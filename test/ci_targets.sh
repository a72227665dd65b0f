#!/bin/sh
# ci_targets.sh — every make target a user can type, in a short form, so
# that none of them rots unnoticed (.ci/run runs this after `make test`).
# One TAP line per target; the last line is "N passed, N failed, N skipped";
# exit status 1 on any failure. Outputs and logs go to build/ci/.
#
#   bench QUICK=1             every benchmark runs and prints its BENCH lines
#   image                     the GPT disk image, checked with sgdisk and mtools
#   fuzz, fuzz-*              each libFuzzer target for FUZZ_TIME=10 s
#   test-kvm                  the real-PMU suite: here, where KVM has no PMU,
#                             every test must SKIP with its reason, none pass
#   run UEFI=0, run UEFI=1    make run with a short app (loopnest)
#   install PREFIX=...        into build/ci/prefix; the installed binary lists
#                             the installed kernel's apps from an empty directory
#   test-host ONLY=..., test-guest ONLY=..., the folders' own targets, check-deps,
#   kernel, esp, tools, clean (in a scratch BUILD)
#
# Usage: sh test/ci_targets.sh [TARGET-REGEX]   (from the repository root)
set -u
only=${1:-}
B=build
LOG=$B/ci
mkdir -p "$LOG"
n=0 npass=0 nfail=0 nskip=0
MAKE=${MAKE:-make}
# The benchmarks, through make bench or their folders' targets: quick mode.
export BENCH_QUICK=1

verdict() {	# verdict STATUS NAME [DETAIL]
	n=$((n + 1))
	case $1 in
	ok) npass=$((npass + 1)); echo "ok $n - $2${3:+: $3}" ;;
	skip) nskip=$((nskip + 1)); echo "ok $n - $2 # SKIP ${3:-}" ;;
	*) nfail=$((nfail + 1)); echo "not ok $n - $2${3:+: $3}" ;;
	esac
}

# target NAME CHECK MAKE-ARGS...: run make MAKE-ARGS into $LOG/NAME.log,
# then the shell function CHECK (exit status of make in $rc, the log in
# $log); a failure shows the log's tail.
target() {
	name=$1 check=$2
	shift 2
	if [ -n "$only" ] && ! echo "$name" | grep -Eq -- "$only"; then
		return
	fi
	log=$LOG/$(echo "$name" | tr ' =/' '__-').log
	t0=$(date +%s)
	$MAKE "$@" > "$log" 2>&1 < /dev/null
	rc=$?
	took=$(( $(date +%s) - t0 ))
	why=$($check)
	if [ -z "$why" ]; then
		verdict ok "make $name ($took s)"
	else
		verdict fail "make $name ($took s)" "$why"
		tail -n 30 "$log" | sed 's/^/# /'
	fi
}

status_ok() { [ "$rc" -eq 0 ] || echo "make exited with status $rc"; }

bench_ok() {
	status_ok
	grep -q '^# make bench: .* BENCH lines, .* (quick)$' "$log" ||
		echo "no summary line from tools/bench/run_all.sh"
}

image_ok() {
	img=$B/bareperf.img
	status_ok
	[ -s "$img" ] || { echo "no $img"; return; }
	PATH=$PATH:/usr/sbin:/sbin
	sgdisk -v "$img" 2>&1 | grep -q 'No problems found' || echo "sgdisk -v finds problems"
	part=$(sgdisk -i 1 "$img" 2>/dev/null)
	echo "$part" | grep -q 'Partition GUID code: C12A7328-F81F-11D2-BA4B-00A0C93EC93B' ||
		echo "partition 1 is not an EFI system partition"
	echo "$part" | grep -q '^First sector: 2048 ' || echo "partition 1 does not start at 2048"
	mdir -i "$img@@1M" -b ::/EFI/BOOT 2>/dev/null | grep -qi 'BOOTX64.EFI' ||
		echo "no EFI/BOOT/BOOTX64.EFI in the FAT"
	mcopy -n -i "$img@@1M" ::/kernel.elf "$LOG/image-kernel.elf" 2>/dev/null &&
		cmp -s "$LOG/image-kernel.elf" "$B/kernel.elf" ||
		echo "kernel.elf in the image differs from $B/kernel.elf"
	mcopy -n -i "$img@@1M" ::/EFI/BOOT/BOOTX64.EFI "$LOG/image-boot.efi" 2>/dev/null &&
		cmp -s "$LOG/image-boot.efi" "$B/boot/BOOTX64.EFI" ||
		echo "BOOTX64.EFI in the image differs from $B/boot/BOOTX64.EFI"
	rm -f "$LOG/image-kernel.elf" "$LOG/image-boot.efi"
}

fuzz_ok() {
	status_ok
	grep -q '^Done [0-9]* runs' "$log" || echo "libFuzzer did not finish its run"
}

# No usable /dev/kvm with a PMU here: every test SKIPs with the reason and
# none counts as a pass; the runner exits 0 (nothing failed). Where KVM
# has a PMU, the suite runs for real and must pass.
kvm_ok() {
	status_ok
	total=$(tail -n 1 "$log")
	if grep -q '^SKIP ' "$log"; then
		echo "$total" | grep -Eq '^0 passed, 0 failed, [1-9][0-9]* skipped$' ||
			echo "skipping, but the totals say '$total'"
		grep '^SKIP ' "$log" | grep -qv '^SKIP guest/[^:]*: ..*' && echo "a SKIP without a reason"
		grep -q '^PASS ' "$log" && echo "a PASS line beside the SKIPs"
	else
		echo "$total" | grep -Eq '^[1-9][0-9]* passed, 0 failed' ||
			echo "ran, but the totals say '$total'"
	fi
}

run_ok() {
	status_ok
	grep -q '^make run: wrote$' "$log" || echo "no 'make run: wrote'"
	[ -s "$B/out/capture.bpc" ] && [ -s "$B/out/perf.data" ] && [ -s "$B/out/flamegraph.svg" ] ||
		echo "capture.bpc, perf.data or flamegraph.svg missing in $B/out"
	grep -Eq '^ +[0-9.]+% +[0-9]+ +(matmul|sieve|checksum)' "$log" ||
		echo "the report shows none of loopnest's functions"
	# make run records call chains: its stacks reach from the entry to the
	# app's loops (kmain ... loopnest's main ... matmul), 3 frames or more.
	depth=$("$B/bareperf" convert -i "$B/out/capture.bpc" --to folded 2>/dev/null |
		awk '{ n = gsub(/;/, ";"); if (n + 1 > d) d = n + 1 } END { print d + 0 }')
	[ "$depth" -ge 3 ] || echo "the deepest stack of make run's capture has $depth frames"
}

tap_ok() {
	status_ok
	grep -Eq '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' "$log" ||
		echo "totals: $(tail -n 1 "$log")"
}

tap_any_ok() {	# the folder targets that print TAP themselves
	status_ok
	grep -q '^not ok' "$log" && echo "a failing check"
	grep -q '^ok ' "$log" || echo "no passing check"
}

install_ok() {
	status_ok
	p=$(cd "$LOG/prefix" 2>/dev/null && pwd -P)
	[ -x "$p/bin/bareperf" ] || { echo "no $LOG/prefix/bin/bareperf"; return; }
	cmp -s "$p/lib/bareperf/kernel.elf" "$B/kernel.elf" ||
		echo "$LOG/prefix/lib/bareperf/kernel.elf differs from $B/kernel.elf"
	mkdir -p "$LOG/install-empty"
	(cd "$LOG/install-empty" && "$p/bin/bareperf" list-apps 2>&1) | grep -q '^  loopnest ' ||
		echo "the installed bareperf list-apps does not list loopnest"
	rm -rf "$LOG/prefix" "$LOG/install-empty"
}

clean_ok() {
	status_ok
	[ ! -e "$LOG/clean-build" ] || echo "$LOG/clean-build still exists"
}

echo "# ci_targets: $(date -u +%H:%M:%S) UTC"
target "bench QUICK=1" bench_ok bench QUICK=1
target "image" image_ok image
target "fuzz FUZZ_TIME=10" fuzz_ok fuzz FUZZ_TIME=10
target "fuzz-session FUZZ_TIME=10" fuzz_ok fuzz-session FUZZ_TIME=10
target "fuzz-trace FUZZ_TIME=10" fuzz_ok fuzz-trace FUZZ_TIME=10
target "fuzz-cmd FUZZ_TIME=10" fuzz_ok fuzz-cmd FUZZ_TIME=10
target "test-kvm" kvm_ok test-kvm
target "run UEFI=0 APP=loopnest" run_ok run UEFI=0 APP=loopnest
target "run UEFI=1 APP=loopnest" run_ok run UEFI=1 APP=loopnest
target "test-guest ONLY=^boot" tap_ok test-guest ONLY='^boot'
rm -rf "$LOG/prefix"
target "install PREFIX=$LOG/prefix" install_ok install PREFIX="$(pwd)/$LOG/prefix"
target "wire-test" tap_ok wire-test
target "convert-test" tap_ok convert-test
target "ringbuf-test" tap_any_ok ringbuf-test
target "wire-bench" status_ok wire-bench
target "ringbuf-bench" status_ok ringbuf-bench
target "convert-bench" status_ok convert-bench
target "check-deps" status_ok check-deps
target "kernel esp tools" status_ok kernel esp tools
# make test ran every host test already: here the target's own path, on
# a few quick ones.
target "test-host ONLY=..." tap_ok test-host ONLY='check_layers|sdk_exports|test_pt|program_elf'
# clean, on a scratch BUILD that holds something.
mkdir -p "$LOG/clean-build/k" && : > "$LOG/clean-build/k/x.o"
target "clean" clean_ok BUILD="$LOG/clean-build" clean
echo "1..$n"
echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
