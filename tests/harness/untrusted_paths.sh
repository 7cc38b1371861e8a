#!/usr/bin/env bash
# Untrusted paths (SPEC §3, docs/VERIFIER.md "Untrusted paths"): a batch,
# a sidecar, a replayed run, a resumed run and merge/report inputs are
# opened as data. A FIFO never hangs crucible, a link is never followed
# (in a walked tree it is skipped, named on stderr), the secret behind a
# link never reaches stdout, stderr or any output file, and the honest
# candidates of a batch are still evaluated. Every command runs under
# `timeout 60`: a hang is exit 124, a failure here.
set -uo pipefail
exe="$1"; src="$2"; out="$3"
rm -rf "$out"; mkdir -p "$out"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
want_rc() { # what got want
	if [ "$2" = "$3" ]; then ok; else no "$1: exit $2, want $3 (stderr: $(head -c 600 "$log.err"))"; fi
}
has() { # what file text
	if grep -qF -- "$3" "$2"; then ok; else no "$1: '$3' not in $(basename "$2"): $(head -c 600 "$2")"; fi
}
run() { # name args...: crucible under a timeout, stdout/stderr to $out/name.{out,err}
	log="$out/$1"; shift
	timeout 60 "$exe" "$@" >"$log.out" 2>"$log.err"
}
smoke="$src/data/candidates/smoke"
token=CRUCIBLE_SECRET_41d9c2
# the secret: outside every tree, root's, no newline at the end (a partial
# row to a resume that followed a link to it would cut it)
mkdir -p "$out/secret"
printf '%s:$6$rounds=5000$x' "$token" >"$out/secret/shadow"
chmod 600 "$out/secret/shadow"
secret_sum=$(sha256sum <"$out/secret/shadow")

# ---- a batch: honest candidates beside a planted tree ----
b="$out/batch"; mkdir -p "$b" "$out/outside"
cp "$smoke/relu_plain.c" "$smoke/relu_plain.json" "$b/"
cp "$smoke/relu_plain.c" "$b/fifo_side.c"; mkfifo "$b/fifo_side.json"     # sidecar a FIFO
cp "$smoke/relu_plain.c" "$b/link_side.c"; ln -s "$out/secret/shadow" "$b/link_side.json"
cp "$smoke/relu_plain.c" "$out/outside/outside_relu.c"
ln -s "$out/outside" "$b/dirlink"                  # a folder out of the batch
ln -s /nonexistent/nowhere.c "$b/dangling.c"       # a link to nothing
ln -s relu_plain.c "$b/inside_link.c"              # a link to a file inside the batch
ln -s "$out/outside/outside_relu.c" "$b/cand_link.c"
mkfifo "$b/fifo_cand.c"                            # a candidate that is a FIFO
run eval eval "$b" --no-timing --timeout 2 --out "$out/eval-out"; want_rc "eval of the planted batch" $? 0
for p in dirlink dangling.c inside_link.c cand_link.c; do
	has "eval names what it skipped" "$log.err" "skipped $b/$p: a symbolic link (not followed)"
done
has "eval names the FIFO candidate" "$log.err" "skipped $b/fifo_cand.c: a FIFO, not a regular file"
has "eval names the FIFO sidecar" "$log.err" "$b/fifo_side.json: is a FIFO, not a regular file"
has "eval names the linked sidecar" "$log.err" "$b/link_side.json: is a symbolic link (not followed)"
r="$out/eval-out/results.csv"
for c in relu_plain.c fifo_side.c link_side.c; do
	grep -q "^[^,]*,\"\{0,1\}smoke/relu\"\{0,1\},\"\{0,1\}$b/$c\"\{0,1\},.*,\"\{0,1\}ok\"\{0,1\}," "$r" \
		&& ok || no "no ok row for $c in results.csv: $(cut -c1-300 "$r")"
done
rows=$(($(wc -l <"$r") - 1))
[ "$rows" -eq 3 ] && ok || no "eval wrote $rows rows, want 3 (nothing through a link or a FIFO)"
grep -q outside_relu "$r" && no "a candidate outside the batch was evaluated" || ok

# ---- paths named on the command line ----
run eval-link eval "$b/cand_link.c" --no-timing --out "$out/eval-link-out"; want_rc "eval of a linked file" $? 2
has "eval names the linked file" "$log.err" "$b/cand_link.c: is a symbolic link"
run eval-fifo eval "$b/fifo_cand.c" --no-timing --out "$out/eval-fifo-out"; want_rc "eval of a FIFO" $? 2
has "eval names the FIFO" "$log.err" "$b/fifo_cand.c: is a FIFO, not a regular file"
run check-link check "$b/cand_link.c" --no-timing; want_rc "check of a linked file" $? 2
has "check names the linked file" "$log.err" "$b/cand_link.c: is a symbolic link (not followed)"
run check-fifo check "$b/fifo_cand.c" --no-timing; want_rc "check of a FIFO" $? 2
has "check names the FIFO" "$log.err" "$b/fifo_cand.c: is a FIFO, not a regular file"
# a folder the user names may be a link they chose (documented); inside it nothing is followed
ln -s "$out/outside" "$out/outside-link"
run eval-dirarg eval "$out/outside-link" --no-timing --timeout 2 --out "$out/eval-dirarg-out"
want_rc "eval of a folder named through a link" $? 0
grep -q outside_relu.c "$out/eval-dirarg-out/results.csv" && ok || no "the named folder was not evaluated"

# ---- --resume onto a results.csv that is a link to the secret ----
mkdir -p "$out/resume-out"; ln -s "$out/secret/shadow" "$out/resume-out/results.csv"
run resume eval "$smoke/relu_plain.c" --no-timing --resume --out "$out/resume-out"; want_rc "--resume onto a linked results.csv" $? 2
has "--resume names results.csv" "$log.err" "resume-out/results.csv: is a symbolic link (not followed)"

# ---- crucible run --replay: completions and sidecars planted ----
honest="$src/tests/gen_run/replay/cand/smoke/relu/s2.txt"
replay() { # name: a replay dir whose cand/smoke/relu/s0.* the caller plants
	mkdir -p "$out/$1/cand/smoke/relu"; echo "$out/$1/cand/smoke/relu"
}
d=$(replay rp-link); ln -s "$out/secret/shadow" "$d/s0.txt"
d=$(replay rp-fifo); mkfifo "$d/s0.txt"
d=$(replay rp-side); cp "$honest" "$d/s0.txt"; ln -s "$out/secret/shadow" "$d/s0.json"
mkdir -p "$out/rp-dir/cand" "$out/elsewhere/relu"; cp "$honest" "$out/elsewhere/relu/s0.txt"
ln -s "$out/elsewhere" "$out/rp-dir/cand/smoke"     # a folder on the way out of the run
for name in rp-link rp-fifo rp-side rp-dir; do
	run "$name" run --replay "$out/$name" --task smoke/relu --strategy best-of-n --n 1 --no-timing \
		--timeout 2 --out "$out/$name-out"
	want_rc "run --replay $name" $? 2
done
has "replay names the linked completion" "$out/rp-link.err" "$out/rp-link/cand/smoke/relu/s0.txt: is a symbolic link (not followed)"
has "replay names the FIFO completion" "$out/rp-fifo.err" "$out/rp-fifo/cand/smoke/relu/s0.txt: is a FIFO, not a regular file"
has "replay names the linked sidecar" "$out/rp-side.err" "$out/rp-side/cand/smoke/relu/s0.json: is a symbolic link (not followed)"
has "replay names the linked folder" "$out/rp-dir.err" "$out/rp-dir/cand/smoke: is a symbolic link (not followed)"

# ---- merge and report: another run's files planted ----
run shard eval "$smoke/relu_plain.c" --no-timing --timeout 2 --out "$out/shard"; want_rc "the shard to plant" $? 0
cp -r "$out/shard" "$out/m-json"; rm "$out/m-json/run.json"; ln -s "$out/secret/shadow" "$out/m-json/run.json"
cp -r "$out/shard" "$out/m-csv"; rm "$out/m-csv/results.csv"; mkfifo "$out/m-csv/results.csv"
cp -r "$out/shard" "$out/m-smp"; rm -f "$out/m-smp/samples.csv"; ln -s "$out/secret/shadow" "$out/m-smp/samples.csv"
run merge-json merge "$out/m-json" --out "$out/merge-json-out"; want_rc "merge of a linked run.json" $? 2
has "merge names run.json" "$log.err" "$out/m-json/run.json: is a symbolic link (not followed)"
run merge-csv merge "$out/m-csv" --out "$out/merge-csv-out"; want_rc "merge of a FIFO results.csv" $? 2
has "merge names results.csv" "$log.err" "$out/m-csv/results.csv: is a FIFO, not a regular file"
run merge-smp merge "$out/m-smp" --out "$out/merge-smp-out"; want_rc "merge of a linked samples.csv" $? 2
has "merge names samples.csv" "$log.err" "$out/m-smp/samples.csv: is a symbolic link (not followed)"
cp -r "$out/shard" "$out/r-csv"; rm "$out/r-csv/results.csv"; ln -s "$out/secret/shadow" "$out/r-csv/results.csv"
run report-csv report "$out/r-csv"; want_rc "report of a linked results.csv" $? 2
has "report names results.csv" "$log.err" "$out/r-csv/results.csv"
run report-file report "$out/r-csv/results.csv"; want_rc "report of a linked results.csv named" $? 2
has "report names the linked file" "$log.err" "$out/r-csv/results.csv: is a symbolic link (not followed)"
run report-json report "$out/m-json/results.csv"; want_rc "report beside a linked run.json" $? 2
has "report names run.json" "$log.err" "$out/m-json/run.json: is a symbolic link (not followed)"

# ---- a resumed run directory with links planted where crucible writes ----
# (round 3's third attacker: selected.csv, curve.csv and run.json.tmp were
# written through them, as root). Each is replaced by crucible's own file;
# the victim behind each link must stay as it was.
good="$out/rp-good"; mkdir -p "$good/cand/smoke/relu"; cp "$honest" "$good/cand/smoke/relu/s0.txt"
run rs-first run --replay "$good" --task smoke/relu --strategy best-of-n --n 1 --no-timing --timeout 2 \
	--out "$out/rs-out"
want_rc "run --replay (to resume)" $? 0
for f in selected.csv curve.csv run.json.tmp; do
	printf 'victim of %s' "$f" >"$out/victim-$f"; rm -f "$out/rs-out/$f"; ln -s "$out/victim-$f" "$out/rs-out/$f"
done
run rs-resume run --replay "$good" --task smoke/relu --strategy best-of-n --n 1 --no-timing --timeout 2 \
	--out "$out/rs-out" --resume
want_rc "run --resume over planted links" $? 0
for f in selected.csv curve.csv run.json.tmp; do
	[ "$(cat "$out/victim-$f")" = "victim of $f" ] && ok || no "run --resume wrote through a link at $f"
done
mkdir -p "$out/re-out"
run re-first eval "$smoke/relu_plain.c" --no-timing --out "$out/re-out"; want_rc "eval (to resume)" $? 0
printf 'victim of run.json' >"$out/victim-runjson"
for i in $(seq 0 400); do ln -sf "$out/victim-runjson" "$out/re-out/.run.json.$(( $$ + i ))"; done
run re-resume eval "$smoke/relu_plain.c" --no-timing --resume --out "$out/re-out"
want_rc "eval --resume over planted temporary names" $? 0
[ "$(cat "$out/victim-runjson")" = "victim of run.json" ] && ok || no "eval --resume wrote run.json through a link"

# ---- a resumed run whose completion was swapped after its verdict was saved ----
# (round 3's seventh attacker: the saved `ok` stood for the new code)
mkdir -p "$out/sw-src/cand/smoke/relu"; cp "$honest" "$out/sw-src/cand/smoke/relu/s0.txt"
run sw-first run --replay "$out/sw-src" --task smoke/relu --strategy best-of-n --n 1 --no-timing --timeout 2 \
	--out "$out/sw-out"
want_rc "run (to swap)" $? 0
cp "$src/tests/gen_run/replay/cand/smoke/relu/s3.txt" "$out/sw-out/cand/smoke/relu/s0.txt"
head -1 "$out/sw-out/results.csv" >"$out/sw-head"; cp "$out/sw-head" "$out/sw-out/results.csv"
run sw-resume run --replay "$out/sw-src" --task smoke/relu --strategy best-of-n --n 1 --no-timing --timeout 2 \
	--out "$out/sw-out" --resume
want_rc "run --resume after a swap" $? 0
has "a saved verdict is not taken for other code" "$log.err" "not the verdict of s0 as it is now"
grep -q '"mismatch"' "$out/sw-out/results.csv" && ok || no "the swapped code was not verified again"

# ---- the secret: nowhere, and untouched ----
leak=$(grep -rlF -D skip --exclude-dir=secret -- "$token" "$out" 2>/dev/null)
[ -z "$leak" ] && ok || no "the secret reached: $leak"
[ "$(sha256sum <"$out/secret/shadow")" = "$secret_sum" ] && ok || no "the secret file was changed"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
