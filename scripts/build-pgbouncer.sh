#!/usr/bin/env bash
# Builds PgBouncer 1.24 (prepared statements in transaction mode, max_prepared_statements)
# from Debian trixie's source package into .tmp/pgbouncer-1.24/, where the pooler tests
# and benchmarks find it (test/support/servers/pgbouncer.ts). Debian bookworm's apt has only 1.18;
# trixie's source builds on bookworm in about a minute. .ci/run calls it.
#
# Idempotent: does nothing when .tmp/pgbouncer-1.24/bin/pgbouncer is there.
# Needs root or sudo for apt-get (a deb-src entry for trixie, the build dependencies).
set -euo pipefail

cd "$(dirname "$0")/.."
prefix="$(pwd)/.tmp/pgbouncer-1.24"
binary="$prefix/bin/pgbouncer"

if [ -x "$binary" ]; then
  echo "=== PgBouncer already built: $("$binary" --version | head -n 1) in $prefix"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

updated=""
# Source packages only: nothing is installed from trixie, so the system stays bookworm.
sources=/etc/apt/sources.list.d/trixie-src.sources
if [ ! -f "$sources" ]; then
  echo "=== adding a deb-src entry for Debian trixie (source packages only)"
  $SUDO tee "$sources" >/dev/null <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  $SUDO apt-get update
  updated=1
fi

deps=(dpkg-dev make gcc libevent-dev libssl-dev libc-ares-dev pkg-config)
missing=()
for p in "${deps[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ -z "$updated" ]; then $SUDO apt-get update; updated=1; fi
  $SUDO apt-get install -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get source --download-only pgbouncer/trixie; then
  # The deb-src entry was there, its index not yet: read it once.
  if [ -n "$updated" ]; then exit 1; fi
  $SUDO apt-get update
  apt-get source --download-only pgbouncer/trixie
fi
dsc="$(ls pgbouncer_1.24*.dsc 2>/dev/null | head -n 1 || true)"
if [ -z "$dsc" ]; then
  echo "=== FAILED: trixie's pgbouncer source is not 1.24.x: $(ls ./*.dsc)" >&2
  exit 1
fi
dpkg-source --no-check -x "$dsc" src >/dev/null
cd src
./configure --prefix="$prefix" --without-systemd >configure.log 2>&1 || { tail -n 40 configure.log; exit 1; }
make -j2 >make.log 2>&1 || { tail -n 40 make.log; exit 1; }
make install >install.log 2>&1 || { tail -n 40 install.log; exit 1; }
# The tests run PgBouncer as the test server's account (it refuses to run as root).
chmod -R a+rX "$prefix"
echo "=== built $("$binary" --version | head -n 1) into $prefix"
