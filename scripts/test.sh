#!/usr/bin/env bash
# test.sh — build PixFlow and run every test (ctest). Installs the build dependencies first
# and what the scripted ctest entries need (python3 with numpy and PIL) when they are missing
# (scripts/setup.sh --test-deps). Extra arguments go to ctest (e.g. -R proto).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh" --test-deps
cd "$ROOT/build"
ctest --output-on-failure "$@"
