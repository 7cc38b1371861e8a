#!/usr/bin/env bash
# The README's main command: set up, build, evaluate the bundled samples.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -d build ] || meson setup build -Dwerror=true >/dev/null   # as scripts/test.sh: one build for both
ninja -C build >/dev/null
exec ./build/harness/crucible eval "$@"
