#!/usr/bin/env bash
# eval --shard i/n, crucible merge and scripts/slurm-eval.sh (docs/SCALE.md):
# the shards of data/candidates/smoke cover every candidate once, merged they
# give the unsharded run's verdicts, a shard is the same every time, merge
# refuses what is not one run, and the Slurm script's array body run for
# every index (a fake SLURM_ARRAY_TASK_ID) then its merge step equals the
# single run.
set -euo pipefail
exe="$1"; src="$2"; out="$3"
rm -rf "$out"
mkdir -p "$out"
smoke="$src/data/candidates/smoke"
args=("$smoke" --no-timing --quick --timeout 2 --seed 7)
fails=0
pass=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }
# (candidate, status) of every row, sorted. Every field is quoted (libcsv
# csv_fwrite), so the first eight split at ","; no path here holds one.
pairs() { awk -F'","' 'NR > 1 { print $3 "\t" $7 }' "$1" | sort; }
rows() { echo $(($(wc -l < "$1") - 1)); }

"$exe" eval "${args[@]}" --out "$out/full" >/dev/null 2>"$out/full.err"
total=$(find "$smoke" -name '*.c' | wc -l)
[ "$(rows "$out/full/results.csv")" -eq "$total" ] || { bad "the unsharded run has $(rows "$out/full/results.csv") rows, not $total"; exit 1; }

for i in 1 2 3; do
	rc=0
	"$exe" eval "${args[@]}" --shard "$i/3" --out "$out/s$i" >/dev/null 2>"$out/s$i.err" || rc=$?
	[ "$rc" -eq 0 ] || bad "shard $i/3 exit $rc: $(tail -2 "$out/s$i.err")"
	grep -q '"shard": "'"$i"'/3"' "$out/s$i/run.json" || bad "shard $i/3: run.json does not say \"shard\": \"$i/3\""
done
# every candidate exactly once over the three shards
cat <(tail -qn +2 "$out"/s{1,2,3}/results.csv) > "$out/all-rows"
n_rows=$(wc -l < "$out/all-rows")
n_uniq=$(pairs "$out/full/results.csv" | cut -f1 | sort -u | wc -l)
sharded=$(for i in 1 2 3; do pairs "$out/s$i/results.csv"; done | cut -f1 | sort)
if [ "$n_rows" -eq "$total" ] && [ "$(echo "$sharded" | sort -u | wc -l)" -eq "$total" ] &&
   [ "$n_uniq" -eq "$total" ]; then
	ok "shards 1/3, 2/3, 3/3: $(rows "$out/s1/results.csv") + $(rows "$out/s2/results.csv") + $(rows "$out/s3/results.csv") rows, every one of the $total candidates once"
else
	bad "shards: $n_rows rows for $total candidates ($(echo "$sharded" | sort | uniq -d | tr '\n' ' ')given twice)"
fi
# no shard may take everything: the split must split (18 candidates, 3 shards)
for i in 1 2 3; do
	r=$(rows "$out/s$i/results.csv")
	[ "$r" -gt 0 ] && [ "$r" -lt "$total" ] || bad "shard $i/3 has $r of $total rows"
done

# merged: the unsharded run's (candidate, status) pairs, rows byte for byte
rc=0
"$exe" merge "$out/s3" "$out/s1" "$out/s2" --out "$out/merged" >/dev/null 2>"$out/merge.err" || rc=$?
if [ "$rc" -eq 0 ] && diff <(pairs "$out/full/results.csv") <(pairs "$out/merged/results.csv") >/dev/null; then
	ok "merge of 3 shards: the unsharded run's $total (candidate, status) pairs"
else
	bad "merge (exit $rc): $(tail -2 "$out/merge.err"); pairs differ: $(diff <(pairs "$out/full/results.csv") <(pairs "$out/merged/results.csv") | head -4 | tr '\n' ' ')"
fi
if diff <(sort "$out/all-rows") <(tail -n +2 "$out/merged/results.csv" | sort) >/dev/null &&
   cmp -s <(head -1 "$out/merged/results.csv") <(head -1 "$out/full/results.csv"); then
	ok "merged rows are the shards' rows byte for byte, under the same header"
else
	bad "merged rows or header differ from the shards'"
fi
grep -q '"missing": \[\]' "$out/merged/run.json" && grep -q '"2/3"' "$out/merged/run.json" &&
	ok "merged run.json says which shards it joined" || bad "merged run.json does not list the shards"

# the same shard twice: the same candidates
"$exe" eval "${args[@]}" --shard 2/3 --out "$out/s2again" >/dev/null 2>&1
if diff <(pairs "$out/s2/results.csv" | cut -f1) <(pairs "$out/s2again/results.csv" | cut -f1) >/dev/null; then
	ok "shard 2/3 twice: the same $(rows "$out/s2/results.csv") candidates"
else
	bad "shard 2/3 twice: different candidates"
fi
# ... and the same candidates whatever the path: a copy of the set elsewhere
mkdir -p "$out/copy/deeper"
cp "$smoke"/* "$out/copy/deeper/"
"$exe" eval "$out/copy" --no-timing --quick --timeout 2 --seed 7 --shard 2/3 --out "$out/s2copy" \
	>/dev/null 2>&1
if diff <(pairs "$out/s2/results.csv" | cut -f1 | xargs -n1 basename) \
	<(pairs "$out/s2copy/results.csv" | cut -f1 | xargs -n1 basename) >/dev/null; then
	ok "shard 2/3 of a copy under another path: the same candidates"
else
	bad "shard 2/3 depends on the path"
fi

# merge refuses shards of different seeds, naming both directories
"$exe" eval "$smoke" --no-timing --quick --timeout 2 --seed 8 --shard 2/3 --out "$out/s2seed8" \
	>/dev/null 2>&1
rc=0
"$exe" merge "$out/s1" "$out/s2seed8" "$out/s3" --out "$out/m-seed" >/dev/null 2>"$out/m-seed.err" || rc=$?
if [ "$rc" -eq 2 ] && grep -q "seed" "$out/m-seed.err" && grep -q "s2seed8: seed 8" "$out/m-seed.err" &&
   grep -q "s1: seed 7" "$out/m-seed.err" && [ ! -e "$out/m-seed/results.csv" ]; then
	ok "merge refuses shards of different seeds (exit 2): $(head -1 "$out/m-seed.err")"
else
	bad "merge of different seeds: exit $rc: $(cat "$out/m-seed.err")"
fi
# a missing shard: exit 2; with --partial, the two shards' rows
rc=0
"$exe" merge "$out/s1" "$out/s3" --out "$out/m-miss" >/dev/null 2>"$out/m-miss.err" || rc=$?
if [ "$rc" -eq 2 ] && grep -q "missing.*2/3" "$out/m-miss.err"; then
	ok "merge refuses a missing shard (exit 2): $(head -1 "$out/m-miss.err")"
else
	bad "merge without shard 2: exit $rc: $(cat "$out/m-miss.err")"
fi
rc=0
"$exe" merge "$out/s1" "$out/s3" --partial --out "$out/m-part" >/dev/null 2>"$out/m-part.err" || rc=$?
want=$(($(rows "$out/s1/results.csv") + $(rows "$out/s3/results.csv")))
if [ "$rc" -eq 0 ] && [ "$(rows "$out/m-part/results.csv")" -eq "$want" ] &&
   grep -q '"partial": true' "$out/m-part/run.json"; then
	ok "merge --partial without shard 2: $want rows, run.json says partial"
else
	bad "merge --partial: exit $rc, $(rows "$out/m-part/results.csv" 2>/dev/null || echo no) rows, want $want"
fi
# a duplicate candidate: identical kept once; another status refused, named
cp -r "$out/s1" "$out/s1dup"
rc=0
"$exe" merge "$out/s1" "$out/s1dup" "$out/s2" "$out/s3" --partial --out "$out/m-dup" >/dev/null 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && [ "$(rows "$out/m-dup/results.csv")" -eq "$total" ]; then
	ok "an identical duplicate shard is kept once ($total rows)"
else
	bad "identical duplicate: exit $rc, $(rows "$out/m-dup/results.csv" 2>/dev/null || echo no) rows"
fi
victim=$(pairs "$out/s1/results.csv" | head -1)
vcand=$(echo "$victim" | cut -f1)
vstat=$(echo "$victim" | cut -f2)
other=ok; [ "$vstat" = ok ] && other=mismatch
awk -v c="$vcand" -v s="$vstat" -v o="$other" -F'","' -v OFS='","' \
	'NR > 1 && $3 == c && $7 == s { $7 = o } { print }' "$out/s1/results.csv" > "$out/s1dup/results.csv"
rc=0
"$exe" merge "$out/s1" "$out/s1dup" "$out/s2" "$out/s3" --partial --out "$out/m-conf" >/dev/null \
	2>"$out/m-conf.err" || rc=$?
if [ "$rc" -eq 2 ] && grep -qF "$(basename "$vcand")" "$out/m-conf.err" &&
   grep -q "$vstat in .*s1;" "$out/m-conf.err" && grep -q "$other in .*s1dup" "$out/m-conf.err"; then
	ok "a duplicate with another status is refused (exit 2): $(head -1 "$out/m-conf.err" | cut -c1-160)"
else
	bad "conflicting duplicate: exit $rc: $(cat "$out/m-conf.err")"
fi

# bad --shard values are exit 2 naming it; --resume under another --shard is refused
for s in 0/3 4/3 1/0 a/3 1/10001 3 1/3x; do
	rc=0
	"$exe" eval "$smoke" --shard "$s" --out "$out/badshard" >/dev/null 2>"$out/badshard.err" || rc=$?
	[ "$rc" -eq 2 ] && grep -q -- "--shard" "$out/badshard.err" || bad "--shard $s: exit $rc"
done
ok "bad --shard values: exit 2 naming --shard"
rc=0
"$exe" eval "${args[@]}" --shard 1/3 --resume --out "$out/s2" >/dev/null 2>"$out/resume.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--shard 1/3 (was 2/3)" "$out/resume.err" &&
	ok "--resume under another --shard: exit 2" || bad "--resume, other shard: exit $rc: $(cat "$out/resume.err")"
# an empty shard is not an error (exit 0, says so), unlike "nothing evaluated"
found=""
for i in 1 2 3 4 5 6 7 8; do
	rc=0
	"$exe" eval "${args[@]}" --shard "$i/10000" --out "$out/empty" >/dev/null 2>"$out/empty.err" || rc=$?
	if grep -q "0 of the $total candidate" "$out/empty.err"; then
		found=$i
		break
	fi
done
if [ -n "$found" ] && [ "$rc" -eq 0 ] && [ "$(rows "$out/empty/results.csv")" -eq 0 ] &&
   grep -q "none fell in this shard" "$out/empty.err"; then
	ok "empty shard $found/10000: exit 0, says so, header-only results.csv"
else
	bad "empty shard: ${found:-none found in 1..8}/10000 exit $rc: $(cat "$out/empty.err")"
fi
# ... but a merge of shards with no row at all is "nothing evaluated" (exit 5)
rc=0
"$exe" merge "$out/empty" --partial --out "$out/m-empty" >/dev/null 2>"$out/m-empty.err" || rc=$?
[ "$rc" -eq 5 ] && grep -q "nothing evaluated" "$out/m-empty.err" &&
	ok "merge of an empty shard alone: exit 5" || bad "merge of an empty shard: exit $rc"
# --resume of a finished shard re-verifies nothing and keeps its rows
cp -r "$out/s3" "$out/s3resume"
rc=0
"$exe" eval "${args[@]}" --shard 3/3 --resume --out "$out/s3resume" >/dev/null 2>"$out/s3resume.err" || rc=$?
if [ "$rc" -eq 0 ] && grep -q "0 candidate(s) evaluated" "$out/s3resume.err" &&
   cmp -s "$out/s3/results.csv" "$out/s3resume/results.csv"; then
	ok "--resume of finished shard 3/3: nothing re-verified, rows unchanged"
else
	bad "--resume of shard 3/3: exit $rc: $(tail -2 "$out/s3resume.err")"
fi

# a folder that changed between shard starts: the shards saw different
# candidates (run.json candidates_seen) and merge refuses them, naming the
# shards and their counts (before, it merged "complete" with rows missing)
mkdir -p "$out/chg"
for c in relu_plain relu_fast gelu_plain gelu_fast rowsum_fast layernorm_plain; do
	cp "$smoke/$c".* "$out/chg/"
done
cargs=(--no-timing --quick --timeout 2 --seed 7)
"$exe" eval "$out/chg" "${cargs[@]}" --shard 1/2 --out "$out/c1" >/dev/null 2>&1 || bad "changed folder: shard 1/2 failed"
# two of shard 2's candidates vanish before shard 2 starts: nobody evaluates them
gone=()
for f in "$out/chg"/*.c; do
	grep -qF "$(basename "$f")" "$out/c1/results.csv" || gone+=("$f")
done
[ ${#gone[@]} -ge 1 ] || bad "changed folder: shard 2/2 got none of the 6 (no candidate to remove)"
gone=("${gone[@]:0:2}")
for f in "${gone[@]}"; do rm "$f" "${f%.c}.json"; done
left=$((6 - ${#gone[@]}))
"$exe" eval "$out/chg" "${cargs[@]}" --shard 2/2 --out "$out/c2" >/dev/null 2>&1 || bad "changed folder: shard 2/2 failed"
rc=0
"$exe" merge "$out/c1" "$out/c2" --out "$out/m-chg" >/dev/null 2>"$out/m-chg.err" || rc=$?
if [ "$rc" -eq 2 ] && grep -q "saw different candidates" "$out/m-chg.err" &&
   grep -q "6 candidate(s), sha256 [0-9a-f]\{12\}: $out/c1 (1/2)" "$out/m-chg.err" &&
   grep -q "$left candidate(s), sha256 [0-9a-f]\{12\}: $out/c2 (2/2)" "$out/m-chg.err" &&
   [ ! -e "$out/m-chg/results.csv" ]; then
	ok "shards of a folder that changed between their starts are refused (exit 2): $(sed -n 2,3p "$out/m-chg.err" | tr -s ' \n' ' ')"
else
	bad "merge of a changed folder's shards: exit $rc: $(cat "$out/m-chg.err")"
fi
# the same shards merged with the check gone (as a crucible before it did):
# "complete", with rows of the 6 candidates lost -- what the check prevents
for d in c1 c2; do
	cp -r "$out/$d" "$out/$d-old"
	sed -i '/^  "candidates_seen": {/,/^  },/d' "$out/$d-old/run.json"
done
rc=0
"$exe" merge "$out/c1-old" "$out/c2-old" --out "$out/m-old" >/dev/null 2>"$out/m-old.err" || rc=$?
if [ "$rc" -eq 2 ] && grep -q "c1-old/run.json has no \"candidates_seen\": the shard predates the check" "$out/m-old.err" &&
   grep -q -- "--no-seen-check" "$out/m-old.err"; then
	ok "shards without candidates_seen are refused (exit 2), naming --no-seen-check"
else
	bad "merge of shards without candidates_seen: exit $rc: $(cat "$out/m-old.err")"
fi
rc=0
"$exe" merge "$out/c1-old" "$out/c2-old" --no-seen-check --out "$out/m-old" >/dev/null 2>"$out/m-old.err" || rc=$?
if [ "$rc" -eq 0 ] && grep -q '"candidates_checked": false' "$out/m-old/run.json" &&
   grep -q '"complete": true' "$out/m-old/run.json" && [ "$(rows "$out/m-old/results.csv")" -eq $((6 - ${#gone[@]})) ]; then
	ok "--no-seen-check merges them \"complete\" with $(rows "$out/m-old/results.csv") rows of 6 candidates (the unchecked merge loses rows), candidates_checked false"
else
	bad "merge --no-seen-check: exit $rc: $(cat "$out/m-old.err")"
fi
grep -q '"candidates_checked": true' "$out/merged/run.json" &&
	ok "a checked merge says candidates_checked true" || bad "merged run.json lacks candidates_checked true"
# a malformed candidates_seen is bad input, named
cp -r "$out/s1" "$out/s1bad"
sed -i 's/^\(    "sha256": "\)[0-9a-f]*"/\1nothex"/' "$out/s1bad/run.json"
rc=0
"$exe" merge "$out/s1bad" "$out/s2" "$out/s3" --out "$out/m-bad" >/dev/null 2>"$out/m-bad.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "s1bad/run.json: \"candidates_seen\" is not" "$out/m-bad.err" &&
	ok "a malformed candidates_seen: exit 2 naming the file" || bad "malformed candidates_seen: exit $rc: $(cat "$out/m-bad.err")"
# --out made with its parents and locked: a merge into a folder another holds is refused
mkdir -p "$out/m-lock"
exec 9>"$out/m-lock/.crucible.lock"   # held here, as by another process
echo "crucible eval, pid 1 on elsewhere, since then" >&9
flock 9
rc=0
"$exe" merge "$out/s1" "$out/s2" "$out/s3" --out "$out/m-lock" >/dev/null 2>"$out/m-lock.err" || rc=$?
exec 9>&-
[ "$rc" -eq 2 ] && grep -q "m-lock is in use by crucible eval, pid 1 on elsewhere" "$out/m-lock.err" &&
	ok "merge into a locked --out: exit 2 naming the holder" || bad "merge into a locked --out: exit $rc: $(cat "$out/m-lock.err")"
rc=0
"$exe" merge "$out/s1" "$out/s2" "$out/s3" --out "$out/deep/er/merged" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 0 ] && [ -s "$out/deep/er/merged/results.csv" ] &&
	ok "merge --out a/b/c: made with its parents" || bad "merge --out with missing parents: exit $rc"

# the Slurm script: the array body for every index, then its merge step
slurm="$src/scripts/slurm-eval.sh"
for id in 0 1 2; do
	SLURM_ARRAY_TASK_ID=$id "$slurm" shard -n 3 -o "$out/slurm" -c "$exe" -- "${args[@]}" \
		>/dev/null 2>"$out/slurm-$id.err" || bad "slurm shard $id: $(tail -2 "$out/slurm-$id.err")"
done
rc=0
"$slurm" merge -n 3 -o "$out/slurm" -c "$exe" >/dev/null 2>"$out/slurm-merge.err" || rc=$?
if [ "$rc" -eq 0 ] && diff <(pairs "$out/full/results.csv") <(pairs "$out/slurm/merged/results.csv") >/dev/null; then
	ok "slurm-eval.sh shard 0..2 then merge: the single run's $total verdicts"
else
	bad "slurm-eval.sh merge exit $rc: $(tail -3 "$out/slurm-merge.err")"
fi
# the Slurm ids the job had reach each shard's run.json, and the merged one
# lists them per shard (the script sets none of them)
if grep -q '"array_task_id": "1"' "$out/slurm/shard-1/run.json" &&
   grep -q '^end exit=0' "$out/slurm/slurm-eval/status/shard-1" 2>/dev/null; then
	ok "slurm-eval.sh shard: SLURM_ARRAY_TASK_ID in run.json, the exit status recorded"
else
	bad "slurm shard 1: run.json slurm $(grep -A4 '"slurm"' "$out/slurm/shard-1/run.json" | tr -d '\n') status $(cat "$out/slurm/slurm-eval/status/shard-1" 2>&1)"
fi
grep -q '"array_task_id": "2"' "$out/slurm/merged/run.json" &&
	ok "the merged run.json lists each shard's Slurm ids" || bad "merged run.json lacks the shards' Slurm ids"
rc=0
SLURM_ARRAY_TASK_ID=3 "$slurm" shard -n 3 -o "$out/slurm" -c "$exe" -- "${args[@]}" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] && ok "slurm-eval.sh shard with index 3 of 3: exit 2" || bad "slurm index 3 of 3: exit $rc"
# submit: a fake sbatch records what it was asked; the merge waits on the array
mkdir -p "$out/fakebin"
cat > "$out/fakebin/sbatch" <<EOF
#!/usr/bin/env bash
printf '%s\n' "\$*" >> "$out/sbatch.log"
echo 4242
EOF
chmod +x "$out/fakebin/sbatch"
PATH="$out/fakebin:$PATH" "$slurm" submit -n 5 -o "$out/sub" -c "$exe" -- "$smoke" --no-timing \
	>"$out/submit.out" 2>&1 || bad "slurm-eval.sh submit: $(cat "$out/submit.out")"
if [ "$(wc -l < "$out/sbatch.log")" -eq 2 ] && sed -n 1p "$out/sbatch.log" | grep -q -- "--array=0-4 .* shard -n 5 " &&
   sed -n 1p "$out/sbatch.log" | grep -q -- "--seed [0-9]" &&
   sed -n 2p "$out/sbatch.log" | grep -q -- "--dependency=afterok:4242 .* merge -n 5 "; then
	ok "slurm-eval.sh submit: an --array=0-4 job with one --seed, a merge job afterok on it"
else
	bad "slurm-eval.sh submit asked sbatch: $(cat "$out/sbatch.log")"
fi

# a whole recovery through a Slurm that runs each job at once (a fake sbatch:
# array tasks one by one, afterok/afterany honoured, a job whose afterok
# failed cancelled under --kill-on-invalid-dep=yes, else left pending):
# shard 2/3 fails, the merge job is cancelled, status names the shard,
# resubmit-failed reruns that shard alone, and its merge equals the single run
mkdir -p "$out/fakeslurm/jobs"
cat > "$out/fakeslurm/sbatch" <<'FAKE'
#!/usr/bin/env bash
d="$FAKESLURM_DIR"; n=$(( $(ls "$d/jobs" | wc -l) + 2001 ))
array=""; dep=""; kill=no; output=""
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
	case "$1" in
	--array=*) array="${1#--array=}"; array="${array%\%*}" ;;
	--dependency=*) dep="${1#--dependency=}" ;;
	--kill-on-invalid-dep=yes) kill=yes ;;
	--output=*) output="${1#--output=}" ;;
	esac
	shift
done
echo "$n $array $dep" >> "$d/log"
if [ -n "$dep" ]; then
	kind="${dep%%:*}"; ids="${dep#*:}"
	for j in ${ids//:/ }; do
		if [ "$kind" = afterok ] && [ "$(cat "$d/jobs/$j")" != ok ]; then
			[ "$kill" = yes ] && echo cancelled > "$d/jobs/$n" || echo pending > "$d/jobs/$n"
			echo "$n"; exit 0
		fi
	done
fi
st=ok
if [ -n "$array" ]; then
	for r in ${array//,/ }; do
		for ((t = ${r%-*}; t <= ${r#*-}; t++)); do
			o="${output//%A/$n}"; o="${o//%a/$t}"
			SLURM_JOB_ID=$((n * 100 + t)) SLURM_ARRAY_JOB_ID=$n SLURM_ARRAY_TASK_ID=$t "$@" > "$o" 2>&1 || st=failed
		done
	done
else
	SLURM_JOB_ID=$n "$@" > "${output//%j/$n}" 2>&1 || st=failed
fi
echo "$st" > "$d/jobs/$n"
echo "$n"
FAKE
# a crucible whose shard 2/3 is stopped after 2 s (SIGTERM, as a time limit
# does) and exits 3, while $out/fail-2of3 exists
cat > "$out/fakeslurm/crucible" <<FAKE
#!/usr/bin/env bash
case " \$* " in *" --shard 2/3 "*) [ -e "$out/fail-2of3" ] && { timeout -s TERM 2 "$exe" "\$@"; echo "injected failure" >&2; exit 3; } ;; esac
exec "$exe" "\$@"
FAKE
chmod +x "$out/fakeslurm/sbatch" "$out/fakeslurm/crucible"
touch "$out/fail-2of3"
export FAKESLURM_DIR="$out/fakeslurm"
rc=0
PATH="$out/fakeslurm:$PATH" "$slurm" submit -n 3 -o "$out/rec" -c "$out/fakeslurm/crucible" -- "${args[@]}" \
	>"$out/rec.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && [ "$(cat "$out/fakeslurm/jobs/2001")" = failed ] &&
   [ "$(cat "$out/fakeslurm/jobs/2002")" = cancelled ] && [ ! -e "$out/rec/merged" ]; then
	ok "recovery: shard 2/3 failed, the merge job was cancelled (kill-on-invalid-dep), not left pending"
else
	bad "recovery submit: exit $rc: $(cat "$out/rec.out"); jobs: $(grep . "$out/fakeslurm/jobs"/* | tr '\n' ' ')"
fi
rc=0
st=$(PATH="$out/fakeslurm:$PATH" "$slurm" status -o "$out/rec" 2>&1) || rc=$?
if [ "$rc" -eq 1 ] && [[ $st == *"shard-1: failed, exit 3 (log: $out/rec/slurm-eval/logs/shard-2001_1.out)"* ]] &&
   grep -q "injected failure" "$out/rec/slurm-eval/logs/shard-2001_1.out" && [[ $st == *"2 of 3 shard(s) done"* ]]; then
	ok "recovery: status names the failed shard, its exit and its log"
else
	bad "recovery status: exit $rc: $st"
fi
rm "$out/fail-2of3"
rc=0
PATH="$out/fakeslurm:$PATH" "$slurm" resubmit-failed -o "$out/rec" >"$out/rec2.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && grep -q "^2003 1 $" "$out/fakeslurm/log" && grep -q "^2004  afterok:2003$" "$out/fakeslurm/log" &&
   [ "$(cat "$out/fakeslurm/jobs/2004")" = ok ] &&
   diff <(pairs "$out/full/results.csv") <(pairs "$out/rec/merged/results.csv") >/dev/null; then
	grep -q '"--resume"' "$out/rec/shard-1/run.json" && ok "recovery: the rerun shard resumed its folder" ||
		bad "recovery: the rerun shard did not --resume"
	ok "recovery: resubmit-failed reran shard 2/3 alone, and its merge job gave the single run's $total verdicts"
else
	bad "recovery resubmit-failed: exit $rc: $(cat "$out/rec2.out"); sbatch: $(tr '\n' ';' < "$out/fakeslurm/log")"
fi
grep -q '"array_job_id": "2003"' "$out/rec/merged/run.json" && grep -q '"array_job_id": "2001"' "$out/rec/merged/run.json" &&
	ok "recovery: the merged run.json names both arrays' Slurm ids" || bad "recovery: merged run.json lacks the Slurm ids"

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
