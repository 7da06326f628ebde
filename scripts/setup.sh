#!/usr/bin/env bash
# setup.sh: installs the Debian packages typellm builds and tests with, then
# configures and builds it into build/. Idempotent: safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libjansson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev libcurl4-openssl-dev
      python3-numpy python3-jsonschema wrk valgrind nodejs npm)

missing=()
# A tool package counts as present when its command is already on PATH from
# another source (e.g. NodeSource's nodejs bundles npm and conflicts with
# Debian's npm package, so installing npm there fails).
declare -A PKG_CMD=([nodejs]=node [npm]=npm [wrk]=wrk [valgrind]=valgrind [cmake]=cmake)
for p in "${PKGS[@]}"; do
  if [ -n "${PKG_CMD[$p]:-}" ] && command -v "${PKG_CMD[$p]}" >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
