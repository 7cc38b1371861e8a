#!/usr/bin/env bash
# The false rejections that "Conditioning at float precision"
# (docs/VERIFIER.md) fixed, each at the seed that reproduced it: honest
# float kernels on inputs where the problem is ill-conditioned at float
# precision. Every one was a mismatch before (a fixed profile, so the seed
# reproduces it); each must now be ok. The measurement's noise is a CSPRNG
# draw, so this is a sample too: 48 of 48 passed when it was calibrated
# with four pairs; the GRU case failed once in a later test-suite run, and
# eight pairs passed it 20 of 20; it failed again in CI under a drawn
# profile, and a measurement still failing on an ill-conditioned output is
# now repeated (up to 4 rounds; docs/VERIFIER.md).
# Usage: cond_seeds.sh CRUCIBLE OUTDIR
set -euo pipefail
exe="$1"; out="$2"
c="${CRUCIBLE_DATADIR}/candidates"
cases=(
	"L3/39_GRU_plain.c 7789439027204082"                 # a GRU gate saturating the other way: -1789 for -17
	"L2/99_Matmul_GELU_Softmax_plain.c 2310717247304356" # a softmax near-tie, 60x the baseline
	"L3/1_MLP_plain.c 555818162214283"                   # a ReLU flip reaching 1011 elements of dx
	"L3/8_ResNetBasicBlock_float.c 102"                  # a ReLU flip, dx 27000x the baseline
	"L3/8_ResNetBasicBlock_float.c 2176240640688422"     # the same under the offset profile
	"L3/39_GRU_plain.c 7919"                             # the large profile's gate flipped: 4 in 30 before later rounds
)
rm -rf "$out"
mkdir -p "$out"
fail=0
for i in "${!cases[@]}"; do
	set -- ${cases[$i]}
	if ! "$exe" eval "$c/$1" --seed "$2" --quick --no-timing --check-expect \
		--out "$out/$i" > "$out/$i.log" 2>&1; then
		echo "FAIL: $1 --seed $2 --quick:"
		tail -n 3 "$out/$i.log"
		fail=1
	else
		echo "ok: $1 --seed $2 --quick"
	fi
done
exit "$fail"
