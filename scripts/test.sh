#!/usr/bin/env bash
# The README's test command: set up, build, run every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build
meson test -C build --print-errorlogs
