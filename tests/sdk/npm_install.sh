# npm_install.sh: sourced by the SDK tests. sdk_install PACKAGE installs
# tests/sdk/package.json's packages into tests/sdk/node_modules (git-ignored)
# unless PACKAGE is there already; one install at a time (the SDK tests may
# run in parallel). Returns 1, saying the test is skipped, only when npm cannot
# reach the registry.
sdk_install() {
  local pkg=$1
  [ -d "$sdk/node_modules/$pkg" ] && return 0
  if command -v npm >/dev/null && (
      flock 9
      [ -d "$sdk/node_modules/$pkg" ] || (cd "$sdk" && timeout 180 npm install --no-audit --no-fund --no-package-lock)
    ) 9>"${TMPDIR:-/tmp}/typellm-sdk-npm.lock" >"$SCRATCH/npm.log" 2>&1; then
    return 0
  fi
  echo "$(basename "$0"): SKIPPED: npm cannot install $pkg (registry unreachable?):"
  tail -5 "$SCRATCH/npm.log" 2>/dev/null || true
  return 1
}
