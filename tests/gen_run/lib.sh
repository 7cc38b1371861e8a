# lib.sh — what the `crucible run` test scripts share (sourced): counters
# and checks, a results column, and fake_openai started and stopped.
# Needs $csvq (the csvq helper) for col, $fake, $fix and $out for serve.
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
want() { if [ "$2" = "$3" ]; then ok; else no "$1: got '$2', want '$3'"; fi; }
col() { "$csvq" "$@" | paste -sd' ' -; }
server_pid=
serve() { # name script [fake options]: starts fake_openai on $fix/script, sets $url
	local name=$1 script=$2; shift 2
	mkdir -p "$out/$name.log"
	"$fake" --port-file "$out/$name.port" --script "$fix/$script" --log "$out/$name.log" "$@" &
	server_pid=$!
	for _ in $(seq 1 100); do [ -s "$out/$name.port" ] && break; sleep 0.05; done
	url="http://127.0.0.1:$(cat "$out/$name.port")/v1"
}
stop() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
