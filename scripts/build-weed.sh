#!/usr/bin/env bash
# Builds build/weed: SeaweedFS at the pinned version with the S-Chain patch
# (seaweedfs/patch: the new package seaweedfs/schainseq, copied to
# weed/sequence/schainseq, and the hunks of seaweedfs/patch/weed.diff). The
# patch fails the build loudly if the upstream code moved. In the default
# sequencer mode (raft) the patched master behaves as the stock one.
#
#   scripts/build-weed.sh           build unless build/weed matches the pinned version
#   scripts/build-weed.sh -f        rebuild even if it does
#   WEED_VERSION=v0.0.0-... scripts/build-weed.sh   build another pseudo-version
#
# The seaweedfs module's go.mod carries replace directives, so
# `go install module@version` refuses it. Instead the module is downloaded from
# the Go module proxy (`go mod download -json`), its directory is copied out of
# the read-only module cache into build/weed-src, and `go build ./weed` runs
# there, after the patch is applied to the copy. build/weed.version records
# the version and the patch's digest; a rebuild is skipped when both match. The build runs at low CPU priority (nice) because the machine is
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

digest=$(go run ./cmd/weedpatch -digest)
want="$version patch $digest"
if [ "$force" = 0 ] && [ -x "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "build-weed: $out is $module@$version with patch $digest already (use -f to rebuild)"
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

echo "build-weed: applying the S-Chain patch $digest"
go run ./cmd/weedpatch -src "$src"

echo "build-weed: building $out (go build ./weed in $src; this takes a while)"
start=$(date +%s)
(
  cd "$src"
  GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    nice -n 10 go build -trimpath -o "$root/$out.tmp" ./weed
)
mv "$out.tmp" "$out"
printf '%s\n' "$want" > "$stamp"
echo "build-weed: built $out ($(du -h "$out" | cut -f1)) in $(( $(date +%s) - start ))s"
