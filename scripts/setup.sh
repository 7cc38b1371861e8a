#!/usr/bin/env bash
# Installs the Debian 12 packages crucible needs (as root), if missing.
set -euo pipefail
pkgs="meson ninja-build gcc pkg-config libcmocka-dev libjansson-dev libcsv-dev libseccomp-dev libopenblas-dev libpcre2-dev libcurl4-openssl-dev libmicrohttpd-dev libsqlite3-dev libpq-dev libssl-dev postgresql chromium curl jq sqlite3 bc"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
