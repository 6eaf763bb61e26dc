#!/usr/bin/env bash
# Builds build/weed, the SeaweedFS binary that shadow/seaweed's cluster test runs
# (3 masters + 1 volume server on 127.0.0.1).
#
#   scripts/build-weed.sh           build unless build/weed matches the pinned version
#   scripts/build-weed.sh -f        rebuild even if it does
#   WEED_VERSION=v0.0.0-... scripts/build-weed.sh   build another pseudo-version
#
# The seaweedfs module's go.mod carries replace directives, so
# `go install module@version` refuses it. Instead the module is downloaded from
# the Go module proxy (`go mod download -json`), its directory is copied out of
# the read-only module cache into build/weed-src, and `go build ./weed` runs
# there. build/weed.version records the version built; a rebuild is skipped when
# it matches. The build runs at low CPU priority (nice) because the machine is
# shared; a cold build downloads several hundred modules and takes many minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

module=github.com/seaweedfs/seaweedfs
version=${WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}
out=build/weed
stamp=build/weed.version
src=build/weed-src

force=0
case "${1:-}" in
  -f|--force) force=1 ;;
  "") ;;
  *) echo "usage: $0 [-f]" >&2; exit 2 ;;
esac

if [ "$force" = 0 ] && [ -x "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ]; then
  echo "build-weed: $out is $module@$version already (use -f to rebuild)"
  exit 0
fi

mkdir -p build
root=$(pwd)

# Download outside this repository's module so that its go.mod and go.sum are
# not touched.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "build-weed: downloading $module@$version"
json=$(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$module@$version")
dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
  echo "build-weed: FAIL: go mod download gave no module directory:" >&2
  printf '%s\n' "$json" >&2
  exit 1
fi

echo "build-weed: copying $dir to $src"
if [ -d "$src" ]; then
  chmod -R u+w "$src"
  rm -rf "$src"
fi
cp -R "$dir" "$src"
chmod -R u+w "$src"

echo "build-weed: building $out (go build ./weed in $src; this takes a while)"
start=$(date +%s)
(
  cd "$src"
  GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    nice -n 10 go build -trimpath -o "$root/$out.tmp" ./weed
)
mv "$out.tmp" "$out"
printf '%s\n' "$version" > "$stamp"
echo "build-weed: built $out ($(du -h "$out" | cut -f1)) in $(( $(date +%s) - start ))s"
