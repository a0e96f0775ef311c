#!/usr/bin/env bash
# Fetches Mesa 25 (Debian bookworm-backports) into DEST without installing anything, for the GL
# tests' second run: Debian 12's Mesa 22.3 has no EGL_EXT_image_dma_buf_import on llvmpipe, the
# backports build (25.0.x) has it, and runs on the bookworm host from six unpacked packages (the
# host's glibc, glvnd and LLVM 15; see ../shared/reference/probes/gl-dmabuf-import.md).
#
# Usage: scripts/fetch-mesa25.sh [--vm] DEST
#   DEST/root      the unpacked packages (usr/lib/x86_64-linux-gnu, usr/share/glvnd/...)
#   DEST/env       NAME=VALUE lines that make a process load it (LD_LIBRARY_PATH,
#                  __EGL_VENDOR_LIBRARY_FILENAMES, LIBGL_ALWAYS_SOFTWARE)
#   DEST/vm/lib    with --vm: every library Mesa 25 loads, host ones included (one directory,
#                  ~200 MB, for the DMA-heap VM, which has no /usr of its own), and vm/50_mesa.json
#   DEST/unavailable  instead of the above when the suite cannot be fetched: the reason (exit 0,
#                  so tests that need Mesa 25 skip saying why rather than fail to start)
# Cached: a DEST that is complete is not fetched again (delete it to refetch; a DEST/unavailable
# is retried on the next call). The archive is the first Debian one in this machine's apt
# sources (MEMHAL_MESA25_MIRROR overrides it); a private apt configuration under DEST/apt is
# used, so the system's apt sources, lists and packages stay untouched.
set -uo pipefail
vm=0
if [ "${1:-}" = --vm ]; then
  vm=1
  shift
fi
[ $# -eq 1 ] || {
  echo "usage: $0 [--vm] DEST" >&2
  exit 2
}
dest=$(realpath -m "$1")
suite=${MEMHAL_MESA25_SUITE:-bookworm-backports}
keyring=${MEMHAL_MESA25_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
packages=(mesa-libgallium libegl-mesa0 libgbm1 libdrm2 libdrm-amdgpu1 libdrm-intel1)
multiarch=x86_64-linux-gnu
lib=$dest/root/usr/lib/$multiarch

mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9

unavailable() {
  echo "Mesa 25 unavailable: $*" | tee "$dest/unavailable" >&2
  exit 0
}

# The Debian archive this machine's apt uses (deb822 .sources or one-line .list entries).
system_mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    uri=$(awk 'tolower($1)=="uris:" { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' "$f")
    [ -n "$uri" ] && {
      echo "${uri%/}"
      return
    }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    uri=$(awk '$1=="deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i ~ /\/debian\/?$/) { print $i; exit } }' "$f")
    [ -n "$uri" ] && {
      echo "${uri%/}"
      return
    }
  done
}

fetch() {
  [ "$(uname -m)" = x86_64 ] || unavailable "the backports packages are fetched for x86-64 hosts only (this is $(uname -m))"
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || unavailable "apt-get and dpkg-deb are needed"
  local mirror=${MEMHAL_MESA25_MIRROR:-$(system_mirror)}
  [ -n "$mirror" ] || unavailable "no Debian archive in this machine's apt sources (set MEMHAL_MESA25_MIRROR)"
  [ -r "$keyring" ] || unavailable "no Debian archive keyring at $keyring (MEMHAL_MESA25_KEYRING)"
  local apt=$dest/apt
  rm -rf "$apt" "$dest/root" "$dest/env"
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/empty" "$apt/debs"
  : >"$apt/status"
  printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$apt/sources.list"
  local opts=(
    -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/empty"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
    -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives"
    -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)" -o "Acquire::Languages=none"
    -o "Acquire::Retries=2" -o "Acquire::http::Timeout=30"
  )
  if ! apt-get "${opts[@]}" -q update >"$apt/update.log" 2>&1 || grep -q '^\(E\|Err\):' "$apt/update.log"; then
    unavailable "apt-get update of $suite from the configured Debian archive failed: $(grep -m1 -A1 '^\(E\|Err\)' "$apt/update.log" | tr -s '\n ' ' ' || tail -n 1 "$apt/update.log")"
  fi
  local wanted=()
  for p in "${packages[@]}"; do wanted+=("$p/$suite"); done
  if ! (cd "$apt/debs" && apt-get "${opts[@]}" -q download "${wanted[@]}" >"$apt/download.log" 2>&1); then
    unavailable "apt-get download ${packages[*]} from $suite failed: $(grep -m1 '^E' "$apt/download.log" || tail -n 1 "$apt/download.log")"
  fi
  local deb
  for deb in "$apt"/debs/*.deb; do dpkg-deb -x "$deb" "$dest/root" || unavailable "dpkg-deb -x $deb failed"; done
  [ -e "$lib/libEGL_mesa.so.0" ] || unavailable "the packages hold no libEGL_mesa.so.0"
  # Everything else comes from the host (bookworm's Mesa dependencies); say what is missing.
  local missing
  missing=$(LD_LIBRARY_PATH=$lib ldd "$lib"/libEGL_mesa.so.0 "$lib"/libgallium-*.so 2>&1 | sed -n 's/^\t*\([^ ]*\) => not found/\1/p' | sort -u)
  [ -z "$missing" ] || unavailable "the host lacks libraries Mesa 25 needs: $(echo "$missing" | tr '\n' ' ')(install Debian's libegl-mesa0 and its dependencies)"
  {
    echo "LD_LIBRARY_PATH=$(realpath "$lib")"
    echo "__EGL_VENDOR_LIBRARY_FILENAMES=$(realpath "$dest/root/usr/share/glvnd/egl_vendor.d/50_mesa.json")"
    echo "LIBGL_ALWAYS_SOFTWARE=1"
  } >"$dest/env"
  ls "$apt"/debs/*.deb | sed 's|.*/||' >"$dest/packages"
  rm -rf "$apt/lists" "$apt/archives"
}

# The closure of Mesa 25 for the VM: the unpacked libraries, and the host's ones they need,
# flattened into one directory (the VM's LD_LIBRARY_PATH); glvnd's libEGL loads libEGL_mesa by
# name from there.
vm_closure() {
  local out=$dest/vm
  rm -rf "$out"
  mkdir -p "$out/lib.tmp"
  local f
  for f in $(LD_LIBRARY_PATH=$lib ldd "$lib"/libEGL_mesa.so.0 "$lib"/libgallium-*.so "$lib"/libgbm.so.1 \
    /usr/lib/$multiarch/libEGL.so.1 /usr/lib/$multiarch/libGLESv2.so.2 | grep -o '=> /[^ ]*' | sed 's/=> //' | sort -u); do
    cp -L "$f" "$out/lib.tmp/" || unavailable "copying $f for the VM failed"
  done
  cp -L "$lib"/libEGL_mesa.so.0 "$lib"/libgallium-*.so "$out/lib.tmp/"
  for f in libGLdispatch.so.0 libEGL.so.1 libGLESv2.so.2; do cp -L "/usr/lib/$multiarch/$f" "$out/lib.tmp/"; done
  sed 's|"library_path" *: *"[^"]*"|"library_path" : "libEGL_mesa.so.0"|' \
    "$dest/root/usr/share/glvnd/egl_vendor.d/50_mesa.json" >"$out/50_mesa.json"
  mv "$out/lib.tmp" "$out/lib"
}

if [ ! -e "$dest/env" ]; then
  rm -f "$dest/unavailable"
  fetch
  echo "Mesa 25 unpacked in $dest/root ($(tr '\n' ' ' <"$dest/packages"))"
else
  echo "Mesa 25 already in $dest/root"
fi
if [ "$vm" = 1 ] && [ ! -d "$dest/vm/lib" ]; then
  vm_closure
  echo "Mesa 25 closure for the VM in $dest/vm/lib ($(du -sm "$dest/vm/lib" | cut -f1) MB)"
fi
exit 0
