#!/bin/sh
# The Debian packages bareperf needs, in one place.
#   tools/deps.sh list      print them
#   tools/deps.sh check     say which are missing (exit 1 if any)
#   tools/deps.sh install   apt-get install them (needs root)
#   tools/deps.sh ensure    what make run and make test do first: nothing if
#                           all are there, else install them when it can
#                           (as root, or through sudo -n without a password
#                           prompt), else print the one command that does
set -eu

# clang's runtime (libFuzzer, the sanitizers) must be the installed clang's
# own version: libclang-rt-N-dev for clang N; before clang is installed,
# libclang-rt-dev, which follows the distribution's default clang as the
# clang package does (Debian 12: 14, Debian 13: 19, Ubuntu 24.04: 18).
clang_rt() {
	v=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' |
		head -n 1)
	if [ -n "$v" ]; then echo "libclang-rt-$v-dev"; else echo libclang-rt-dev; fi
}

# Installed with the rest (make deps, CI) but not asked for by check and
# ensure: only a test uses them, and it SKIPs, saying so, where they are
# missing. golang-go: `go tool pprof` reads convert --to pprof (about
# 80 MB to download, 450 MB installed).
TEST_ONLY="golang-go"

PACKAGES="build-essential nasm gnu-efi qemu-system-x86 ovmf mtools dosfstools gdisk
	python3 libcmocka-dev libck-dev valgrind libelf-dev libdw-dev libpfm4-dev
	clang $(clang_rt) libcapstone-dev libipt-dev linux-perf
	console-setup-linux sbsigntool openssl zlib1g-dev $TEST_ONLY"

# command-or-file:package (set -f: globs stay unexpanded until the check).
# BAREPERF_DEPS_CHECKS and BAREPERF_APT_GET stand in for CHECKS and
# apt-get in the tests (test/e2e/cli.sh).
CHECKS=${BAREPERF_DEPS_CHECKS:-"gcc:build-essential nasm:nasm /usr/include/efi/efi.h:gnu-efi
	qemu-system-x86_64:qemu-system-x86 /usr/share/OVMF/OVMF_CODE_4M.fd:ovmf
	mformat:mtools mkfs.fat:dosfstools sgdisk:gdisk python3:python3
	/usr/include/cmocka.h:libcmocka-dev /usr/include/ck_ring.h:libck-dev
	valgrind:valgrind /usr/include/libelf.h:libelf-dev
	/usr/include/elfutils/libdw.h:libdw-dev /usr/include/perfmon/pfmlib.h:libpfm4-dev
	clang:clang
	/usr/include/capstone/capstone.h:libcapstone-dev /usr/include/intel-pt.h:libipt-dev
	perf:linux-perf /usr/share/consolefonts/Lat15-Terminus16.psf.gz:console-setup-linux
	sbsign:sbsigntool openssl:openssl /usr/include/zlib.h:zlib1g-dev"}

APT_GET=${BAREPERF_APT_GET:-apt-get}

missing() {
	{
	set -f
	for c in $CHECKS; do
		set +f
		what=${c%%:*} pkg=${c#*:}
		case $what in
		/*) ls $what >/dev/null 2>&1 || echo "$pkg" ;;	# paths may hold a glob
		*) command -v "$what" >/dev/null 2>&1 || [ -x "/usr/sbin/$what" ] || [ -x "/sbin/$what" ] || echo "$pkg" ;;
		esac
	done
	# libFuzzer: whether clang links a fuzzer, wherever its runtime lives
	if command -v clang >/dev/null 2>&1; then
		t=$(mktemp -d)
		printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' \
			> "$t/f.c"
		clang -fsanitize=fuzzer "$t/f.c" -o "$t/f" >/dev/null 2>&1 || clang_rt
		rm -rf "$t"
	fi
	} | sort -u
}

# Debian 12 ("bookworm"): add bookworm-backports to the machine's existing
# Debian source entry (deb822 or one-line format), never a new host name.
BACKPORTS=
backports() {
	[ -z "${BAREPERF_APT_GET:-}" ] || return 0	# a test's stand-in: leave apt alone
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
ensure)
	m=$(missing)
	[ -z "$m" ] && exit 0
	echo "bareperf needs these Debian packages: $(echo $m)" >&2
	if [ "$(id -u)" = 0 ]; then
		echo "installing them (tools/deps.sh install)" >&2
		exec sh "$0" install
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		echo "installing them with sudo (tools/deps.sh install)" >&2
		exec sudo -n sh "$0" install
	fi
	echo "install them with:  sudo make deps" >&2
	exit 1 ;;
install)
	backports
	$APT_GET update
	DEBIAN_FRONTEND=noninteractive $APT_GET install -y $PACKAGES
	# clang may be new: its own runtime (an older clang's is no use to it)
	DEBIAN_FRONTEND=noninteractive $APT_GET install -y "$(clang_rt)"
	# QEMU >= 8.1 gives x2APIC under TCG, and a newer OVMF: take both from
	# the backports suite where the machine is on Debian 12.
	if [ -n "$BACKPORTS" ]; then
		DEBIAN_FRONTEND=noninteractive $APT_GET install -y -t "$BACKPORTS" \
			qemu-system-x86 ovmf
	fi ;;
*)
	echo "usage: $0 list|check|ensure|install" >&2
	exit 2 ;;
esac
