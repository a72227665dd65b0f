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
#     `convert --to folded`, one profile per CPU for Chrome JSON.
# speedscope comes from the npm registry into BUILD/node (never into the
# source tree): when node or the registry is missing, those checks SKIP
# with the reason. Prints TAP.
#
# Usage: sh test/e2e/profilers.sh [BUILD_DIR]   (from the repository root)

. "$(dirname "$0")/e2e_common.sh"
e2e_setup profilers "${1:-}"
SPEEDSCOPE=1.25.0

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

"$BP" convert -i "$OUT/rt.bpc" --to chrome -o "$OUT/rt.json" 2> "$OUT/chrome.err"
node test/e2e/speedscope_check.js "$BUNDLE" "$OUT/rt.json" > "$OUT/ss_chrome.json" 2> "$OUT/ss_chrome.err"
python3 "$OUT/stacks.py" "$OUT/rt.folded" "$OUT/ss_chrome.json" 250 > "$OUT/ss_chrome.log" 2>&1
check "speedscope reads convert --to chrome (stackFrames + samples): the folded stacks" \
	"$OUT/ss_chrome.log" sh -c "grep -q 'CPU 0' '$OUT/ss_chrome.log'"
"$BP" convert -i "$OUT/rt2.bpc" --to chrome -o "$OUT/rt2.json" 2> "$OUT/chrome2.err"
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
finish
