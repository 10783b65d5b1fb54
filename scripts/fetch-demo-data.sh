#!/usr/bin/env bash
# fetch-demo-data.sh — build the demo super-resolution data set from photographs that Debian
# packages ship, without installing those packages.
#
#   scripts/fetch-demo-data.sh [DEST]        DEST defaults to <repo>/data/demo
#
# Makes DEST/train/*.png (6 photos), DEST/val/*.png (4 photos) and DEST/MANIFEST
# (sha256sum format: "<sha256>  train/<name>.png"). Each package is fetched with
# `apt-get download` and unpacked with `dpkg -x`, both into a temporary folder that is removed
# at the end; nothing is installed. Every copied file is checked against a sha256 pinned below
# so the demo is the same everywhere; a mismatch is an error that names the file.
# Idempotent: when DEST/MANIFEST matches the pinned list and every file checks out, it does
# nothing. Sources, licences and sizes: docs/data.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${1:-$ROOT/data/demo}"

# split | package | path inside the package | name in DEST/split | sha256
# Download: python3-skimage ~20.7 MB, libjxl-testdata ~55.8 MB (bookworm).
SOURCES='
train|libjxl-testdata|usr/share/libjxl-testdata/jxl/flower/flower.png|flower.png|06fe0af7a5c790d2932a40e2d76b0d91aa6e73f3e55cc3f97ea6afae0133c2e7
train|libjxl-testdata|usr/share/libjxl-testdata/jxl/hdr_room.png|hdr_room.png|df2efb86c6114dba264c849ac0ae3a073c663d5aa55890fa276b8bd3b0efb2ae
train|libjxl-testdata|usr/share/libjxl-testdata/external/wesaturate/500px/cvo9xd_keong_macan_srgb8.png|keong_macan.png|f4e2d8da468a4f6bfd3a651a7f0a24c2b883e7f398b326c0e77a9dab42fb5322
train|libjxl-testdata|usr/share/libjxl-testdata/external/wesaturate/500px/tmshre_riaphotographs_srgb8.png|tulips.png|b490de2143a336aff26a7ce4ee010f18dece53c3b0802cda76c1796daa5f32a0
train|libjxl-testdata|usr/share/libjxl-testdata/external/wesaturate/500px/u76c0g_bliznaca_srgb8.png|blossom.png|9631423e430c1682fca3c2212adc6ae046df8839d22dfaa8b662761f34b6f711
train|python3-skimage|usr/lib/python3/dist-packages/skimage/data/ihc.png|ihc.png|f8dd1aa387ddd1f49d8ad13b50921b237df8e9b262606d258770687b0ef93cef
val|python3-skimage|usr/lib/python3/dist-packages/skimage/data/astronaut.png|astronaut.png|88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5
val|python3-skimage|usr/lib/python3/dist-packages/skimage/data/coffee.png|coffee.png|cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7
val|python3-skimage|usr/lib/python3/dist-packages/skimage/data/chelsea.png|chelsea.png|596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb
val|python3-skimage|usr/lib/python3/dist-packages/skimage/data/motorcycle_left.png|motorcycle_left.png|db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179
'

say() { printf 'fetch-demo-data: %s\n' "$*"; }
die() { printf 'fetch-demo-data: error: %s\n' "$*" >&2; exit 1; }

. "$ROOT/scripts/lib/debpkg.sh"
debpkg_check_tools

# The manifest these pins describe, in sha256sum format, sorted.
expected_manifest() {
    printf '%s\n' "$SOURCES" | while IFS='|' read -r split pkg path name sum; do
        [ -n "$split" ] || continue
        printf '%s  %s/%s\n' "$sum" "$split" "$name"
    done | sort -k2
}

# Already complete?
if [ -f "$DEST/MANIFEST" ] && [ "$(cat "$DEST/MANIFEST")" = "$(expected_manifest)" ] \
   && (cd "$DEST" && sha256sum --quiet -c MANIFEST >/dev/null 2>&1); then
    say "$DEST is complete (MANIFEST verified); nothing to do"
    exit 0
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/pixflow-demo.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
PKGS="$(printf '%s\n' "$SOURCES" | awk -F'|' 'NF>=5{print $2}' | sort -u)"
# shellcheck disable=SC2086
debpkg_extract "$TMP" $PKGS
total=0
for deb in "$TMP"/debs/*.deb; do total=$((total + $(stat -c %s "$deb"))); done
say "downloaded $(awk -v b="$total" 'BEGIN{printf "%.1f", b/1048576}') MiB; unpacked into a temporary folder"

# Stage everything, verify, then move into place (DEST is only touched when all is well).
STAGE="$TMP/stage"
mkdir -p "$STAGE/train" "$STAGE/val"
bad=0
while IFS='|' read -r split pkg path name sum; do
    [ -n "$split" ] || continue
    src="$TMP/root/$path"
    [ -f "$src" ] || die "$pkg no longer ships $path (needed for $split/$name)"
    cp "$src" "$STAGE/$split/$name"
done <<EOF
$SOURCES
EOF
while IFS='|' read -r split pkg path name sum; do
    [ -n "$split" ] || continue
    got="$(sha256sum "$STAGE/$split/$name" | awk '{print $1}')"
    if [ "$got" != "$sum" ]; then
        printf 'fetch-demo-data: error: %s/%s (from %s:/%s): sha256 %s, pinned %s\n' \
            "$split" "$name" "$pkg" "$path" "$got" "$sum" >&2
        bad=1
    fi
done <<EOF
$SOURCES
EOF
[ "$bad" = 0 ] || die "checksum mismatch (the Debian package changed?); $DEST left untouched"

mkdir -p "$DEST"
rm -rf "$DEST/train" "$DEST/val" "$DEST/MANIFEST"
mv "$STAGE/train" "$STAGE/val" "$DEST/"
expected_manifest > "$DEST/MANIFEST"
(cd "$DEST" && sha256sum --quiet -c MANIFEST) || die "MANIFEST check failed after copying"

say "made $DEST:"
while IFS='|' read -r split pkg path name sum; do
    [ -n "$split" ] || continue
    # PNG IHDR: width and height are big-endian at bytes 16..23, bit depth at 24, colour type at 25
    read -r w h d t < <(od -An -j16 -N10 -tu1 "$DEST/$split/$name" \
        | awk '{printf "%d %d %d %d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8, $9, $10}')
    printf '  %-5s %-20s %5dx%-5d %2d-bit colour-type %d  %8d bytes  (%s)\n' \
        "$split" "$name" "$w" "$h" "$d" "$t" "$(stat -c %s "$DEST/$split/$name")" "$pkg"
done <<EOF
$SOURCES
EOF
