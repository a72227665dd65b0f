#!/bin/sh
# The Debian packages bareperf needs, in one place.
#   tools/deps.sh list      print them
#   tools/deps.sh check     say which are missing (exit 1 if any)
#   tools/deps.sh install   apt-get install them (needs root)
set -eu

PACKAGES="build-essential nasm gnu-efi qemu-system-x86 ovmf mtools dosfstools gdisk
	python3 libcmocka-dev libck-dev valgrind libelf-dev libdw-dev libpfm4-dev
	clang libclang-rt-14-dev libcapstone-dev libipt-dev linux-perf
	console-setup-linux sbsigntool openssl"

# command-or-file:package (set -f: globs stay unexpanded until the check)
CHECKS="gcc:build-essential nasm:nasm /usr/include/efi/efi.h:gnu-efi
	qemu-system-x86_64:qemu-system-x86 /usr/share/OVMF/OVMF_CODE_4M.fd:ovmf
	mformat:mtools mkfs.fat:dosfstools sgdisk:gdisk python3:python3
	/usr/include/cmocka.h:libcmocka-dev /usr/include/ck_ring.h:libck-dev
	valgrind:valgrind /usr/include/libelf.h:libelf-dev
	/usr/include/elfutils/libdw.h:libdw-dev /usr/include/perfmon/pfmlib.h:libpfm4-dev
	clang:clang /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a:libclang-rt-14-dev
	/usr/include/capstone/capstone.h:libcapstone-dev /usr/include/intel-pt.h:libipt-dev
	perf:linux-perf /usr/share/consolefonts/Lat15-Terminus16.psf.gz:console-setup-linux
	sbsign:sbsigntool openssl:openssl"

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

# Debian 12 ("bookworm"): add bookworm-backports to the machine's existing
# Debian source entry (deb822 or one-line format), never a new host name.
BACKPORTS=
backports() {
	. /etc/os-release 2>/dev/null || return 0
	[ "${ID:-}" = debian ] && [ "${VERSION_CODENAME:-}" = bookworm ] || return 0
	BACKPORTS=bookworm-backports
	f=/etc/apt/sources.list.d/debian.sources
	if [ -f "$f" ]; then
		grep -q "$BACKPORTS" "$f" ||
			sed -i "s/^Suites: bookworm bookworm-updates\$/& $BACKPORTS/" "$f"
		grep -q "$BACKPORTS" "$f" && return 0
	fi
	f=/etc/apt/sources.list
	if [ -f "$f" ] && ! grep -q "$BACKPORTS" "$f"; then
		line=$(grep -E '^deb [^ ]+ bookworm main' "$f" | head -n 1)
		[ -n "$line" ] && echo "$line" | sed "s/ bookworm / $BACKPORTS /" >>"$f"
	fi
	grep -qs "$BACKPORTS" /etc/apt/sources.list /etc/apt/sources.list.d/* || BACKPORTS=
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
	backports
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y $PACKAGES
	# QEMU >= 8.1 gives x2APIC under TCG, and a newer OVMF: take both from
	# the backports suite where the machine is on Debian 12.
	if [ -n "$BACKPORTS" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -t "$BACKPORTS" \
			qemu-system-x86 ovmf
	fi ;;
*)
	echo "usage: $0 list|check|install" >&2
	exit 2 ;;
esac
