#!/usr/bin/env bash
# false_reject.sh — how often honest candidates are rejected: N runs of
# `crucible eval PATH... --check-expect --no-timing --quick --jobs 2`, each
# with its own seed and its own CSPRNG draws (shapes, profiles), and every
# row whose status differs from its sidecar's expectation listed with its
# detail. Figures in docs/VERIFIER.md ("Conditioning at float precision").
# Usage: bench/false_reject.sh CRUCIBLE RUNS OUTDIR PATH...
#   FALSE_REJECT_ARGS: extra eval options (e.g. "--jobs 1")
set -euo pipefail
exe=$(realpath "$1")
runs=$2
out=$3
shift 3
mkdir -p "$out"
: > "$out/rejects.txt"
echo "start: $(cut -d' ' -f1-3 /proc/loadavg) (load 1/5/15 min)"
rows=0
bad=0
t0=$(date +%s)
for i in $(seq 1 "$runs"); do
	d="$out/run$i"
	rm -rf "$d"
	# the exit status says whether some row differed; the rows say which
	"$exe" eval "$@" --check-expect --no-timing --quick --jobs 2 ${FALSE_REJECT_ARGS:-} \
		--out "$d" > "$d.log" 2>&1 || true
	if [ ! -s "$d/results.csv" ]; then
		echo "run $i: no results ($d.log)" | tee -a "$out/rejects.txt"
		bad=$((bad + 1))
		continue
	fi
	n=$(python3 -c 'import csv,sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1]))))' "$d/results.csv")
	rows=$((rows + n))
	python3 - "$d/results.csv" "$i" "$@" >> "$out/rejects.txt" <<'PY'
import csv, json, os, sys
res, run, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
def expect(cand):
    for p in paths:
        for root, _, files in os.walk(p):
            if cand in files:
                j = os.path.join(root, cand.rsplit('.', 1)[0] + '.json')
                if os.path.exists(j):
                    return json.load(open(j)).get('expect', 'ok')
    return 'ok'
for r in csv.DictReader(open(res)):
    e = expect(r['candidate'])
    if r['status'] != e:
        print(f"run {run} seed {r['verify_seed']} load {r['load1']}: {r['candidate']} "
              f"{r['status']} (expected {e}): {r['detail']}")
PY
	k=$(grep -c "^run $i " "$out/rejects.txt" || true)
	bad=$((bad + k))
	# conditioning measured (a comparison about to fail), from run.json's cost
	cond=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])).get("cost",{}); print("%s cases measured in %.2f s" % (c.get("cases_cond","-"), c.get("cond_s",0)))' "$d/run.json" 2>/dev/null || echo "-")
	echo "run $i: $n rows, $k unexpected, load $(cut -d' ' -f1 /proc/loadavg), $cond"
done
echo "end: $(cut -d' ' -f1-3 /proc/loadavg) (load 1/5/15 min), $(( $(date +%s) - t0 )) s"
echo "$runs runs, $rows rows, $bad unexpected statuses"
