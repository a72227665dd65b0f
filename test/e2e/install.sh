#!/bin/sh
# install.sh — an installed bareperf works anywhere: make install into a
# scratch PREFIX, the PREFIX moved elsewhere, then from an empty directory
# the installed binary alone: cflags (-I PREFIX/include), list-apps and
# record --qemu (the kernel from PREFIX/lib/bareperf), report on that
# capture, record --uefi (the ESP from PREFIX/lib/bareperf/esp), a C file
# compiled with $(bareperf cflags) against PREFIX/include/bareperf.h;
# BAREPERF_LIBDIR and -k over the defaults; the build tree's binary finds
# the tree's include/. Prints TAP.
#
# Usage: sh test/e2e/install.sh [BUILD_DIR]   (from the repository root)

. "$(dirname "$0")/e2e_common.sh"	# TAP: ok, not_ok, check, finish
e2e_setup install "${1:-}"

# Physical paths: the binary names its directories as /proc/self/exe does.
TOP=$(pwd -P)
AOUT=$(cd "$OUT" && pwd -P)
make install PREFIX="$AOUT/staged" BUILD="$B" > "$OUT/install.log" 2>&1
rc=$?
# Relocated: the binary finds its files from where it is, not from where
# it was installed or built.
P=$AOUT/prefix
[ $rc -eq 0 ] && mv "$AOUT/staged" "$P"
check "make install PREFIX=...: bin/bareperf, lib/bareperf/kernel.elf, the ESP's loader" \
	"$OUT/install.log" sh -c "test $rc -eq 0 && test -x '$P/bin/bareperf' &&
	cmp -s '$P/lib/bareperf/kernel.elf' '$B/kernel.elf' &&
	test -s '$P/lib/bareperf/esp/EFI/BOOT/BOOTX64.EFI' &&
	cmp -s '$P/lib/bareperf/esp/kernel.elf' '$B/kernel.elf'"
[ -x "$P/bin/bareperf" ] || finish

# Everything below runs in an empty directory, far from the tree.
E=$AOUT/empty
mkdir -p "$E"
cd "$E" || finish
IBP=$P/bin/bareperf

"$IBP" cflags > cflags.txt 2>&1
check "installed bareperf cflags: the SDK flags, -I PREFIX/include last" cflags.txt \
	grep -qx -- "-std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie -mcmodel=kernel \
-mno-red-zone -fno-stack-protector -fno-omit-frame-pointer -fno-asynchronous-unwind-tables \
-msse2 -I$P/include" cflags.txt

"$IBP" list-apps > apps.txt 2>&1
check "installed bareperf list-apps: the apps of PREFIX/lib/bareperf/kernel.elf" apps.txt \
	grep -q '^  loopnest ' apps.txt

"$IBP" record --qemu --icount -q -o loop.bpc -- loopnest > record.log 2>&1
rc=$?
check "installed bareperf record --qemu -- loopnest: a capture and its kernel beside it" \
	record.log sh -c "test $rc -eq 0 && test -s loop.bpc &&
	cmp -s loop.kernel.elf '$P/lib/bareperf/kernel.elf'"

"$IBP" report -i loop.bpc --stdio > report.txt 2>&1
check "installed bareperf report: loopnest's functions, symbolized" report.txt \
	grep -Eq '^ +[0-9.]+% +[0-9]+ +(matmul|sieve)' report.txt

"$IBP" record --qemu --uefi -q -o uefi.bpc -- loopnest > uefi.log 2>&1
rc=$?
check "installed bareperf record --uefi: OVMF boots PREFIX/lib/bareperf/esp's loader" \
	uefi.log sh -c "test $rc -eq 0 && test -s uefi.bpc"

BAREPERF_LIBDIR=$E/nowhere "$IBP" list-apps > libdir.txt 2>&1
check "BAREPERF_LIBDIR names the kernel's directory instead" libdir.txt \
	grep -q "$E/nowhere/kernel.elf" libdir.txt
BAREPERF_LIBDIR=$E/nowhere "$IBP" list-apps -k "$P/lib/bareperf/kernel.elf" > k.txt 2>&1
check "-k wins over the defaults" k.txt grep -q '^  loopnest ' k.txt

if [ -f "$P/include/bareperf.h" ]; then
	printf '%s\n' '#include <bareperf.h>' \
		'int main(int argc, char **argv)' \
		'{' \
		'	printf("%s on %u CPUs\n", argc ? argv[0] : "x", bp_cpus());' \
		'	return 0;' \
		'}' > x.c
	${CC:-cc} -c $("$IBP" cflags) x.c -o x.o > cc.log 2>&1
	rc=$?
	check "cc -c \$(bareperf cflags) x.c against PREFIX/include/bareperf.h" cc.log \
		sh -c "test $rc -eq 0 && test -s x.o"
else
	skip "cc -c \$(bareperf cflags) x.c" "no include/bareperf.h in the tree to install yet"
fi

cd "$TOP" || finish
"$BP" cflags > "$OUT/tree_cflags.txt" 2>&1
check "the build tree's bareperf cflags: -I the tree's include/" "$OUT/tree_cflags.txt" \
	grep -q -- " -I$TOP/include\$" "$OUT/tree_cflags.txt"
finish
