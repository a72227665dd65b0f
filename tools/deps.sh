#!/bin/sh
# The Debian packages bareperf needs, in one place.
#   tools/deps.sh list      print them
#   tools/deps.sh check     say which are missing (exit 1 if any)
#   tools/deps.sh install   apt-get install them (needs root)
set -eu

PACKAGES="build-essential nasm gnu-efi qemu-system-x86 ovmf mtools dosfstools gdisk
	python3 libcmocka-dev libck-dev valgrind libelf-dev libdw-dev libpfm4-dev
	clang libclang-rt-14-dev libcapstone-dev libipt-dev linux-perf"

# command-or-file:package (set -f: globs stay unexpanded until the check)
CHECKS="gcc:build-essential nasm:nasm /usr/include/efi/efi.h:gnu-efi
	qemu-system-x86_64:qemu-system-x86 /usr/share/OVMF/OVMF_CODE_4M.fd:ovmf
	mformat:mtools mkfs.fat:dosfstools sgdisk:gdisk python3:python3
	/usr/include/cmocka.h:libcmocka-dev /usr/include/ck_ring.h:libck-dev
	valgrind:valgrind /usr/include/libelf.h:libelf-dev
	/usr/include/elfutils/libdw.h:libdw-dev /usr/include/perfmon/pfmlib.h:libpfm4-dev
	clang:clang /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a:libclang-rt-14-dev
	/usr/include/capstone/capstone.h:libcapstone-dev /usr/include/intel-pt.h:libipt-dev
	perf:linux-perf"

missing() {
	set -f
	for c in $CHECKS; do
		set +f
		what=${c%%:*} pkg=${c#*:}
		case $what in
		/*) ls $what >/dev/null 2>&1 || echo "$pkg" ;;	# paths may hold a glob
		*) command -v "$what" >/dev/null 2>&1 || [ -x "/usr/sbin/$what" ] || [ -x "/sbin/$what" ] || echo "$pkg" ;;
		esac
	done | sort -u
}

case "${1:-check}" in
list)
	echo $PACKAGES ;;
check)
	m=$(missing)
	if [ -n "$m" ]; then
		echo "bareperf needs these Debian packages: $(echo $m)" >&2
		echo "install them with:  sudo make deps   (or: apt-get install -y $(echo $m))" >&2
		exit 1
	fi ;;
install)
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y $PACKAGES ;;
*)
	echo "usage: $0 list|check|install" >&2
	exit 2 ;;
esac
