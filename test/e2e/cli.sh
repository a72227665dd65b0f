#!/bin/sh
# cli.sh — perf's command-line habits in bareperf, on real captures of
# loopnest (QEMU -icount, call chains, 1 and 2 CPUs): report's sort keys
# (sym, dso, srcline, cpu, comm, pid), -F, -n, --no-children,
# --header-only, --max-rows, a -C CPU not in the capture; stat -x SEP;
# list WORD; -i - on every command that reads a capture; report's hint
# when there is no capture; make run's call chains (CALLCHAIN=); the
# top-level help (convert's line names every --to format); the man pages
# rendered from each command's --help, and make install. Prints TAP.
#
# Usage: sh test/e2e/cli.sh [BUILD_DIR]   (from the repository root)

B=${1:-build}
BP=$B/bareperf
OUT=$B/test/cli
. "$(dirname "$0")/e2e_common.sh"	# TAP: ok, not_ok, check, finish

rm -rf "$OUT"
mkdir -p "$OUT"
AOUT=$(cd "$OUT" && pwd)
# Temporary files of this run alone (another run may share /tmp).
mkdir -p "$AOUT/tmp"
export TMPDIR="$AOUT/tmp"
if [ ! -x "$BP" ] || [ ! -f "$B/kernel.elf" ]; then
	not_ok "$BP and $B/kernel.elf are built (make)"
	finish
fi
cp "$B/kernel.elf" "$OUT/kernel.elf"
K=$OUT/kernel.elf
record() {	# record NAME EXTRA...
	rec=$1; shift
	"$BP" record --qemu --icount --kernel "$K" -q "$@" -o "$OUT/$rec.bpc" \
		-- loopnest > "$OUT/$rec.record.log" 2>&1
}
check "record loopnest on 1 and 2 CPUs" "$OUT/c2.record.log" \
	sh -c "true" && record c1 --call-graph fp && record c2 -g --smp 2
[ -s "$OUT/c1.bpc" ] && [ -s "$OUT/c2.bpc" ] || finish
R() { "$BP" report -k "$K" --stdio -q "$@"; }
rows() { awk '!/^#/ && $1 ~ /%$/'; }

# ---- report --sort ---------------------------------------------------------------
for cpu in 0 1; do
	R -i "$OUT/c2.bpc" --cpu $cpu 2>/dev/null | rows | awk -v c=$cpu '{ print c, $3, $2 }'
done | sort > "$OUT/by_cpu_filter"
R -i "$OUT/c2.bpc" --sort cpu,sym > "$OUT/sort_cpu.txt" 2>&1
rows < "$OUT/sort_cpu.txt" | awk '{ print $3, $4, $2 }' | sort > "$OUT/by_cpu_sort"
check "report --sort cpu,sym: a CPU column, rows = report --cpu N's" "$OUT/sort_cpu.txt" \
	sh -c "grep -q '^#  Overhead   Samples  CPU  Symbol' '$OUT/sort_cpu.txt' &&
	       test -s '$OUT/by_cpu_sort' && cmp -s '$OUT/by_cpu_filter' '$OUT/by_cpu_sort'"
R -i "$OUT/c2.bpc" --sort dso > "$OUT/sort_dso.txt" 2>&1
rows < "$OUT/sort_dso.txt" > "$OUT/sort_dso.rows"
check "report --sort dso: one image, 100%" "$OUT/sort_dso.txt" \
	sh -c "test \$(wc -l < '$OUT/sort_dso.rows') -eq 1 &&
	       grep -Eq '^ +100.00% +[0-9]+  kernel.elf\$' '$OUT/sort_dso.rows'"
R -i "$OUT/c1.bpc" --sort comm,pid > "$OUT/sort_comm.txt" 2>&1
check "report --sort comm,pid: the app and its run" "$OUT/sort_comm.txt" \
	grep -Eq '^ +100.00% +[0-9]+  loopnest +1$' "$OUT/sort_comm.txt"
R -i "$OUT/c1.bpc" --sort sym,srcline > "$OUT/sort_line.txt" 2>&1
check "report --sort sym,srcline: function and file:line columns" "$OUT/sort_line.txt" \
	grep -Eq '^ +[0-9.]+% +[0-9]+  (matmul|sieve) +apps/loopnest.c:[0-9]+$' "$OUT/sort_line.txt"
R -i "$OUT/c1.bpc" --sort nosuch > "$OUT/sort_bad.txt" 2>&1
check "report --sort nosuch: one error line naming the keys, status 2" "$OUT/sort_bad.txt" \
	sh -c "grep -q \"'nosuch' is not a sort key (sym, dso, srcline, cpu, comm, pid)\" \
		'$OUT/sort_bad.txt' && test \$(wc -l < '$OUT/sort_bad.txt') -eq 1"
R -i "$OUT/c1.bpc" --sort nosuch > /dev/null 2>&1
check "report --sort nosuch: status 2" /dev/null test $? -eq 2

# ---- report columns and habits -----------------------------------------------------
R -i "$OUT/c1.bpc" -F overhead,sym > "$OUT/fields.txt" 2>&1
rows < "$OUT/fields.txt" | awk 'NF != 2' > "$OUT/fields.bad"
check "report -F overhead,sym: those columns only" "$OUT/fields.txt" \
	sh -c "grep -q '^#  Overhead  Symbol\$' '$OUT/fields.txt' && test ! -s '$OUT/fields.bad'"
R -i "$OUT/c1.bpc" -F sample,period,cpu > "$OUT/fields2.txt" 2>&1
check "report -F sample,period,cpu: the keys among the fields sort the rows" "$OUT/fields2.txt" \
	sh -c "grep -q '^#   Samples          Period  CPU\$' '$OUT/fields2.txt' &&
	       test \$(grep -c '^ ' '$OUT/fields2.txt') -eq 1"
R -i "$OUT/c1.bpc" -F sym,nope > "$OUT/fields_bad.txt" 2>&1
check "report -F with an unknown field: one error line" "$OUT/fields_bad.txt" \
	grep -q "'nope' is not a field" "$OUT/fields_bad.txt"
R -i "$OUT/c1.bpc" -n > "$OUT/n.txt" 2>&1
check "report -n (--show-nr-samples) takes no value: a Samples column" "$OUT/n.txt" \
	grep -q '^#  Overhead   Samples  Symbol' "$OUT/n.txt"
R -i "$OUT/c1.bpc" -F overhead,sym -n > "$OUT/n2.txt" 2>&1
check "report -F overhead,sym -n: Samples joins the columns" "$OUT/n2.txt" \
	grep -q '^#  Overhead   Samples  Symbol' "$OUT/n2.txt"
# One row: loopnest's capture always has sieve and matmul, its other
# functions only as the samples fall (under -icount the sampling is
# periodic, and may miss the short checksum in every round).
R -i "$OUT/c1.bpc" --max-rows 1 > "$OUT/max.txt" 2>&1
rows < "$OUT/max.txt" > "$OUT/max.rows"
check "report --max-rows 1: one row and a note" "$OUT/max.txt" \
	sh -c "test \$(wc -l < '$OUT/max.rows') -eq 1 && grep -q 'more rows' '$OUT/max.txt'"
R -i "$OUT/c1.bpc" -g > "$OUT/children.txt" 2>&1
R -i "$OUT/c1.bpc" -g --no-children > "$OUT/nochildren.txt" 2>&1
rows < "$OUT/children.txt" > "$OUT/children.rows"
rows < "$OUT/nochildren.txt" > "$OUT/nochildren.rows"
check "report -g --no-children: no Children column, only functions with self samples" \
	"$OUT/nochildren.txt" \
	sh -c "grep -q '^#  Children      Self   Samples  Symbol' '$OUT/children.txt' &&
	       grep -q '^#  Overhead   Samples  Symbol' '$OUT/nochildren.txt' &&
	       ! grep -q 'kmain' '$OUT/nochildren.rows' && grep -q 'sieve' '$OUT/nochildren.rows' &&
	       grep -q 'kmain' '$OUT/children.rows'"
"$BP" report -k "$K" -i "$OUT/c1.bpc" --header-only > "$OUT/header.txt" 2>&1
rows < "$OUT/header.txt" > "$OUT/header.rows"
check "report --header-only: the metadata and losses, no table" "$OUT/header.txt" \
	sh -c "grep -q '^# capture: ' '$OUT/header.txt' && grep -q '^# losses: ' '$OUT/header.txt' &&
	       ! grep -q '^# event cpu-clock' '$OUT/header.txt' && test ! -s '$OUT/header.rows'"

# ---- -C naming a CPU that is not there --------------------------------------------
R -i "$OUT/c2.bpc" -C 5 > "$OUT/cpu5.txt" 2>&1
rc=$?
check "report -C 5 on a 2-CPU capture: says CPU 5 is not in it, status 1" "$OUT/cpu5.txt" \
	sh -c "test $rc -eq 1 && grep -q -- '--cpu 5: not in this capture (its CPUs: 0-1)' '$OUT/cpu5.txt'"
R -i "$OUT/c2.bpc" -C 1,5 > "$OUT/cpu15.txt" 2> "$OUT/cpu15.err"
rc=$?
check "report -C 1,5: a warning for 5, the rows of 1" "$OUT/cpu15.err" \
	sh -c "test $rc -eq 0 && grep -q 'warning: --cpu 5: not in this capture' '$OUT/cpu15.err' &&
	       grep -q ' ap_idle\$' '$OUT/cpu15.txt'"

# ---- no capture --------------------------------------------------------------------
mkdir -p "$OUT/empty"
ABP=$(cd "$(dirname "$BP")" && pwd)/$(basename "$BP")
(cd "$OUT/empty" && "$ABP" report) > "$OUT/nocap.txt" 2>&1
st=$?
check "report with no -i and no capture.bpc here: names the default file, suggests record and -i, status 1" \
	"$OUT/nocap.txt" sh -c "test $st -eq 1 && test \$(wc -l < '$OUT/nocap.txt') -eq 1 &&
	grep -q \"no capture.bpc here (the default input, in the current directory): record one with 'bareperf record \[-g\] -- APP', or name a capture with -i FILE\" '$OUT/nocap.txt'"

# ---- stdin ----------------------------------------------------------------------------
R -i "$OUT/c1.bpc" > "$OUT/file.txt" 2>&1
R -i - < "$OUT/c1.bpc" > "$OUT/stdin.txt" 2>&1
rows < "$OUT/file.txt" > "$OUT/file.rows"
rows < "$OUT/stdin.txt" > "$OUT/stdin.rows"
check "report -i -: the capture from standard input, the same rows" "$OUT/stdin.txt" \
	sh -c "test -s '$OUT/file.rows' && cmp -s '$OUT/file.rows' '$OUT/stdin.rows'"
"$BP" script -g -k "$K" -i - < "$OUT/c1.bpc" > "$OUT/script_stdin.txt" 2>&1
"$BP" script -g -k "$K" -i "$OUT/c1.bpc" > "$OUT/script_file.txt" 2>&1
check "script -i -: the same output" "$OUT/script_stdin.txt" \
	sh -c "test -s '$OUT/script_file.txt' && cmp -s '$OUT/script_file.txt' '$OUT/script_stdin.txt'"
"$BP" convert -k "$K" -i - --to folded < "$OUT/c1.bpc" > "$OUT/folded_stdin.txt" 2>&1
"$BP" convert -k "$K" -i "$OUT/c1.bpc" --to folded > "$OUT/folded_file.txt" 2>/dev/null
check "convert -i -: the same folded stacks" "$OUT/folded_stdin.txt" \
	sh -c "test -s '$OUT/folded_file.txt' && cmp -s '$OUT/folded_file.txt' '$OUT/folded_stdin.txt'"
"$BP" flamegraph -k "$K" -i - -o "$OUT/stdin.svg" < "$OUT/c1.bpc" > "$OUT/fg_stdin.txt" 2>&1
check "flamegraph -i -: an SVG" "$OUT/fg_stdin.txt" grep -q '<svg' "$OUT/stdin.svg"
"$BP" stat -i - < "$OUT/c1.bpc" > "$OUT/stat_stdin.txt" 2>&1
check "stat -i -: the counter table" "$OUT/stat_stdin.txt" \
	grep -q "Performance counter stats for 'loopnest'" "$OUT/stat_stdin.txt"
ls "$TMPDIR"/bareperf-stdin.* > "$OUT/leftover.txt" 2>/dev/null
check "-i -: no temporary file left behind" "$OUT/leftover.txt" test ! -s "$OUT/leftover.txt"

# ---- which CPU ran the app ------------------------------------------------------------
R -i "$OUT/c2.bpc" --header-only > "$OUT/hdr_c2.txt" 2>&1
"$BP" stat -i "$OUT/c2.bpc" > "$OUT/stat_c2.txt" 2>&1
check "--smp 2: one app line, on the CPU that ran it; the other CPU's table does not claim the app" \
	"$OUT/hdr_c2.txt" \
	sh -c "test \$(grep -c '^# app: ' '$OUT/hdr_c2.txt') -eq 1 &&
	       grep -q '^# app: loopnest (run 1) on cpu 0: ' '$OUT/hdr_c2.txt' &&
	       grep -q \"stats for 'loopnest' on cpu 0:\" '$OUT/stat_c2.txt' &&
	       grep -q \"stats for cpu 1 while 'loopnest' ran on cpu 0:\" '$OUT/stat_c2.txt'"
"$BP" script -i "$OUT/c2.bpc" --json 2>/dev/null | grep '"type":"APP_START"' > "$OUT/app_start_c2.txt"
check "--smp 2: each CPU's APP_START names the app's CPU itself (main_cpu 0)" "$OUT/app_start_c2.txt" \
	sh -c "test \$(grep -c '\"main_cpu\":0,' '$OUT/app_start_c2.txt') -eq 2"

# ---- what the tool says about its input -------------------------------------------------
"$BP" stat -i "$OUT/c1.bpc" -k "$K" > "$OUT/stat_k.txt" 2>&1
rc=$?
check "stat -i FILE -k: names the option that does not apply, not '-i and -- APP'" "$OUT/stat_k.txt" \
	sh -c "test $rc -eq 2 && grep -q \"'-k' is not an option of stat -i FILE\" '$OUT/stat_k.txt' &&
	       ! grep -q 'not both' '$OUT/stat_k.txt'"
"$BP" stat -i - < /dev/null > "$OUT/stat_empty.txt" 2>&1
"$BP" stat -i - < "$OUT/c1.bpc" >> "$OUT/stat_empty.txt" 2>&1
check "stat -i -: named (standard input), never the temporary file" "$OUT/stat_empty.txt" \
	sh -c "grep -q '^bareperf stat: (standard input): empty file' '$OUT/stat_empty.txt' &&
	       grep -q '^# capture: (standard input) (' '$OUT/stat_empty.txt' &&
	       ! grep -q 'bareperf-stdin' '$OUT/stat_empty.txt'"
R -i "$OUT/c1.bpc" --header > "$OUT/rep_header.txt" 2>&1
check "report --header -q: the header, then the report (perf's --header)" "$OUT/rep_header.txt" \
	sh -c "grep -q '^# capture: ' '$OUT/rep_header.txt' && grep -q '^# event cpu-clock' '$OUT/rep_header.txt'"
"$BP" report -i "$OUT/c1.bpc" -k /bin/ls --force --header-only > "$OUT/rep_force.txt" 2>&1
check "report --force -k OTHER: each build-id named with its owner" "$OUT/rep_force.txt" \
	sh -c "grep -Eq '^# kernel: /bin/ls, build-id [0-9a-f]+; DOES NOT MATCH the capture.s [0-9a-f]+ ' '$OUT/rep_force.txt'"
cp "$OUT/c1.bpc" "$OUT/esc.bpc"
printf '\033[31mred\033]0;title\007' | dd of="$OUT/esc.bpc" bs=1 seek=160 conv=notrunc 2>/dev/null
R -i "$OUT/esc.bpc" --header-only > "$OUT/rep_esc.txt" 2>&1
check "report --header-only: control bytes of the capture's header fields escaped (\\x1b)" "$OUT/rep_esc.txt" \
	sh -c "grep -q 'x1b\[31mred' '$OUT/rep_esc.txt' && ! grep -q \"\$(printf '\033')\" '$OUT/rep_esc.txt' &&
	       ! grep -q \"\$(printf '\007')\" '$OUT/rep_esc.txt'"

# ---- stat -x -------------------------------------------------------------------------
"$BP" stat -x, -k "$K" --icount -- loopnest > "$OUT/stat_x.txt" 2> "$OUT/stat_x.err"
rc=$?
check "stat -x, -- loopnest: perf's CSV, 7 fields a line, task-clock in msec and its metric" \
	"$OUT/stat_x.err" \
	sh -c "test $rc -eq 0 && test -s '$OUT/stat_x.txt' &&
	       ! awk -F, 'NF != 7' '$OUT/stat_x.txt' | grep -q . &&
	       grep -Eq '^[0-9]+\.[0-9]{2},msec,task-clock,[0-9]+,100.00,[0-9.]+,CPUs utilized\$' '$OUT/stat_x.txt'"
"$BP" stat -e instructions,task-clock -k "$K" --icount -- loopnest > "$OUT/stat_ns.txt" 2> "$OUT/stat_ns.err"
rc=$?
check "stat -e instructions,task-clock without a PMU: task-clock counted, instructions <not supported>" \
	"$OUT/stat_ns.err" \
	sh -c "test $rc -eq 0 && grep -Eq '^ +<not supported> +instructions\$' '$OUT/stat_ns.txt' &&
	       grep -Eq '^ +[0-9,]+ ns +task-clock ' '$OUT/stat_ns.txt' &&
	       grep -q 'no PMU for instructions on this machine: counting task-clock' '$OUT/stat_ns.err'"
"$BP" stat -r 2 -k "$K" --icount -- loopnest > "$OUT/stat_r.txt" 2>&1
"$BP" stat -x, -i "$OUT/c1.bpc" -i "$OUT/c1.bpc" > "$OUT/stat_rx.txt" 2>&1
check "stat -r 2: perf's ( +- x.xx% ) spread, said what it is; -x, with two runs: 8 fields, the spread" \
	"$OUT/stat_r.txt" \
	sh -c "grep -Eq '^ +[0-9,]+ ns +task-clock +# [0-9.]+ CPUs utilized +\( \+- [0-9]+\.[0-9]{2}% \)' '$OUT/stat_r.txt' &&
	       grep -q 'standard error of the runs' '$OUT/stat_r.txt' &&
	       ! awk -F, 'NF != 8' '$OUT/stat_rx.txt' | grep -q . &&
	       grep -Eq '^[0-9.]+,ns,duration,[0-9]+,100.00,0.00%,' '$OUT/stat_rx.txt'"
"$BP" stat -x ';' -i "$OUT/c1.bpc" > "$OUT/stat_x2.txt" 2>&1
check "stat -x ';' -i CAPTURE: fields separated by ;" "$OUT/stat_x2.txt" \
	sh -c "grep -q ';ns;duration;' '$OUT/stat_x2.txt' && ! grep -q '^#' '$OUT/stat_x2.txt'"

# ---- list WORD ------------------------------------------------------------------------
"$BP" list clock > "$OUT/list_clock.txt" 2>&1
check "list clock: cpu-clock and task-clock, nothing else" "$OUT/list_clock.txt" \
	sh -c "grep -q '^  cpu-clock ' '$OUT/list_clock.txt' && grep -q '^  task-clock ' '$OUT/list_clock.txt' &&
	       ! grep -q '^  cycles ' '$OUT/list_clock.txt' && ! grep -q '^  tsc ' '$OUT/list_clock.txt'"
"$BP" list > "$OUT/list.txt" 2>&1
check "list: the software events tsc and task-clock are listed" "$OUT/list.txt" \
	sh -c "grep -q '^  tsc ' '$OUT/list.txt' && grep -q '^  task-clock ' '$OUT/list.txt' &&
	       grep -q '^  cycles ' '$OUT/list.txt'"

"$BP" list hw > "$OUT/list_hw.txt" 2>&1
"$BP" list sw > "$OUT/list_sw.txt" 2>&1
"$BP" list tracepoint > "$OUT/list_tp.txt" 2>&1
rc=$?
check "list hw, list sw: perf's classes, the hardware or the software events; tracepoint refused" \
	"$OUT/list_hw.txt" \
	sh -c "grep -q '^  cycles ' '$OUT/list_hw.txt' && grep -q '^  cache-misses ' '$OUT/list_hw.txt' &&
	       ! grep -q '^  task-clock ' '$OUT/list_hw.txt' && grep -q '^  task-clock ' '$OUT/list_sw.txt' &&
	       ! grep -q '^  cycles ' '$OUT/list_sw.txt' && test $rc -eq 2 &&
	       grep -q 'no tracepoints' '$OUT/list_tp.txt'"
"$BP" list UOPS_ISSUED > "$OUT/list_uops.txt" 2>&1
if grep -q 'need libpfm4' "$OUT/list_uops.txt"; then
	check "list UOPS_ISSUED without libpfm4: says native events need it" "$OUT/list_uops.txt" \
		grep -q 'native events, e.g. UOPS_ISSUED, need libpfm4' "$OUT/list_uops.txt"
else
	check "list UOPS_ISSUED: the native event of each model that has it (libpfm4), with encodings" \
		"$OUT/list_uops.txt" \
		sh -c "grep -q '^Native events of Intel Skylake (libpfm4 PMU skl)' '$OUT/list_uops.txt' &&
		       grep -Eq '^  UOPS_ISSUED +r10e ' '$OUT/list_uops.txt' &&
		       ! grep -q 'no event matches' '$OUT/list_uops.txt'"
fi

# ---- make run's call chains -------------------------------------------------------------
make -n run UEFI=0 BUILD="$B" 2>/dev/null | tr '\\\n' '  ' | grep -o 'bareperf record[^;]*' \
	> "$OUT/make_run.txt"
make -n run UEFI=0 CALLCHAIN=0 BUILD="$B" 2>/dev/null | tr '\\\n' '  ' |
	grep -o 'bareperf record[^;]*' > "$OUT/make_run0.txt"
check "make run records call chains (-g); CALLCHAIN=0 does not" "$OUT/make_run.txt" \
	sh -c "grep -Eq -- '[[:space:]]-g[[:space:]]' '$OUT/make_run.txt' && test -s '$OUT/make_run0.txt' &&
	       ! grep -Eq -- '[[:space:]]-g[[:space:]]' '$OUT/make_run0.txt'"

# ---- missing Debian packages ---------------------------------------------------------------
# tools/deps.sh ensure (make run and make test run it first), with apt-get,
# id and sudo replaced by stand-ins that only record what they were asked.
mkdir -p "$OUT/bin"
printf '#!/bin/sh\necho "apt-get $*" >> %s/apt.log\n' "$AOUT" > "$OUT/bin/apt"
printf '#!/bin/sh\necho 1000\n' > "$OUT/bin/id"
printf '#!/bin/sh\nexit 1\n' > "$OUT/bin/sudo"
chmod +x "$OUT/bin/apt" "$OUT/bin/id" "$OUT/bin/sudo"
DEPS() { BAREPERF_DEPS_CHECKS="bp-no-such-command:bp-fake-package" \
	 BAREPERF_APT_GET="$AOUT/bin/apt" sh tools/deps.sh ensure; }
if [ "$(id -u)" = 0 ]; then
	rm -f "$OUT/apt.log"
	DEPS > "$OUT/deps_root.log" 2>&1
	rc=$?
	check "make's deps check as root: installs what is missing itself (apt-get install -y ...)" \
		"$OUT/deps_root.log" sh -c "test $rc -eq 0 && grep -q '^apt-get update' '$OUT/apt.log' &&
		grep -q '^apt-get install -y .*linux-perf' '$OUT/apt.log'"
fi
rm -f "$OUT/apt.log"
PATH="$AOUT/bin:$PATH" DEPS > "$OUT/deps_user.log" 2>&1
rc=$?
check "deps check, not root, no password-less sudo: names the packages and the one command" \
	"$OUT/deps_user.log" sh -c "test $rc -eq 1 && test ! -e '$OUT/apt.log' &&
	grep -q 'needs these Debian packages: bp-fake-package' '$OUT/deps_user.log' &&
	grep -q 'install them with:  sudo make deps' '$OUT/deps_user.log'"
printf '#!/bin/sh\n[ "$1" = -n ] || exit 1\nshift\nexec "$@"\n' > "$OUT/bin/sudo"
PATH="$AOUT/bin:$PATH" DEPS > "$OUT/deps_sudo.log" 2>&1
rc=$?
check "deps check, not root, sudo -n allowed: installs through sudo" "$OUT/deps_sudo.log" \
	sh -c "test $rc -eq 0 && grep -q '^apt-get install -y ' '$OUT/apt.log' &&
	grep -q 'installing them with sudo' '$OUT/deps_sudo.log'"
sh tools/deps.sh list > "$OUT/deps_list.txt"
CLANG_V=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\)\..*/\1/p' | head -n 1)
check "deps list: the clang runtime package of the installed clang (libclang-rt-$CLANG_V-dev)" \
	"$OUT/deps_list.txt" grep -q "libclang-rt-$CLANG_V-dev" "$OUT/deps_list.txt"

# ---- perf's spellings -------------------------------------------------------------------
# c1 was recorded with --call-graph fp: its call chains show in report -g above.
check "record --call-graph fp: call chains, as -g (report -g finds kmain's callees)" \
	"$OUT/children.txt" sh -c "grep -q 'kmain' '$OUT/children.rows' &&
	! grep -q 'no call chains' '$OUT/children.txt'"
for m in dwarf lbr dwarf,4096; do
	"$BP" record --call-graph $m -o "$OUT/cg_$m.bpc" -- loopnest > "$OUT/cg_$m.txt" 2>&1
	rc=$?
	check "record --call-graph $m: refused by name, the kernel unwinds by frame pointers" \
		"$OUT/cg_$m.txt" sh -c "test $rc -eq 2 && test ! -e '$OUT/cg_$m.bpc' &&
		grep -q 'call-graph ${m%%,*}: not supported: the kernel unwinds by frame pointers' '$OUT/cg_$m.txt'"
done
record all -a --smp 2
R -i "$OUT/all.bpc" --sort cpu > "$OUT/all.txt" 2>&1
n=$(rows < "$OUT/all.txt" | wc -l)
check "record -a (perf's system-wide mode, bareperf's only one): taken, both CPUs sampled" \
	"$OUT/all.record.log" test "$n" -eq 2
R -i "$OUT/c1.bpc" -g caller > "$OUT/g_caller.txt" 2>&1
R -i "$OUT/c1.bpc" -G > "$OUT/g_inverted.txt" 2>&1
R -i "$OUT/c1.bpc" -g fractal > "$OUT/g_fractal.txt" 2>&1
rc=$?
# sieve's tree: _start64 first, sieve itself last
awk '/  sieve$/ && $1 ~ /%$/ { on = 1; next } on && NF == 1 && $1 != "|" { print $1 } on && NF == 0 { exit }' \
	"$OUT/g_inverted.txt" > "$OUT/g_inverted.sieve"
check "report -G (-g caller): each function's chains from the outermost caller down to it; -g fractal refused" \
	"$OUT/g_inverted.txt" sh -c "cmp -s '$OUT/g_caller.txt' '$OUT/g_inverted.txt' &&
	test \"\$(head -n 1 '$OUT/g_inverted.sieve')\" = _start64 &&
	test \"\$(tail -n 1 '$OUT/g_inverted.sieve')\" = sieve &&
	test $rc -eq 2 && grep -q -- '-g fractal: not supported' '$OUT/g_fractal.txt'"
R -i "$OUT/c1.bpc" -g none > "$OUT/g_none.txt" 2>&1
R -i "$OUT/c1.bpc" --call-graph=graph,0.5,callee > "$OUT/g_spec.txt" 2>&1
rows < "$OUT/g_none.txt" > "$OUT/g_none.rows"
check "report -g none: -g's columns, no tree; --call-graph=graph,0.5,callee: the tree" \
	"$OUT/g_none.txt" sh -c "cmp -s '$OUT/g_none.rows' '$OUT/children.rows' &&
	! grep -q '^ *|\$' '$OUT/g_none.txt' && grep -q '^ *|\$' '$OUT/g_spec.txt' &&
	grep -q '^#  Children      Self' '$OUT/g_spec.txt'"
R -i "$OUT/c1.bpc" -g --max-stack 2 > "$OUT/max_stack.txt" 2>&1
rows < "$OUT/max_stack.txt" > "$OUT/max_stack.rows"
check "report -g --max-stack 2: the leaf and its caller only (no kmain)" "$OUT/max_stack.txt" \
	sh -c "grep -q ' loopnest_main\$' '$OUT/max_stack.rows' && ! grep -q kmain '$OUT/max_stack.txt'"
R -i "$OUT/c1.bpc" -S sieve,matmul > "$OUT/symbols.txt" 2>&1
rows < "$OUT/symbols.txt" > "$OUT/symbols.rows"
awk '{ print $NF }' "$OUT/symbols.rows" | sort | tr '\n' ' ' > "$OUT/symbols.names"
check "report -S sieve,matmul: those rows only, shares of what is kept" "$OUT/symbols.txt" \
	sh -c "test \"\$(cat '$OUT/symbols.names')\" = 'matmul sieve ' &&
	grep -q '^# filter: symbols sieve,matmul: ' '$OUT/symbols.txt' &&
	awk '{ s += \$1 } END { exit !(s > 99.9 && s < 100.1) }' '$OUT/symbols.rows'"
R -i "$OUT/c1.bpc" --stats > "$OUT/stats.txt" 2>&1
NS=$("$BP" script -i "$OUT/c1.bpc" --json 2>/dev/null | grep -c '"type":"SAMPLE"')
check "report --stats: perf's Aggregated stats, a count per record type" "$OUT/stats.txt" \
	sh -c "grep -q '^Aggregated stats:' '$OUT/stats.txt' &&
	grep -Eq '^ +SAMPLE records: +$NS\$' '$OUT/stats.txt' && ! grep -q '%' '$OUT/stats.txt'"
# the window: the 11th to the 20th sample, as script -F time --ns prints them
"$BP" script -i "$OUT/c1.bpc" -F time --ns > "$OUT/times.txt" 2>&1
T0=$(sed -n 11p "$OUT/times.txt" | tr -d ' :')
T1=$(sed -n 20p "$OUT/times.txt" | tr -d ' :')
"$BP" script -i "$OUT/c1.bpc" -F time --ns --time "$T0,$T1" > "$OUT/time_script.txt" 2>&1
R -i "$OUT/c1.bpc" --time "$T0,$T1" > "$OUT/time_report.txt" 2>&1
R -i "$OUT/c1.bpc" --time 10%/2 > "$OUT/time_pct.txt" 2>&1
rc=$?
check "script --ns, --time START,STOP (perf's format): the samples in the window, in report too" \
	"$OUT/time_report.txt" sh -c "grep -Eq '^ +[0-9]+\.[0-9]{9}: \$' '$OUT/times.txt' &&
	test \$(wc -l < '$OUT/time_script.txt') -eq 10 &&
	grep -q '^# filter: time: 10 samples kept' '$OUT/time_report.txt' &&
	test $rc -eq 2 && grep -q 'percent slices are not supported' '$OUT/time_pct.txt'"
"$BP" script -i "$OUT/c1.bpc" -F +srcline > "$OUT/plus_srcline.txt" 2>&1
"$BP" script -i "$OUT/c1.bpc" -F -cpu,-symoff > "$OUT/minus.txt" 2>&1
"$BP" script -i "$OUT/c1.bpc" -F cpu,+srcline > "$OUT/mixed.txt" 2>&1
rc=$?
check "script -F +srcline: the default fields and the source lines; -F -cpu; mixing refused" \
	"$OUT/plus_srcline.txt" sh -c "grep -Eq '^  loopnest.c:[0-9]+\$' '$OUT/plus_srcline.txt' &&
	grep -q '\[000\]' '$OUT/plus_srcline.txt' && grep -q 'matmul+0x' '$OUT/plus_srcline.txt' &&
	! grep -q '\[000\]' '$OUT/minus.txt' && ! grep -q 'matmul+0x' '$OUT/minus.txt' &&
	grep -q ' matmul ' '$OUT/minus.txt' && test $rc -eq 2"
"$BP" reprot -i "$OUT/c1.bpc" > "$OUT/typo.txt" 2>&1
rc=$?
"$BP" help lsit >> "$OUT/typo.txt" 2>&1
"$BP" xyzzyq >> "$OUT/typo.txt" 2>&1
check "bareperf reprot: no such command, did you mean 'report'? (help lsit: 'list')" \
	"$OUT/typo.txt" sh -c "test $rc -eq 2 &&
	grep -q \"no command 'reprot' (bareperf --help lists them); did you mean 'report'?\" '$OUT/typo.txt' &&
	grep -q \"no command 'lsit'.*did you mean 'list'?\" '$OUT/typo.txt' &&
	grep -q \"no command 'xyzzyq' (bareperf --help lists them)\$\" '$OUT/typo.txt'"

# ---- help and man pages -------------------------------------------------------------------
"$BP" --help > "$OUT/help.txt" 2>&1
check "bareperf --help: stat counts (no 'estimated'), every command described" "$OUT/help.txt" \
	sh -c "! grep -qi 'estimated from samples' '$OUT/help.txt' &&
	       grep -q '^  stat  *counter tables per app run and CPU, counted by the kernel' '$OUT/help.txt'"
"$BP" convert --help > "$OUT/convert_help.txt" 2>&1
FORMATS=$(awk '/--to FORMAT/ { on = 1; sub(/.*--to FORMAT/, "") }
	on && /^  -/ && !/--to FORMAT/ { on = 0 }
	on && match($1, /^[a-z.]+:$/) { print substr($1, 1, RLENGTH - 1) }' "$OUT/convert_help.txt")
awk '/^  convert / { on = 1; print; next } on && /^  [a-z]/ { on = 0 } on' "$OUT/help.txt" |
	tr -s ' \n' ' ' > "$OUT/help_convert.txt"
check "bareperf --help: convert's line names every --to format ($(echo $FORMATS))" \
	"$OUT/help_convert.txt" sh -c "test -n '$FORMATS' &&
	for f in $(echo $FORMATS); do grep -qi -- \"\$f\" '$OUT/help_convert.txt' || exit 1; done"
CMDS=$(awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' \
	"$OUT/help.txt")
missing=
for c in $CMDS; do
	page=$B/man/bareperf-$c.1
	[ -s "$page" ] || { missing="$missing $c(no page)"; continue; }
	# every option of --help is in the page, as man renders it
	MANWIDTH=200 man -l "$page" 2> /dev/null > "$OUT/man-$c.txt"
	"$BP" $c --help | grep -Eo '^ {2,6}-[A-Za-z0-9-]+' | while read -r o; do
		grep -q -- "$o" "$OUT/man-$c.txt" || echo "$c:$o"
	done >> "$OUT/man_missing.txt"
done
check "man pages for every command ($(echo $CMDS)), rendered from --help: every option in them" \
	"$OUT/man_missing.txt" sh -c "test -z '$missing' && test -n '$CMDS' && test ! -s '$OUT/man_missing.txt'"
make install PREFIX="$AOUT/prefix" BUILD="$B" > "$OUT/install.log" 2>&1
check "make install PREFIX=...: bin/bareperf and man pages; man bareperf-record reads" \
	"$OUT/install.log" \
	sh -c "test -x '$OUT/prefix/bin/bareperf' &&
	       MANPATH='$OUT/prefix/share/man' man bareperf-record 2>/dev/null | grep -q 'bareperf-record'"
finish
