#!/usr/bin/env bash
# setup.sh: installs the Debian packages typellm builds with, then configures
# and builds it into build/. Idempotent: safe to run again.
#   scripts/setup.sh          what building and running typellm needs (the main job,
#                             including the Python package it runs)
#   scripts/setup.sh --test   also what the test suite needs: clang (fuzzing), SIMDe (the
#                             AVX-512 kernels emulated where the CPU lacks them), numpy,
#                             jsonschema, pytest and jinja2 (test_jinja2_slow), curl, Node.js/npm (SDK tests),
#                             chromium (the playground's browser test) and prometheus (promtool and a
#                             scraping server: test_metrics); scripts/test.sh
#                             passes it
#   scripts/setup.sh --bench  also the load-test tools of bench/ (wrk, valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config
      libjansson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev libcurl4-openssl-dev
      python3 python3-pip python3-setuptools python3-wheel python3-pydantic)
for arg in "$@"; do
  case "$arg" in
    --test) PKGS+=(clang libclang-rt-14-dev libsimde-dev python3-numpy python3-jsonschema python3-pytest python3-jinja2 curl nodejs npm chromium prometheus) ;;
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

# The Python package (python/, ctypes over build/libtypellm.so, which setup.py
# bundles into it): installed offline into python3 on PATH. pip refuses an
# externally managed interpreter (Debian's own, PEP 668) unless told
# --break-system-packages; set TL_NO_PYTHON=1 to skip this step.
if [ "${TL_NO_PYTHON:-0}" != 1 ]; then
  pyflags=(-q --no-build-isolation --no-deps)
  if python3 -c 'import os, sys, sysconfig; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)'; then
    pyflags+=(--break-system-packages)
  fi
  # Building the wheel needs the wheel package; an interpreter without it
  # (e.g. a pyenv build on PATH) borrows Debian's python3-wheel for the build
  # (only that package, through a folder on PYTHONPATH).
  pyextra=""
  if ! python3 -c "import wheel" 2>/dev/null && [ -d /usr/lib/python3/dist-packages/wheel ]; then
    pyextra=$(mktemp -d)
    ln -s /usr/lib/python3/dist-packages/wheel /usr/lib/python3/dist-packages/wheel-*info "$pyextra/"
  fi
  TYPELLM_BUILD_DIR="$PWD/build" PIP_NO_INDEX=1 PYTHONPATH="$pyextra${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m pip install "${pyflags[@]}" ./python 2>&1 | grep -v -i -E 'warning|notice|root user' >&2 || true
  [ -z "$pyextra" ] || rm -rf "$pyextra"
  python3 -c "import typellm" || { echo "setup: the Python package did not install" >&2; exit 1; }
fi
