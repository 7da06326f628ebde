#!/usr/bin/env bash
# test_jinja2.sh: typellm's renderer against Python's jinja2 (Debian's
# python3-jinja2, configured as transformers configures it) on conversations
# and templates the fixtures do not have: jinja2_compare.py renders every
# fixture template and the templates in data/ (written for this test) for
# generated conversations with both and compares byte for byte.
set -euo pipefail
py=""
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null && "$c" -c "import jinja2" 2>/dev/null; then py=$c; break; fi
done
[ -n "$py" ] || { echo "FAIL: no python3 with jinja2 (scripts/setup.sh --test installs python3-jinja2)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$py" "$TL_SRC/tests/template/jinja2_compare.py" "$TL_BIN" "$TL_FIXTURES/templates" "$TL_SRC/tests/template/data" "$T"
