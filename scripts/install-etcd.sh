#!/usr/bin/env bash
# Installs etcd (Debian's etcd-server) when it is missing: the replicated
# filer store `make bench-weed` compares the S-Chain filer store with. The
# package's own service is left alone; the bench starts its members itself.
set -euo pipefail
if command -v etcd >/dev/null 2>&1; then
  exit 0
fi
echo "install-etcd: installing Debian's etcd-server"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends etcd-server >/dev/null 2>&1 ||
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends etcd-server; }
command -v etcd >/dev/null
