#!/usr/bin/env bash
# The rooms' one-way rule (docs/ARCHITECTURE.md): a file may include headers
# of its own room and of rooms below it, never of a room above. Rooms,
# lowest first; a room's rank is its position, and a file belongs to the
# longest room name its path starts with (decode/engine/ before decode/).
# Exit 1 naming each upward include. Tests, benchmarks and the build's
# cr_config.h are outside the rule.
#   check-rooms.sh [ROOT]        check the tree at ROOT (default: this checkout)
#   check-rooms.sh --self-test   prove the check fails on a back edge: a copy
#                                of the tree with one upward include per
#                                kind of edge must be refused, the copy
#                                without them accepted
set -euo pipefail
rooms=(common tasks cand sandbox cuda checks timing reports
	decode/tok decode/quant decode/model decode/sample decode/be decode/cpu decode/cuda decode/engine decode
	gen serve harness)

if [ "${1:-}" = --self-test ]; then
	here=$(cd "$(dirname "$0")/.." && pwd)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$here" && git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null ||
		find . -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh') |
		(cd "$here" && xargs cp --parents -t "$tmp")
	"$0" "$tmp" >/dev/null || { echo "rooms self-test: the clean copy was refused"; exit 1; }
	# one back edge of each kind: the basement into the top floor, one
	# decoder room into a higher one, a decoder kernel into the engine,
	# the verifier's rooms into the CLI
	edges=("cand/cand.c:harness/verify.h" "sandbox/proc.c:harness/cli.h"
	       "decode/quant/dec_quant.c:decode/engine/dec_engine.h" "decode/model/gguf.c:decode/dec_run.h"
	       "decode/cuda/dec_cu_common.cuh:decode/engine/dec_forward.h" "checks/check.c:gen/gen.h"
	       "cuda/cuda_drv.c:decode/be/dec_be.h")
	for e in "${edges[@]}"; do
		f=${e%%:*} inc=${e#*:}
		cp "$here/$f" "$tmp/$f.orig"
		printf '#include "%s"\n' "$inc" >>"$tmp/$f"
		if out=$("$0" "$tmp" 2>&1); then
			echo "rooms self-test: $f including $inc was accepted"; exit 1
		fi
		grep -q "^$f:[0-9]*: includes $inc" <<<"$out" ||
			{ echo "rooms self-test: the refusal does not name $f and $inc:"; echo "$out"; exit 1; }
		mv "$tmp/$f.orig" "$tmp/$f"
	done
	echo "rooms self-test: ${#edges[@]} back edges refused, the clean tree accepted"
	exit 0
fi
cd "${1:-$(dirname "$0")/..}"

rank() { # the room of a path: the longest room name it starts with
	local p=$1 best=-1 blen=0 i
	for i in "${!rooms[@]}"; do
		local r=${rooms[$i]}
		if [[ $p == "$r"/* && ${#r} -gt $blen ]]; then best=$i; blen=${#r}; fi
	done
	echo "$best"
}

list() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
		git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh'
	else
		find . \( -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' \) | sed 's#^\./##'
	fi
}

bad=0 n=0
while IFS= read -r f; do
	[ -f "$f" ] || continue
	fr=$(rank "$f")
	[ "$fr" -ge 0 ] || continue
	n=$((n + 1))
	while IFS=: read -r ln inc; do
		inc=${inc#*\"}; inc=${inc%%\"*}
		ir=$(rank "$inc")
		[ "$ir" -ge 0 ] || continue
		if [ "$ir" -gt "$fr" ]; then
			echo "$f:$ln: includes $inc (${rooms[$ir]}/ is above ${rooms[$fr]}/)"
			bad=1
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done < <(list)
if [ "$bad" -eq 0 ]; then
	echo "rooms: every include of $n files points down or within its room (${#rooms[@]} rooms)"
fi
exit "$bad"
