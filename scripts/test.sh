#!/usr/bin/env bash
# The README's test command: set up, build (warnings are errors), run every
# test suite. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -d build ] || meson setup build -Dwerror=true >/dev/null
ninja -C build
meson test -C build --print-errorlogs
