#!/usr/bin/env bash
# pack.sh — run HERE (the Debian build machine) before a device call. It builds, in Release
# with the CUDA backend, gpu_check, nccl_check and pixflow, and packs them with the shared
# libraries the device image lacks and a few demo images into .gpu-carry/pack.tar.xz
# (git-ignored, about 15 MB) for the device tool's `carry`:
#
#   bench/gpu/pack.sh
#   device run: command "bash bench/gpu/run.sh --smoke", carry [".gpu-carry"], timeout_s 600
#
# The device image has CUDA 13 (cudart), cuDNN and NCCL (pip packages) but none of the Debian
# libraries PixFlow links (oneDNN, libzmq / czmq, libfyaml, cJSON, libpng, Gloo, ...), and
# nothing can be installed there. run.sh unpacks the tarball with python3 (always there) when
# its own CMake build cannot configure. Needs data/demo (scripts/fetch-demo-data.sh).
set -eu
[ -d /usr/local/cuda/bin ] && PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
[ -d data/demo/train ] || bash scripts/fetch-demo-data.sh
BUILD=build-pack
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target gpu_check nccl_check pixflow >/dev/null
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/pf-pack.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/data/train" "$STAGE/data/val"
cp "$BUILD"/bench/gpu/gpu_check "$BUILD"/bench/gpu/nccl_check "$BUILD"/pixflow "$STAGE/bin/"
# every library the binaries load that is not glibc / libstdc++ / libgcc / libgomp (in every
# image) and not CUDA's own (the device has its driver's, the toolkit's and the pip packages')
for bin in "$STAGE"/bin/*; do
  ldd "$bin" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libstdc++.so*|libgcc_s.so*|libgomp.so*) ;;
    libcuda*|libcudart*|libcudnn*|libcublas*|libnccl*|libnvrtc*) ;;
    *) cp -L "$lib" "$STAGE/lib/" ;;
  esac
done
# two training images and two validation images: enough for a short smoke run
cp data/demo/train/flower.png data/demo/train/tulips.png "$STAGE/data/train/"
cp data/demo/val/astronaut.png data/demo/val/coffee.png "$STAGE/data/val/"
git rev-parse --short HEAD > "$STAGE/COMMIT"
rm -rf .gpu-carry .gpu-unpacked
mkdir -p .gpu-carry
tar -C "$STAGE" -cf - . | xz -6 -T0 > .gpu-carry/pack.tar.xz
echo "pack.sh: .gpu-carry/pack.tar.xz ($(du -h .gpu-carry/pack.tar.xz | cut -f1)), commit $(cat "$STAGE/COMMIT"):"
(cd "$STAGE" && ls bin lib data/*)
