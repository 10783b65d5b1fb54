# debpkg.sh — take files out of Debian packages without installing them, for the demo data
# scripts (sourced by scripts/fetch-demo-data.sh and scripts/fetch-demo-video.sh).
#
# The caller defines say and die (messages with its own name) before sourcing this file.
#
#   debpkg_check_tools              apt-get, apt-cache, dpkg, dpkg-deb, sha256sum on PATH
#   debpkg_ensure_lists PKG...      runs `apt-get update` (as root or through sudo) when the
#                                   package lists cannot locate one of PKG; an installed
#                                   package has a "candidate" even with empty lists, so the
#                                   test asks apt-get download for its URI instead
#   debpkg_extract DIR PKG...       `apt-get download` each PKG into DIR/debs and `dpkg -x` it
#                                   into DIR/root (DIR exists and is writable); prints each
#                                   package's version and size, dies naming a package that
#                                   cannot be downloaded or unpacked

debpkg_check_tools() {
    local tool
    for tool in apt-get apt-cache dpkg dpkg-deb sha256sum "$@"; do
        command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (this script needs Debian's apt/dpkg)"
    done
}

debpkg_ensure_lists() {
    local p n need_update=0
    for p in "$@"; do
        n="$(apt-get download --print-uris "$p" 2>/dev/null | grep -c "^'" || true)"
        [ "$n" -ge 1 ] || need_update=1
    done
    [ "$need_update" = 1 ] || return 0
    say "package lists lack some sources; running apt-get update"
    if [ "$(id -u)" = 0 ]; then apt-get update -qq
    elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq
    else die "apt package lists are empty and I am not root (no sudo): run 'apt-get update' as root"
    fi
}

debpkg_extract() {
    local dir="$1" p ver deb
    shift
    chmod 755 "$dir"          # lets apt's sandbox user (_apt) write the downloads
    mkdir -p "$dir/debs" "$dir/root"
    chmod 777 "$dir/debs"
    debpkg_ensure_lists "$@"
    for p in "$@"; do
        ver="$(apt-cache policy "$p" | awk '/Candidate:/{print $2}')"
        say "downloading $p (${ver:-no candidate})"
        (cd "$dir/debs" && apt-get download -q "$p" >/dev/null 2>"$dir/apt.err") \
            || { cat "$dir/apt.err" >&2; die "apt-get download $p failed (package '$p' not available from the configured Debian mirrors?)"; }
        deb="$(ls "$dir"/debs/"${p}"_*.deb 2>/dev/null | head -n1)"
        [ -n "$deb" ] || die "apt-get download $p left no .deb"
        say "  $(basename "$deb"): $(awk -v b="$(stat -c %s "$deb")" 'BEGIN{printf "%.1f MiB", b/1048576}')"
        dpkg -x "$deb" "$dir/root" || die "dpkg -x failed on $(basename "$deb") (package $p)"
    done
}
