#!/usr/bin/env bash
# fetch-onnxruntime.sh — onnxruntime for Node.js from the npm registry, for ctest onnx.runtime
# (tests/onnx_export.sh): `npm install` of onnxruntime-node (native; its install script, which
# only fetches CUDA providers from nuget.org, is skipped) into
# ${PF_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pixflow/onnxruntime}; when that package does not
# install or load here, onnxruntime-web (its WebAssembly build runs under Node) instead.
# Prints the module path that loaded. Version: PF_ORT_VERSION (default below). Needs node and
# npm (Debian's nodejs, npm: scripts/setup.sh --test-deps installs them and runs this).
set -euo pipefail
dir=${PF_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pixflow/onnxruntime}
ver=${PF_ORT_VERSION:-1.31.1}
command -v node > /dev/null && command -v npm > /dev/null ||
    { echo "fetch-onnxruntime: node and npm are needed (apt-get install nodejs npm)" >&2; exit 1; }
mkdir -p "$dir"
# Node trusts its own CA list; add the system's (update-ca-certificates: with local CAs, e.g.
# an HTTPS proxy's in /usr/local/share/ca-certificates) unless the caller chose a file
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -s /etc/ssl/certs/ca-certificates.crt ]; then
    export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi
loads() { timeout 60 node -e "require('$dir/node_modules/$1')" > /dev/null 2>&1; }
for pkg in onnxruntime-node onnxruntime-web; do
    if ! loads "$pkg"; then
        (cd "$dir" && timeout 600 npm install --no-audit --no-fund --ignore-scripts \
             --no-save "$pkg@$ver" > npm-$pkg.log 2>&1) ||
            echo "fetch-onnxruntime: npm install $pkg@$ver failed (see $dir/npm-$pkg.log)" >&2
    fi
    if loads "$pkg"; then
        echo "$dir/node_modules/$pkg"
        exit 0
    fi
done
echo "fetch-onnxruntime: neither onnxruntime-node nor onnxruntime-web loads from $dir" >&2
exit 1
