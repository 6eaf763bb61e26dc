# S-Chain build and test entry points. Build outputs live under build/ (git-ignored).
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/build/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
BENCHSTAT := $(BIN)/benchstat
BENCH_OUT := build/bench
PROFILE_OUT := build/profile
PKGS := ./...
VMID := spSVeHfTFKrgS7QJQkaEz95EiE3VBbpGgg6w5AmjVfvCBc1qH
NODE := build/avalanchego
PLUGIN := build/plugins/$(VMID)
SCHAIN := build/schain
# SCHAIN_DEV is the development binary: every command of schain, and the
# local network, demo, benches, legacy raft stand-in and local SeaweedFS cluster.
SCHAIN_DEV := build/schain-dev
GO_SOURCES := $(shell find . -name '*.go' -not -path './build/*' -not -name '*_test.go') go.mod go.sum

.PHONY: all build test unit kat32 e2e torture e2e-weed e2e-ops lint alerts fmt vet staticcheck bench bench-hosts sizing bench-weed bench-micro profile fuzz run stop clean weed weed-up weed-down

all: build

## build: the node (from the module proxy, same go.mod), the plugin, the operator CLI (schain) and the development CLI (schain-dev), under build/
build: $(NODE) $(PLUGIN) $(SCHAIN) $(SCHAIN_DEV)

# The node is rebuilt only when the module graph changes (cold: about 5 minutes).
$(NODE): go.mod go.sum
	@mkdir -p build
	@echo "building avalanchego v1.14.2 from the module proxy (cold build takes about 5 minutes)..."
	$(GO) build -o $@ github.com/ava-labs/avalanchego/main

$(PLUGIN): $(GO_SOURCES)
	@mkdir -p build/plugins
	@find build/plugins -type f ! -name '$(VMID)' -delete
	$(GO) build -o $@ ./plugin
	@test "$$($@ vm-id)" = "$(VMID)" || { echo "plugin VM ID differs from the Makefile's VMID"; exit 1; }

$(SCHAIN): $(GO_SOURCES)
	$(GO) build -o $@ ./cmd/schain

$(SCHAIN_DEV): $(GO_SOURCES)
	$(GO) build -o $@ ./tools/cmd/schain-dev

## test: everything CI runs (lint, unit tests with the race detector, 32-bit known answers, e2e on a real network)
test: lint unit kat32 e2e

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

kat32:
	./scripts/kat32.sh

## e2e: end-to-end tests on a local 4-node network they start and always stop (logs of a failed run stay under build/e2e), on a one-node network, then on real SeaweedFS clusters (e2e-weed)
e2e: $(NODE) $(PLUGIN) $(SCHAIN) $(SCHAIN_DEV)
	$(GO) test -tags e2e -count=1 -timeout 30m -v ./tests/e2e/
	$(GO) test -tags e2e -count=1 -timeout 10m -v ./tests/onenode/
	$(GO) test -tags e2e -count=1 -timeout 15m -v -run TestTorture ./tests/torture/
	@$(MAKE) --no-print-directory e2e-weed
	@$(MAKE) --no-print-directory e2e-ops

# The torture run's workload length and seed (default: the time, printed
# so that a run can be repeated); `make e2e` runs a short one (150 s, seed 1).
TORTURE_DURATION ?= 10m
TORTURE_SEED ?= $(shell date +%s)
# go test's bound on the whole run (network start, workload, checking):
# raise it with TORTURE_DURATION beyond about 1h30m.
TORTURE_TIMEOUT ?= 2h

## torture: concurrent clients of the filer store, counters and leases on a local 4-node network while a seeded nemesis kills -9, restarts and SIGSTOPs validators one at a time; the whole history checked (tests/history); TORTURE_DURATION (10m), TORTURE_SEED; a failing history under build/history/ (docs/internals/testing.md)
torture: $(NODE) $(PLUGIN) $(SCHAIN)
	TORTURE_DURATION=$(TORTURE_DURATION) TORTURE_SEED=$(TORTURE_SEED) $(GO) test -tags e2e -count=1 -timeout $(TORTURE_TIMEOUT) -v -run TestTorture ./tests/torture/

## e2e-ops: operating S-Chain beyond one machine: schain deploy onto a plain avalanchego network it did not start, faults across hosts (network namespaces; needs root, skipped with the reason otherwise) and a rolling upgrade from the commit in tests/operations/upgrade-from (logs under build/e2e-deploy, build/e2e-hosts, build/e2e-upgrade)
e2e-ops: $(NODE) $(PLUGIN) $(SCHAIN) $(SCHAIN_DEV) weed
	$(GO) test -tags e2e -count=1 -p 1 -timeout 30m -v ./tests/deployment/ ./tests/operations/

## e2e-weed: SeaweedFS (build/weed) on S-Chain: leader kills in stock and schain mode, shadow then cutover, a validator kill (logs of a failed test stay under build/e2e-weed)
e2e-weed: $(NODE) $(PLUGIN) $(SCHAIN) weed
	$(GO) test -tags e2e -count=1 -timeout 20m -v ./tests/seaweedfs/

lint: fmt vet staticcheck alerts

## alerts: check docs/prometheus/schain-alerts.yml with promtool (Debian's prometheus package, installed here when missing as root; skipped with a note otherwise)
alerts:
	@if ! command -v promtool >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing promtool (Debian's prometheus package)"; \
	    apt-get install -y -qq --no-install-recommends prometheus >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }; \
	  else echo "alerts: promtool missing and not root: docs/prometheus/schain-alerts.yml not checked"; exit 0; fi; \
	fi; promtool check rules docs/prometheus/schain-alerts.yml

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' ; git ls-files --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The e2e packages build only with the e2e tag: vet them too, so a rename
# never breaks them unnoticed.
vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags e2e ./tests/...

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags e2e ./tests/...

$(BENCHSTAT):
	GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

## bench: S-Chain and the legacy raft allocator side by side, a kill -9 in each (schain-dev bench), then the micro-benchmarks' medians; outputs under build/bench/
bench: build weed $(BENCHSTAT)
	$(SCHAIN_DEV) bench --out $(BENCH_OUT) $(BENCH_FLAGS)
	@$(MAKE) --no-print-directory bench-weed
	@$(MAKE) --no-print-directory bench-micro

## bench-hosts: the bench's comparison (S-Chain per-request and pooled against the legacy raft stand-in, and the failover) with every node on a host of its own, 2 ms between hosts (network namespaces: root); outputs under build/bench/hosts/
bench-hosts: build $(BENCHSTAT)
	$(SCHAIN_DEV) bench --hosts --host-delay 1ms --schain-modes per-request,pooled,pooled-batched --schain-rounds 5s --out $(BENCH_OUT)/hosts $(BENCH_FLAGS)

## sizing: what a validator uses (node and plugin RSS and CPU idle and under per-request and pooled load, database growth per million requests) on a local network; outputs under build/bench/sizing/ (docs/operating/deployment.md, Sizing)
sizing: build
	$(SCHAIN_DEV) bench sizing --out $(BENCH_OUT)/sizing $(SIZING_FLAGS)

## bench-weed: real SeaweedFS assigns, stock vs S-Chain sequencer vs 3 leaderless masters, and their leader and validator kills (schain-dev seaweedfs bench; outputs under build/bench/seaweedfs/); then S3 PUTs and GETs through the S-Chain filer store vs leveldb2 vs etcd (schain-dev seaweedfs bench-stores; build/bench/seaweedfs-stores/)
bench-weed: build weed
	./scripts/install-etcd.sh
	$(SCHAIN_DEV) seaweedfs bench --out $(BENCH_OUT)/seaweedfs $(WEED_BENCH_FLAGS)
	$(SCHAIN_DEV) seaweedfs bench-stores --out $(BENCH_OUT)/seaweedfs-stores $(STORES_BENCH_FLAGS)

# Micro-benchmark repetitions (6: benchstat's minimum for a confidence
# interval). The state benchmarks rebuild 1M keys per repetition, so they run
# a fixed, small number of iterations.
MICRO_COUNT ?= 6
MICRO_STATE_COUNT ?= 6

## bench-micro: the micro-benchmarks docs/internals/performance.md records (owner lookup, verify, state root, Accept, JSON-RPC allocate), medians by benchstat into build/bench/micro.txt
bench-micro: $(BENCHSTAT)
	@mkdir -p $(BENCH_OUT)
	@echo "micro-benchmarks: $(MICRO_COUNT) runs each (state: $(MICRO_STATE_COUNT)), about 2 minutes; raw results in $(BENCH_OUT)/micro-raw.txt"
	@set -o pipefail; { $(GO) test -run '^$$' -bench . -benchmem -count $(MICRO_COUNT) -benchtime 200ms ./pinning/ ./vm/execute/ ./vm/ && \
	  $(GO) test -run '^$$' -bench . -benchmem -count $(MICRO_STATE_COUNT) -benchtime 10x ./state/ ; } > $(BENCH_OUT)/micro-raw.txt
	$(BENCHSTAT) $(BENCH_OUT)/micro-raw.txt | tee $(BENCH_OUT)/micro.txt

PROFILE_TOP ?= 25

## profile: CPU profiles of the S-Chain path's in-process benchmarks (verify+apply, Accept, JSON-RPC allocate) under build/profile/, with pprof's top entries
profile:
	@mkdir -p $(PROFILE_OUT)
	$(GO) test -run '^$$' -bench 'VerifyApplyAllocate/validators=21/entries=64' -benchtime 3s -cpuprofile $(PROFILE_OUT)/verify.pprof -o $(PROFILE_OUT)/execute.test ./vm/execute/
	$(GO) test -run '^$$' -bench 'Accept/changes=10000' -benchtime 100x -cpuprofile $(PROFILE_OUT)/accept.pprof -o $(PROFILE_OUT)/state.test ./state/
	$(GO) test -run '^$$' -bench 'RPCAllocate' -benchtime 3s -cpuprofile $(PROFILE_OUT)/rpc-allocate.pprof -o $(PROFILE_OUT)/vm.test ./vm/
	@for p in verify accept rpc-allocate; do \
	  echo; echo "== $$p: top $(PROFILE_TOP) by flat CPU ($(PROFILE_OUT)/$$p.pprof)"; \
	  $(GO) tool pprof -top -nodecount $(PROFILE_TOP) $(PROFILE_OUT)/$$p.pprof 2>/dev/null | tail -n +5; \
	  echo "== $$p: top $(PROFILE_TOP) by cumulative CPU"; \
	  $(GO) tool pprof -top -cum -nodecount $(PROFILE_TOP) $(PROFILE_OUT)/$$p.pprof 2>/dev/null | tail -n +6; \
	done

## fuzz: a short run of every fuzz target (go test -fuzz); FUZZTIME=1m for longer
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./txs/
	@for f in FuzzObjectRecord FuzzChunkRecord FuzzReceiptRecord FuzzLeaseRecord; do \
	  $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./state/ || exit 1; done

## run: a local 4-node S-Chain network on 127.0.0.1 (reused if already up), a demo, and a short shadow run against an embedded legacy raft allocator
run: build
	$(SCHAIN_DEV) network start
	$(SCHAIN_DEV) demo
	$(SCHAIN_DEV) shadow run --requests 400 --gate-requests 200 --gate-duration 2s

## stop: stop the local network and every node process
stop:
	@if [ -x $(SCHAIN_DEV) ]; then $(SCHAIN_DEV) network stop; else echo "no schain-dev binary: nothing to stop"; fi

## weed: SeaweedFS (build/weed) from the module proxy with the S-Chain patch (seaweedfs/patch); rebuilt when the patch changes
weed:
	./scripts/build-weed.sh

## weed-up: a local SeaweedFS cluster on S-Chain (WEED_MODE=schain|schain-shadow|raft), then its demo; weed-down stops it
WEED_MODE ?= schain
weed-up: build weed
	$(SCHAIN_DEV) seaweedfs up --mode $(WEED_MODE)
	$(SCHAIN_DEV) seaweedfs demo

weed-down:
	@if [ -x $(SCHAIN_DEV) ]; then $(SCHAIN_DEV) seaweedfs down; else echo "no schain-dev binary: nothing to stop"; fi

clean:
	rm -rf build
