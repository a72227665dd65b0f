#!/bin/sh
# perf_roundtrip.sh — end to end for `bareperf convert` and `bareperf
# flamegraph`: record loopnest in QEMU (-icount, call chains, 1 and 2
# CPUs), convert to perf.data and read it back with the real Linux perf:
#   - the samples are kernel-mode samples of [kernel.kallsyms] (perf
#     evlist -v: exclude_user, not exclude_kernel; [k] rows) with absolute
#     addresses in their callchains;
#   - perf report --stdio names the same functions with the same sample
#     counts as bareperf report, by function, by function and source line
#     (--sort sym,srcline) and with --children, without a word on stderr;
#   - perf script lists every sample, symbolized (with -F ...,srcline too),
#     and perf annotate counts a function's samples as bareperf does;
#   - perf finds kernel.elf by its build-id: in the build-id cache convert
#     fills (HOME is the test's own directory), or with -k from an empty
#     HOME; without either it says no vmlinux was found, as on Linux;
#   - the header tells the recording: its link, the kernel's command line;
#   - a lossy capture's LOST records reach perf report's lost warning;
#   - a kernel.elf with another build-id is refused, --force overrides;
# then folded stacks (counts per leaf = the report's), Chrome JSON (parsed
# by python3's json), and the flame graph (parsed as XML; its script run
# by node against a small DOM when node is installed). Prints TAP.
#
# Usage: sh test/e2e/perf_roundtrip.sh [BUILD_DIR]   (from the repository root)
# perf runs as whoever runs the test; perf refuses a file another user
# owns unless -f, and every file here is the test's own.

. "$(dirname "$0")/e2e_common.sh"
e2e_setup perf_roundtrip "${1:-}"
HAVE_PERF=1
command -v perf > /dev/null 2>&1 || HAVE_PERF=0
# perf with the test's own build-id cache and no config of the user's;
# convert fills that cache as perf record would
PERF() { HOME=$OUT/home perf "$@"; }
BPC() { HOME=$OUT/home "$BP" convert "$@"; }
mkdir -p "$OUT/empty"

# ---- capture -----------------------------------------------------------------
check "record loopnest with call chains (QEMU -icount)" "$OUT/rt.record.log" record rt
# record keeps a copy of the kernel it booted beside the capture; reports,
# convert and so perf's MMAP records name that copy.
KR=$(dirname "$K")/rt.kernel.elf
[ -s "$KR" ] || KR=$K
if [ ! -s "$OUT/rt.bpc" ]; then
	finish
fi

# bareperf report's rows: "symbol count", sorted
"$BP" report -i "$OUT/rt.bpc" --stdio -q > "$OUT/bp_report.txt" 2> "$OUT/bp_report.err"
awk '!/^#/ && NF == 3 && $1 ~ /%$/ { print $3, $2 }' "$OUT/bp_report.txt" | sort > "$OUT/bp_rows"
TOTAL=$(awk '{ s += $2 } END { print s + 0 }' "$OUT/bp_rows")
HOT=$(sort -k2,2nr "$OUT/bp_rows" | awk 'NR == 1 { print $1 }')
HOT_N=$(sort -k2,2nr "$OUT/bp_rows" | awk 'NR == 1 { print $2 }')
check "bareperf report has samples ($TOTAL, hottest $HOT: $HOT_N)" "$OUT/bp_report.err" \
	test "$TOTAL" -gt 20

# ---- perf.data ---------------------------------------------------------------
check "convert --to perf.data" "$OUT/convert.err" \
	BPC -i "$OUT/rt.bpc" --to perf.data -o "$OUT/rt.data" 2> "$OUT/convert.err"
BID=$(readelf -n "$KR" 2>/dev/null | awk '/Build ID/ { print $3 }')
check "convert put kernel.elf in the build-id cache (as perf buildid-cache -a)" "$OUT/convert.err" \
	cmp -s "$KR" "$OUT/home/.debug/.build-id/$(echo "$BID" | cut -c1-2)/$(echo "$BID" | cut -c3-)/elf"

if [ "$HAVE_PERF" = 0 ]; then
	for t in "perf report" "perf script" "perf buildid-list" "perf header" "perf evlist" \
		"perf annotate" "perf report --sort sym,srcline" "perf report --children"; do
		skip "$t reads the converted file" "perf is not installed (Debian linux-perf)"
	done
else
	PERF report --stdio -i "$OUT/rt.data" --no-children -n --sort sym -g none \
		> "$OUT/perf_report.txt" 2> "$OUT/perf_report.err"
	rc=$?
	check "perf report --stdio exits 0" "$OUT/perf_report.err" test $rc -eq 0
	check "perf report prints nothing on stderr (no warnings)" "$OUT/perf_report.err" \
		test ! -s "$OUT/perf_report.err"
	awk '$3 == "[k]" { print $4, $2 }' "$OUT/perf_report.txt" | sort > "$OUT/perf_rows"
	diff "$OUT/bp_rows" "$OUT/perf_rows" > "$OUT/rows.diff" 2>&1
	check "perf report: same functions, same sample counts as bareperf report" \
		"$OUT/rows.diff" test -s "$OUT/perf_rows" -a ! -s "$OUT/rows.diff"
	check "perf report names $HOT with $HOT_N samples" "$OUT/perf_report.txt" \
		grep -Eq "^ +[0-9.]+% +$HOT_N +\[k\] $HOT\$" "$OUT/perf_report.txt"
	check "perf report: every sample symbolized (no bare addresses)" "$OUT/perf_report.txt" \
		sh -c "! grep -q '\[k\] 0x' '$OUT/perf_report.txt'"
	PERF evlist -v -i "$OUT/rt.data" > "$OUT/evlist.txt" 2>&1
	check "perf evlist -v: kernel mode (exclude_user, not exclude_kernel)" "$OUT/evlist.txt" \
		sh -c "grep -q 'exclude_user: 1' '$OUT/evlist.txt' &&
		       ! grep -q 'exclude_kernel' '$OUT/evlist.txt'"
	check "perf report: the samples are [kernel.kallsyms]'s, shown [k]" "$OUT/perf_report.txt" \
		sh -c "grep -q '\[k\]' '$OUT/perf_report.txt' && ! grep -q '\[\.\]' '$OUT/perf_report.txt'"

	# kernel.elf by -k from a HOME without a cache; nothing without either
	HOME=$OUT/empty perf report --stdio -i "$OUT/rt.data" --no-children -n --sort sym -g none \
		-k "$KR" 2> "$OUT/perf_k.err" | awk '$3 == "[k]" { print $4, $2 }' | sort > "$OUT/perf_k_rows"
	check "perf report -k kernel.elf (no build-id cache): the same rows" "$OUT/perf_k.err" \
		sh -c "test ! -s '$OUT/perf_k.err' && cmp -s '$OUT/bp_rows' '$OUT/perf_k_rows'"
	HOME=$OUT/empty perf report --stdio -i "$OUT/rt.data" --no-children --sort sym -g none \
		> "$OUT/perf_nok.txt" 2>&1
	check "perf report without kernel.elf: says no vmlinux with that build-id was found" \
		"$OUT/perf_nok.txt" grep -q "No kallsyms or vmlinux with build-id $BID" "$OUT/perf_nok.txt"

	# by function and source line: bareperf report --sort sym,srcline
	"$BP" report -i "$OUT/rt.bpc" --stdio -q --sort sym,srcline 2>/dev/null |
		awk '!/^#/ && $1 ~ /%$/ { f = $4; sub(/.*\//, "", f); print $3, f, $2 }' |
		sort > "$OUT/bp_line_rows"
	PERF report --stdio -i "$OUT/rt.data" --no-children -n --sort sym,srcline -g none \
		2> "$OUT/perf_line.err" | awk '$3 == "[k]" { print $4, $5, $2 }' | sort > "$OUT/perf_line_rows"
	diff "$OUT/bp_line_rows" "$OUT/perf_line_rows" > "$OUT/line.diff" 2>&1
	check "perf report --sort sym,srcline = bareperf report --sort sym,srcline" "$OUT/line.diff" \
		test -s "$OUT/perf_line_rows" -a ! -s "$OUT/line.diff" -a ! -s "$OUT/perf_line.err"

	# inclusive cost: bareperf report -g's Children and Self columns
	"$BP" report -i "$OUT/rt.bpc" --stdio -q -g 2>/dev/null |
		awk '$1 ~ /%$/ && $2 ~ /%$/ && NF == 4 { print $4, $1, $2 }' | sort > "$OUT/bp_children"
	PERF report --stdio -i "$OUT/rt.data" --children --sort sym -g none 2> "$OUT/perf_children.err" |
		awk '$3 == "[k]" { print $4, $1, $2 }' | sort > "$OUT/perf_children"
	diff "$OUT/bp_children" "$OUT/perf_children" > "$OUT/children.diff" 2>&1
	check "perf report --children = bareperf report -g (children and self per function)" \
		"$OUT/children.diff" test -s "$OUT/perf_children" -a ! -s "$OUT/children.diff"

	# perf script with source lines: every sample's leaf = bareperf's line rows
	PERF script -i "$OUT/rt.data" -F ip,sym,symoff,srcline,time,cpu > "$OUT/perf_script_l.txt" \
		2> "$OUT/perf_script_l.err"
	awk '/^\[[0-9]+\]/ { leaf = 1; next }
	     leaf && $1 ~ /^ffffffff/ { s = $2; sub(/\+0x[0-9a-f]+$/, "", s); next }
	     leaf && NF == 1 { n[s " " $1]++; leaf = 0 }
	     END { for (k in n) print k, n[k] }' "$OUT/perf_script_l.txt" | sort > "$OUT/script_line_rows"
	diff "$OUT/bp_line_rows" "$OUT/script_line_rows" > "$OUT/script_line.diff" 2>&1
	check "perf script -F ip,sym,symoff,srcline,time,cpu: leaves by line = bareperf's" \
		"$OUT/script_line.diff" test ! -s "$OUT/script_line.diff" -a ! -s "$OUT/perf_script_l.err"

	# perf annotate: the hottest function's samples, instruction by instruction
	PERF annotate -i "$OUT/rt.data" --stdio -s "$HOT" > "$OUT/annotate.txt" 2> "$OUT/annotate.err"
	check "perf annotate $HOT: $HOT_N samples, disassembled from kernel.elf" "$OUT/annotate.txt" \
		sh -c "grep -q '($HOT_N samples' '$OUT/annotate.txt' &&
		       grep -Eq '^ +[0-9.]+ +: +ffffffff80[0-9a-f]+:' '$OUT/annotate.txt'"
	check "perf report: Samples: $TOTAL of event 'cpu-clock'" "$OUT/perf_report.txt" \
		grep -q "^# Samples: $TOTAL  *of event 'cpu-clock'" "$OUT/perf_report.txt"

	# call chains: loopnest_main is a caller of sieve
	PERF report --stdio -i "$OUT/rt.data" --no-children -S sieve -G \
		> "$OUT/perf_callers.txt" 2>&1
	check "perf report -G: call chains through loopnest_main and kmain" "$OUT/perf_callers.txt" \
		sh -c "grep -q loopnest_main '$OUT/perf_callers.txt' && grep -q kmain '$OUT/perf_callers.txt'"

	# -G: one line per sample, the sampled IP and its symbol last
	PERF script -i "$OUT/rt.data" -G -F comm,tid,cpu,time,period,event,ip,sym \
		> "$OUT/perf_script.txt" 2> "$OUT/perf_script.err"
	rc=$?
	check "perf script exits 0, nothing on stderr" "$OUT/perf_script.err" \
		test $rc -eq 0 -a ! -s "$OUT/perf_script.err"
	n=$(grep -c 'cpu-clock:' "$OUT/perf_script.txt")
	check "perf script lists every sample ($n of $TOTAL)" "$OUT/perf_script.txt" \
		test "$n" -eq "$TOTAL"
	awk '/cpu-clock:/ { n[$NF]++ } END { for (s in n) print s, n[s] }' "$OUT/perf_script.txt" \
		| sort > "$OUT/script_rows"
	diff "$OUT/bp_rows" "$OUT/script_rows" > "$OUT/script_rows.diff" 2>&1
	check "perf script: per-function sample counts = bareperf report" \
		"$OUT/script_rows.diff" test ! -s "$OUT/script_rows.diff"
	check "perf script: the process is loopnest, pid 1, the IPs are kernel.elf's absolute ones" \
		"$OUT/perf_script.txt" \
		sh -c "! grep 'cpu-clock:' '$OUT/perf_script.txt' |
		       grep -Evq '^ *loopnest +1 .* ffffffff80[0-9a-f]{6} [^ ]+\$'"
	PERF script -i "$OUT/rt.data" > "$OUT/perf_script_g.txt" 2> "$OUT/perf_script_g.err"
	check "perf script with call chains: absolute kernel addresses, symbolized, root _start64" \
		"$OUT/perf_script_g.err" \
		sh -c "test ! -s '$OUT/perf_script_g.err' &&
		       grep -Eq '^	+ffffffff80[0-9a-f]+ loopnest_main\+0x[0-9a-f]* \(\[kernel.kallsyms\]\)' \
			'$OUT/perf_script_g.txt' &&
		       grep -q '_start64+0x' '$OUT/perf_script_g.txt' &&
		       ! grep -q '_start64.hang' '$OUT/perf_script_g.txt'"

	PERF buildid-list -i "$OUT/rt.data" > "$OUT/buildid.txt" 2>&1
	check "perf buildid-list: kernel.elf's build-id for [kernel.kallsyms]" "$OUT/buildid.txt" \
		grep -q "^$BID \[kernel.kallsyms\]\$" "$OUT/buildid.txt"
	PERF report -i "$OUT/rt.data" --header-only > "$OUT/header.txt" 2>&1
	check "perf report --header-only: arch, CPU, the recording's link and kernel command line" \
		"$OUT/header.txt" \
		sh -c "grep -q '^# arch : x86_64' '$OUT/header.txt' &&
		       grep -q '^# nrcpus online : 1' '$OUT/header.txt' &&
		       grep -q '^# cpudesc : ' '$OUT/header.txt' &&
		       grep -q '^# hostname : qemu' '$OUT/header.txt' &&
		       grep -q '^# cmdline : rt.kernel.elf .*app=loopnest' '$OUT/header.txt'"
	REC_DAY=$(date -r "$OUT/rt.bpc" '+%b %e')
	check "perf report --header-only: captured on the day the capture was recorded" \
		"$OUT/header.txt" grep -q "^# captured on *: ... $REC_DAY" "$OUT/header.txt"
fi

# ---- two CPUs: samples keep their CPU ----------------------------------------------
if record rt2 --smp 2; then
	BPC -i "$OUT/rt2.bpc" --to perf.data -o "$OUT/rt2.data" 2> "$OUT/convert2.err"
	for cpu in 0 1; do
		"$BP" report -i "$OUT/rt2.bpc" --stdio -q --cpu $cpu 2>/dev/null |
			awk -v c=$cpu '!/^#/ && NF == 3 && $1 ~ /%$/ { print c, $3, $2 }'
	done | sort > "$OUT/bp_cpu_rows"
	if [ "$HAVE_PERF" = 1 ]; then
		PERF report --stdio -i "$OUT/rt2.data" --no-children -n --sort cpu,sym -g none \
			> "$OUT/perf_cpu.txt" 2> "$OUT/perf_cpu.err"
		awk '$4 == "[k]" { print $3 + 0, $5, $2 }' "$OUT/perf_cpu.txt" | sort > "$OUT/perf_cpu_rows"
		diff "$OUT/bp_cpu_rows" "$OUT/perf_cpu_rows" > "$OUT/cpu.diff" 2>&1
		check "2 CPUs: perf report --sort cpu,sym = bareperf report --cpu N" "$OUT/cpu.diff" \
			test -s "$OUT/perf_cpu_rows" -a ! -s "$OUT/cpu.diff"
		check "2 CPUs: perf report quiet on stderr" "$OUT/perf_cpu.err" \
			test ! -s "$OUT/perf_cpu.err"
	else
		skip "2 CPUs: perf report --sort cpu,sym" "perf is not installed"
	fi
else
	not_ok "record loopnest on 2 CPUs" "$OUT/rt2.record.log"
fi

# ---- losses: a lossy capture's LOST records reach perf ------------------------------
# The UART held to 115200 baud and a 2-page ring: the kernel drops records
# (test/e2e/pacing.py checks the counts are exact); perf must warn.
# Under -icount, so the samples (and what overflows the ring) do not depend
# on how busy the host is: on a loaded host the soft PMU takes too few
# samples to fill even 2 pages.
if "$BP" record --qemu --icount -g --kernel "$K" -q --pace 115200 -c 100000 --ring-pages 2 \
	-o "$OUT/lossy.bpc" -- loopnest > "$OUT/lossy.record.log" 2>&1; then
	"$BP" script -i "$OUT/lossy.bpc" 2>/dev/null |
		awk '/: LOST id=/ { n++; sub(/.*lost=/, ""); s += $1 } END { print n + 0, s + 0 }' \
		> "$OUT/bp_lost"
	read -r NLOST SLOST < "$OUT/bp_lost"
	BPC -i "$OUT/lossy.bpc" --to perf.data -o "$OUT/lossy.data" 2> "$OUT/convert_lossy.err"
	if [ "$HAVE_PERF" = 1 ] && [ "$NLOST" -gt 0 ]; then
		PERF report --stdio -i "$OUT/lossy.data" > /dev/null 2> "$OUT/perf_lossy.err"
		check "lossy capture ($NLOST LOST records, $SLOST records): perf report warns 'lost $NLOST chunks'" \
			"$OUT/perf_lossy.err" grep -q "lost $NLOST chunks" "$OUT/perf_lossy.err"
		PERF script -i "$OUT/lossy.data" --show-lost-events -F cpu,time,event 2>/dev/null |
			awk '/PERF_RECORD_LOST lost/ { s += $NF } END { print s + 0 }' > "$OUT/perf_lost"
		check "lossy capture: perf script --show-lost-events sums to bareperf's $SLOST" \
			"$OUT/perf_lost" test "$(cat "$OUT/perf_lost")" = "$SLOST"
	elif [ "$HAVE_PERF" = 1 ]; then
		not_ok "the paced 2-page run lost records (it lost none)" "$OUT/lossy.record.log"
	else
		skip "lossy capture: perf report warns" "perf is not installed"
	fi
else
	not_ok "record a lossy capture (paced UART, 2-page ring)" "$OUT/lossy.record.log"
fi

# ---- build-id checks -------------------------------------------------------------
objcopy --remove-section=.notes "$K" "$OUT/other.elf" 2> /dev/null
BPC -i "$OUT/rt.bpc" --to perf.data -o "$OUT/other.data" -k "$OUT/other.elf" \
	> "$OUT/other.log" 2>&1
rc=$?
check "convert refuses a kernel.elf whose build-id differs" "$OUT/other.log" \
	sh -c "test $rc -eq 1 && grep -q 'does not match' '$OUT/other.log' && test ! -e '$OUT/other.data'"
BPC -i "$OUT/rt.bpc" --to perf.data -o "$OUT/other.data" -k "$OUT/other.elf" --force \
	--no-buildid-cache > "$OUT/other.log" 2>&1
rc=$?
if [ "$HAVE_PERF" = 1 ]; then
	HOME=$OUT/empty perf report --stdio -i "$OUT/other.data" --no-children -n --sort sym \
		-g none -k "$OUT/other.elf" 2>&1 |
		awk '$3 == "[k]" { print $4, $2 }' | sort > "$OUT/other_rows"
	check "convert --force: converts, and perf symbolizes from that file" "$OUT/other.log" \
		sh -c "test $rc -eq 0 && cmp -s '$OUT/bp_rows' '$OUT/other_rows'"
else
	check "convert --force: converts" "$OUT/other.log" test $rc -eq 0
fi

# ---- folded ------------------------------------------------------------------------
"$BP" convert -i "$OUT/rt.bpc" --to folded > "$OUT/rt.folded" 2> "$OUT/folded.err"
rc=$?
check "convert --to folded" "$OUT/folded.err" test $rc -eq 0 -a -s "$OUT/rt.folded"
check "folded: every line is 'frame;...;frame count', root first" "$OUT/rt.folded" \
	sh -c "! grep -Evq '^[^; ]+(;[^; ]+)* [0-9]+\$' '$OUT/rt.folded' &&
	       ! grep -vq '^_start64;kmain;' '$OUT/rt.folded'"
awk '{ n = split($1, f, ";"); c[f[n]] += $2 } END { for (s in c) print s, c[s] }' \
	"$OUT/rt.folded" | sort > "$OUT/folded_rows"
diff "$OUT/bp_rows" "$OUT/folded_rows" > "$OUT/folded.diff" 2>&1
check "folded: samples per leaf = bareperf report" "$OUT/folded.diff" test ! -s "$OUT/folded.diff"

# ---- Chrome JSON ---------------------------------------------------------------------
"$BP" convert -i "$OUT/rt2.bpc" --to chrome -o "$OUT/rt2.json" 2> "$OUT/chrome.err"
rc=$?
check "convert --to chrome" "$OUT/chrome.err" test $rc -eq 0
check "chrome: python3 -m json.tool parses it" "$OUT/chrome.err" \
	sh -c "python3 -m json.tool '$OUT/rt2.json' > /dev/null 2>> '$OUT/chrome.err'"
python3 - "$OUT/rt2.json" "$OUT/bp_cpu_rows" > "$OUT/chrome_check.log" 2>&1 <<'EOF'
import collections, json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
runs = [e for e in ev if e["ph"] == "X"]
assert runs and all(e["name"] == "loopnest" and e["dur"] > 0 for e in runs), runs
assert sorted(e["tid"] for e in runs) == [0, 1], runs
# samples: the format's sampling profile, each naming its leaf stack frame
frames, samples = d["stackFrames"], d["samples"]
assert not [e for e in ev if e["ph"] == "i"], "samples as instant events"
want = collections.Counter()
for line in open(sys.argv[2]):
    cpu, sym, n = line.split()
    want[(int(cpu), sym)] += int(n)
got = collections.Counter((e["tid"], frames[e["sf"]]["name"]) for e in samples)
assert got == want, (got, want)
ts = [e["ts"] for e in samples]
assert ts == sorted(ts), "samples out of time order"
for e in samples:                   # every stack ends at a root
    f, depth = e["sf"], 0
    while "parent" in frames[f]:
        f, depth = frames[f]["parent"], depth + 1
    assert frames[f]["name"] in ("_start64", "ap_entry", "[unknown]") and depth >= 1, e
assert all(e["weight"] == 250000 and e["name"] == "cpu-clock" for e in samples)
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert names == {"CPU 0", "CPU 1", "CPU 0 samples", "CPU 1 samples"}, names
# the flame chart for trace-event viewers (Perfetto): per CPU, B/E in time
# order and nested; the leaf frames span the samples' periods
for cpu in (0, 1):
    st, last, leaf_us = [], 0, collections.Counter()
    fl = [e for e in ev if e["pid"] == 3 and e["ph"] in "BE" and e["tid"] == cpu]
    for e in fl:
        assert e["ts"] >= last, e
        last = e["ts"]
        if e["ph"] == "B":
            st.append(e)
        else:
            st.pop()
    assert not st and fl, (cpu, st)
EOF
check "chrome: app runs as slices, sampled stacks per CPU = bareperf report --cpu" \
	"$OUT/chrome_check.log" test $? -eq 0

# ---- flame graph ------------------------------------------------------------------------
"$BP" flamegraph -i "$OUT/rt.bpc" -o "$OUT/rt.svg" 2> "$OUT/fg.err"
rc=$?
check "flamegraph writes an SVG" "$OUT/fg.err" test $rc -eq 0 -a -s "$OUT/rt.svg"
python3 - "$OUT/rt.svg" "$HOT" "$OUT/rt.folded" "$TOTAL" > "$OUT/fg_check.log" 2>&1 <<'EOF'
import sys, xml.etree.ElementTree as ET
path, hot, folded, total = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# A flame graph box counts every sample with the function on its stack
# (inclusive): sum the folded stacks that hold it.
hot_n = 0
for line in open(folded):
    stack, n = line.rsplit(" ", 1)
    if hot in stack.split(";"):
        hot_n += int(n)
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(path).getroot()
assert root.tag == ns + "svg", root.tag
titles = [t.text for t in root.iter(ns + "title")]
want = "%s (%d samples, %.2f%%)" % (hot, hot_n, 100.0 * hot_n / total)
assert want in titles, (want, titles)
assert "all (%d samples, 100.00%%)" % total in titles
assert root.find(ns + "script") is not None
# colours by kind, with a legend: the app's functions green, the kernel's orange
legend = root.find(".//%sg[@id='legend']" % ns)
assert [t.text for t in legend.iter(ns + "text")] == ["kernel", "app", "benchmark body"]
def fill(name):
    for g in root.iter(ns + "g"):
        t = g.find(ns + "title")
        if t is not None and t.text.startswith(name + " ("):
            r, gr, b = map(int, g.find(ns + "rect").get("fill")[4:-1].split(","))
            return r, gr, b
    raise AssertionError("no frame " + name)
for app in ("loopnest_main", "matmul", "sieve"):
    r, g, b = fill(app)
    assert g > r and g > b, (app, r, g, b)
for k in ("kmain", "_start64", "app_run_on"):
    r, g, b = fill(k)
    assert r > g > b, (k, r, g, b)
EOF
check "flamegraph: parses as XML, $HOT with its samples and percentage in a tooltip, colours by kind with a legend" \
	"$OUT/fg_check.log" test $? -eq 0

# Benchmark bodies by kind, C bodies (bench_membw's passes) as assembly
# ones: what the linker put between __bench_body_start and __bench_body_end.
"$BP" record --qemu --icount -g --kernel "$K" -q -o "$OUT/bw.bpc" \
	-- bench_membw quick=1 max=64k > "$OUT/bw.record.log" 2>&1
"$BP" convert -i "$OUT/bw.bpc" --to chrome -o "$OUT/bw.json" 2> "$OUT/bw.err"
"$BP" flamegraph -i "$OUT/bw.bpc" -o "$OUT/bw.svg" 2>> "$OUT/bw.err"
python3 - "$OUT/bw.json" "$OUT/bw.svg" > "$OUT/bw_check.log" 2>&1 <<'EOF'
import json, sys, xml.etree.ElementTree as ET
frames = json.load(open(sys.argv[1]))["stackFrames"].values()
kind = {}
for f in frames:
    kind.setdefault(f["name"], set()).add(f["category"])
bodies = [n for n in kind if n.split("_")[0] in ("read", "write", "copy")]
assert len(bodies) >= 2, kind
for n in bodies:
    assert kind[n] == {"benchmark"}, (n, kind[n])
for n in ("membw_main", "bench_run", "measure_event"):
    assert kind.get(n) == {"app"}, (n, kind.get(n))
assert kind.get("kmain") == {"kernel"}, kind.get("kmain")
ns = "{http://www.w3.org/2000/svg}"
for g in ET.parse(sys.argv[2]).getroot().iter(ns + "g"):
    t = g.find(ns + "title")
    if t is not None and t.text.split(" (")[0] in bodies + ["bench_run"]:
        r, gr, b = map(int, g.find(ns + "rect").get("fill")[4:-1].split(","))
        body = t.text.split(" (")[0] != "bench_run"
        assert (b > r and b > gr) == body, (t.text, r, gr, b)
print("bodies", sorted(bodies))
EOF
check "chrome and flamegraph: C benchmark bodies are of kind benchmark, the harness app" \
	"$OUT/bw_check.log" test $? -eq 0
if command -v node > /dev/null 2>&1; then
	node test/e2e/fg_script_check.js "$OUT/rt.svg" "$HOT" > "$OUT/fg_js.log" 2>&1
	check "flamegraph: its script searches and zooms (node, a small DOM)" "$OUT/fg_js.log" \
		test $? -eq 0
else
	skip "flamegraph: its script searches and zooms" "node is not installed"
fi

finish
