#!/usr/bin/env bash
# The rooms' one-way rule (docs/ARCHITECTURE.md): a file may include headers
# of its own room and of rooms below it, never of a room above. Rooms,
# lowest first; a room's rank is its position. Exit 1 naming each upward
# include. Tests, benchmarks and the build's cr_config.h are outside the rule.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
rooms=(common tasks harness/cand harness/worker cuda checks timing reports decode gen harness)

rank() { # the room of a path: the longest room name it starts with
	local p=$1 best=-1 blen=0 i
	for i in "${!rooms[@]}"; do
		local r=${rooms[$i]}
		if [[ $p == "$r"/* && ${#r} -gt $blen ]]; then best=$i; blen=${#r}; fi
	done
	echo "$best"
}

bad=0
while IFS= read -r f; do
	fr=$(rank "$f")
	[ "$fr" -ge 0 ] || continue
	while IFS=: read -r ln inc; do
		inc=${inc#*\"}; inc=${inc%%\"*}
		ir=$(rank "$inc")
		[ "$ir" -ge 0 ] || continue
		if [ "$ir" -gt "$fr" ]; then
			echo "$f:$ln: includes $inc (${rooms[$ir]}/ is above ${rooms[$fr]}/)"
			bad=1
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' | sed 's#^\./##')
if [ "$bad" -eq 0 ]; then
	echo "rooms: every include points down or within its room (${#rooms[@]} rooms)"
fi
exit "$bad"
