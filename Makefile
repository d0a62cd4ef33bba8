# reth-hybrid: two commands do all set-up on a fresh machine.
#   make demo   the main job on an embedded default
#   make test   every test
SHELL := /bin/bash
# Outside the clone, so a fresh checkout reuses compiled RocksDB/MDBX.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/reth-hybrid/target
CARGO ?= cargo

.PHONY: deps demo test lint check-api-deps fmt bench-engines bench-migration bench-adopt bench-seeds bench-scale integration e2e bench-reth

# Installs what the build needs (libclang as bindgen looks for it, C/C++ compilers, chart font)
# and says what it found: scripts/deps.
deps:
	@scripts/deps

# Generate a small reth datadir, migrate it to the hybrid layout, verify, compare lookups,
# roll back; prints a summary. DEMO_ARGS passes options (e.g. DEMO_ARGS="--scale 200").
demo: deps
	$(CARGO) run -q -p reth-hybrid-cli --bin reth-hybrid -- demo $(DEMO_ARGS)

# Skipped tests (a fixture or binary they need is absent) append a line to the skip log, shown
# after the run: cargo hides what passing tests print.
export RETH_HYBRID_SKIP_LOG ?= $(CARGO_TARGET_DIR)/skipped-tests.txt
# The real-reth fixtures beside this checkout, found at run time: a test binary reused from the
# shared target dir was compiled in whichever checkout built it first, and would look beside that.
ifneq ($(wildcard $(CURDIR)/../shared/fixtures),)
export RETH_HYBRID_FIXTURES ?= $(abspath $(CURDIR)/../shared/fixtures)
endif
test: deps check-api-deps
	@mkdir -p $(dir $(RETH_HYBRID_SKIP_LOG)) && rm -f $(RETH_HYBRID_SKIP_LOG)
	$(CARGO) test --workspace --all-targets --no-fail-fast
	scripts/test-scripts
	@if [ -s $(RETH_HYBRID_SKIP_LOG) ]; then \
		echo "== skipped tests ($$(wc -l < $(RETH_HYBRID_SKIP_LOG))):"; sort $(RETH_HYBRID_SKIP_LOG); \
	else echo "== no test skipped"; fi

# The api crate must not depend on an engine, not even transitively (STYLE.md, layers).
check-api-deps:
	@if $(CARGO) tree -q -p reth-hybrid-api -e normal --prefix none | grep -Ei '^(libmdbx|mdbx-sys|rocksdb|librocksdb-sys) '; then \
		echo "reth-hybrid-api depends on an engine crate (listed above); keep engines out of crates/api" >&2; exit 1; \
	else echo "check-api-deps: reth-hybrid-api has no engine dependency"; fi

lint: deps
	$(CARGO) fmt --all -- --check
	rustfmt --check --edition 2024 $$(find integration -name '*.rs' -not -path '*/target/*')
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Engine microbenchmarks (release build in its own target dir); prints MDBX/RocksDB ratios.
bench-engines: deps
	CARGO_TARGET_DIR=$(HOME)/.cache/reth-hybrid/bench-target $(CARGO) bench -p reth-hybrid-bench --bench engines

# Migration throughput (ours vs row-by-row vs raw copy) on a generated datadir of 10M tx hashes.
bench-migration: deps
	CARGO_TARGET_DIR=$(HOME)/.cache/reth-hybrid/bench-target $(CARGO) bench -p reth-hybrid-bench --bench migration

# Adoption throughput (a storage-v2 twin of a generated datadir of 10M tx, read from disk) vs a
# raw copy of the same bytes; prints the ratio (docs/benchmarks.md, "Adopting a v2 datadir").
bench-adopt: deps
	CARGO_TARGET_DIR=$(HOME)/.cache/reth-hybrid/bench-target $(CARGO) bench -p reth-hybrid-bench --bench adopt

# The hybrid at a real node's scale: generated datadirs of 1M, 10M and 100M transactions (5M
# accounts with history at 100M), stock and migrated, side by side: tx-hash and historical lookups
# warm and cold, block persistence in reth's pattern, table bytes, migration time. Release build.
# Needs ~27 GB of free disk for the 100M size (each size is removed before the next); time and
# figures in docs/benchmarks.md, "At scale". RETH_HYBRID_SCALE_MILLIONS=1,10 runs other sizes.
bench-scale: deps
	CARGO_TARGET_DIR=$(HOME)/.cache/reth-hybrid/bench-target $(CARGO) bench -p reth-hybrid-bench --bench scale

# The seed benchmarks (../shared/seeds: the 4M-key Merkle-Patricia job, read-modify-write counters,
# per-operation costs) on MDBX, RocksDB and the hybrid; docs/benchmarks.md, "Seed benchmarks".
# SEEDS_JOBS=pmt,counters,micro (default: all) runs a subset.
bench-seeds: deps
	CARGO_TARGET_DIR=$(HOME)/.cache/reth-hybrid/bench-target $(CARGO) bench -p reth-hybrid-bench --bench seeds

# The reth v2.5.1 integration (its own workspace, git dependencies); prints SKIPPED when the reth
# sources are not reachable. docs/reth-integration.md.
integration: deps
	scripts/integration-build

# The end-to-end check: reth-hybrid-node on --dev under a transaction load, SIGKILLed mid-commit,
# restarted, compared by RPC with a stock-MDBX node fed the same chain, then verified; prints a
# summary. Builds what `make integration` builds (without its tests). docs/reth-integration.md.
e2e: deps
	scripts/e2e

# The node benchmark: reth-hybrid-node on the hybrid vs on stock MDBX, a deterministic chain of
# full blocks replayed with reth-bench new-payload-fcu (ABBA pairs), then RPC latency on the
# replayed datadirs; prints the summary. Release builds; about two hours the first time (docs/
# benchmarks.md, "Hybrid vs stock reth"). Knobs: see scripts/bench-reth.
bench-reth: deps
	scripts/bench-reth
