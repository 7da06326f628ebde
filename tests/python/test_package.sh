#!/usr/bin/env bash
# test_package.sh: `pip install --no-build-isolation` of python/ (offline,
# setuptools only) into a scratch folder, with this build's libtypellm.so
# bundled by setup.py; the installed package must load its own copy of the
# library (no TYPELLM_LIBRARY), then python/tests runs under pytest.
# The interpreter: one with pytest (Debian's python3-pytest is for
# /usr/bin/python3), preferring python3 on PATH.
set -euo pipefail
: "${TL_SRC:?}" "${TL_BUILD:?}" "${TL_BIN:?}" "${TL_FIXTURES:?}"
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c "import pytest" 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "test_package: no python3 with pytest (apt-get install python3-pytest)"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r "$TL_SRC/python" "$scratch/src"   # build in a copy: the checkout stays clean
rm -rf "$scratch/src/typellm/_lib" "$scratch/src/build"
TYPELLM_BUILD_DIR="$TL_BUILD" PIP_NO_INDEX=1 "$PY" -m pip install -q --no-build-isolation --no-deps \
  --target "$scratch/site" "$scratch/src" 2>&1 | grep -v -i 'warning' || true
[ -f "$scratch/site/typellm/_lib/libtypellm.so.0" ] || { echo "test_package: the installed package lacks its library"; ls -R "$scratch/site" | head; exit 1; }
unset TYPELLM_LIBRARY
export PYTHONPATH="$scratch/site" TYPELLM_BIN="$TL_BIN"
"$PY" -c "import typellm, os; import typellm._native as n; print('typellm', typellm.__version__, 'library', typellm.library_version, n.lib._name)"
"$PY" -c "import typellm._native as n, sys; sys.exit(0 if '$scratch/site' in n.lib._name else 'loaded the wrong library: ' + n.lib._name)"
cd "$scratch"
"$PY" -m pytest -q -p no:cacheprovider "$TL_SRC/python/tests"
