#!/usr/bin/env bash
# test_install.sh: the library as a user gets it. `cmake --install` of this
# build into a fresh prefix, then every examples/c program compiled against
# the installed tree with `pkg-config --cflags --libs typellm` only (no
# source-tree include path), run on a fixture model, and checked. Also: the
# README's C example is examples/c/decide.c, line for line; the installed CLI
# runs; libtypellm.so has a versioned SONAME and exports public symbols only.
set -euo pipefail
build=$(dirname "$TL_BIN")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
pc=$(find "$tmp/prefix" -name typellm.pc)
[ -n "$pc" ] || fail "typellm.pc not installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir typellm)
[ -f "$libdir/libtypellm.a" ] || fail "libtypellm.a not installed"
[ -f "$tmp/prefix/include/typellm/typellm.h" ] || fail "headers not installed"
soname=$(objdump -p "$libdir/libtypellm.so" | awk '/SONAME/ {print $2}')
[ "$soname" = libtypellm.so.0 ] || fail "SONAME is '$soname'"
# Exported: the public API, all of it prefixed tl_ (Aeon's calls are tl_aeon_*),
# nothing else of ours (issue 11: `nm -D --defined-only libtypellm.so | grep -v ' tl_'`
# shows nothing but the loader's _init/_fini).
defined=$(nm -D --defined-only "$libdir/libtypellm.so")
others=$(awk '{print $3}' <<<"$defined" | grep -v -E '^(tl_|_init$|_fini$)' || true)
[ -z "$others" ] || fail "libtypellm.so exports non-API symbols: $others"
for priv in tl_dschema_parse tl_decide_json tl_labelset_fill; do
  if grep -q " $priv\$" <<<"$defined"; then fail "private $priv is exported"; fi
done

flags=$(pkg-config --cflags --libs typellm)
case "$flags" in *"$TL_SRC"*) fail "pkg-config flags point into the source tree: $flags" ;; esac
san=""
dynsyms=$(nm -D "$libdir/libtypellm.so")  # (not piped into grep -q: pipefail would see nm's SIGPIPE)
if grep -q __asan_init <<<"$dynsyms"; then san="-fsanitize=address,undefined"; fi
for ex in "$TL_SRC"/examples/c/*.c; do
  name=$(basename "$ex" .c)
  cc -std=c11 -Wall -Wextra -Werror $san "$ex" $flags -o "$tmp/$name" || fail "$name.c does not build against the installed tree"
done

M="$TL_FIXTURES/models/qwen2-d64-q8_0.gguf"
EX="$TL_SRC/examples/ticket"
export LD_LIBRARY_PATH="$libdir"
"$tmp/decide" "$M" "$EX/schema.json" "$EX/context.txt" >"$tmp/decide.out" || fail "decide example failed"
n_fields=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["properties"]))' "$EX/schema.json")
got=$(grep -c 'label_mass=' "$tmp/decide.out" || true)
[ "$got" = "$n_fields" ] || { cat "$tmp/decide.out"; fail "decide printed $got fields, schema has $n_fields"; }
grep -q 'forward passes' "$tmp/decide.out" || fail "decide printed no usage"
# each value printed is one of the field's declared values (or a JSON value for generated ones)
python3 - "$EX/schema.json" "$tmp/decide.out" <<'PY' || fail "decide example printed a value outside the schema"
import json, sys
props = json.load(open(sys.argv[1]))["properties"]
for line in open(sys.argv[2]):
    if "label_mass=" not in line:
        continue
    key, value = line.split()[0], json.loads(line.split()[1])
    f = props[key]
    if "enum" in f:
        assert value in f["enum"], (key, value)
    elif f.get("type") == "boolean":
        assert isinstance(value, bool), (key, value)
PY
"$tmp/decide" "$M" /nonexistent.json "$EX/context.txt" 2>"$tmp/err" && fail "decide example accepted a missing schema"
grep -q 'nonexistent.json' "$tmp/err" || fail "missing schema error does not name the file"

"$tmp/serve" "$M" "$EX/schema.json" "$EX/context.txt" >"$tmp/serve.out" || { cat "$tmp/serve.out"; fail "serve example failed"; }
grep -q '^listening on 127.0.0.1:' "$tmp/serve.out" || fail "serve example did not report its port"
body=$(sed -n '/^\r\{0,1\}$/,$p' "$tmp/serve.out")
python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert set(d["values"]) == set(json.load(open(sys.argv[1]))["properties"])' \
  "$EX/schema.json" <<<"$body" || { cat "$tmp/serve.out"; fail "serve example: /v1/decide reply has not every field"; }

# The README's C example is examples/c/decide.c (indented four spaces), line for line.
python3 - "$TL_SRC/README.md" "$TL_SRC/examples/c/decide.c" <<'PY' || fail "README's C example is not examples/c/decide.c"
import sys
readme = open(sys.argv[1]).read()
code = "".join(("    " + l if l.strip() else l) for l in open(sys.argv[2]).read().splitlines(True))
assert code in readme
PY

# The installed CLI runs from its prefix (it finds libtypellm.so by its RPATH).
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/typellm" --help >/dev/null || fail "installed typellm does not run"

# The installed server carries its playground and examples (embedded, not read from a source tree).
(cd "$tmp" && exec env -u LD_LIBRARY_PATH "$tmp/prefix/bin/typellm" serve -m "$M" --port 0 -t 1 --quiet >"$tmp/ui.out" 2>&1) &
ui_pid=$!
for _ in $(seq 1 100); do grep -q listening "$tmp/ui.out" 2>/dev/null && break; sleep 0.1; done
ui_port=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$tmp/ui.out")
ui_ok=1
curl -sf -o "$tmp/ui.html" "http://127.0.0.1:$ui_port/" && grep -q "typellm playground" "$tmp/ui.html" || ui_ok=0
curl -sf -o "$tmp/ui.json" "http://127.0.0.1:$ui_port/ui/examples.json" && grep -q '"name":"receipt"' "$tmp/ui.json" || ui_ok=0
kill -TERM "$ui_pid"; wait "$ui_pid" || ui_ok=0
[ "$ui_ok" = 1 ] || { cat "$tmp/ui.out"; fail "the installed server does not serve its playground and examples"; }
echo "ok: installed into a fresh prefix, $(ls "$TL_SRC"/examples/c/*.c | wc -l) examples built with pkg-config and run"
