#!/usr/bin/env bash
# setup.sh: installs the Debian packages typellm builds with, then configures
# and builds it into build/. Idempotent: safe to run again.
#   scripts/setup.sh          what building and running typellm needs (the main job)
#   scripts/setup.sh --test   also what the test suite needs: clang (fuzzing), python3
#                             with numpy and jsonschema, curl, Node.js/npm (SDK tests); scripts/test.sh
#                             passes it
#   scripts/setup.sh --bench  also the load-test tools of bench/ (wrk, valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config
      libjansson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev libcurl4-openssl-dev)
for arg in "$@"; do
  case "$arg" in
    --test) PKGS+=(clang libclang-rt-14-dev python3 python3-numpy python3-jsonschema curl nodejs npm) ;;
    --bench) PKGS+=(wrk valgrind curl) ;;
    *) echo "setup: unknown option '$arg' (use --test or --bench)" >&2; exit 2 ;;
  esac
done

missing=()
# A tool package counts as present when its command is already on PATH from
# another source (e.g. NodeSource's nodejs bundles npm and conflicts with
# Debian's npm package, so installing npm there fails).
declare -A PKG_CMD=([nodejs]=node [npm]=npm [wrk]=wrk [valgrind]=valgrind [cmake]=cmake [curl]=curl [python3]=python3)
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
