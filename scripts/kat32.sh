#!/usr/bin/env bash
# Runs pinning's known-answer vectors on a 32-bit target, to show that owners
# and fingerprints are bit-identical off amd64. GOARCH=386 runs natively where
# the kernel allows 32-bit binaries; otherwise 32-bit ARM runs under
# qemu-user (installed from Debian's packages if missing). qemu-i386 7.2
# crashes the Go 1.26 runtime, so it is not used.
set -euo pipefail
cd "$(dirname "$0")/.."

tests='KnownAnswers|Log2FixedMatchesMath|NoFloatingPoint'
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'package main\nfunc main() {}\n' > "$probe/main.go"
if CGO_ENABLED=0 GOARCH=386 go build -o "$probe/p386" "$probe/main.go" 2>/dev/null && "$probe/p386" 2>/dev/null; then
  echo "kat32: GOARCH=386 (native)"
  CGO_ENABLED=0 GOARCH=386 go test -count=1 -run "$tests" ./pinning/
  exit 0
fi
echo "kat32: this kernel cannot run 386 binaries; checking that GOARCH=386 builds, then running on GOARCH=arm under qemu-arm"
CGO_ENABLED=0 GOARCH=386 go test -c -o "$probe/pinning-386.test" ./pinning/
if ! command -v qemu-arm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "kat32: installing qemu-user from Debian's packages"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user) >/dev/null
  else
    echo "kat32: FAIL: qemu-arm is missing and cannot be installed here (install Debian's qemu-user)" >&2
    exit 1
  fi
fi
CGO_ENABLED=0 GOARCH=arm GOARM=7 go test -count=1 -exec qemu-arm -run "$tests" ./pinning/
