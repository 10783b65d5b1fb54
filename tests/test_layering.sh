#!/usr/bin/env bash
# test_layering — the folders' include rules (docs/architecture.md, "Code layout"): a role's
# folder includes nothing from another role's folder, the library folders nothing from a role,
# proto/ nothing from runtime/, common/ nothing from proto/, runtime/ or nn/. Reads every
# #include "..." under the source tree; prints each offending line and fails on any. (cli/ is the front end: it starts every role, so it
# may call into them.)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
roles="coordinator loader worker hooks"
bad=0 checked=0
# check FOLDER FORBIDDEN...: no file under FOLDER includes "<forbidden>/..."
check() {
  local dir=$1 f
  shift
  for f in "$@"; do
    [ "$f" = "$dir" ] && continue
    if grep -rnE "^#include \"$f/" "$dir" --include='*.c' --include='*.h' --include='*.cc' --include='*.cu'; then
      echo "layering: $dir/ includes from $f/ (above)" >&2
      bad=1
    fi
    checked=$((checked + 1))
  done
}
for r in $roles; do check "$r" $roles; done
check nn $roles cli
check runtime $roles cli nn
check proto $roles cli nn runtime
check common $roles cli nn proto runtime
[ "$bad" = 0 ] || exit 1
echo "layering: $checked folder pairs checked, no include crosses a rule"
