# Keep: `make run` starts a node, `make test` runs every test. Both install what they need.
SHELL := /bin/bash
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
FUZZ_DIR ?= build-fuzz
PYTHON ?= /usr/bin/python3
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CLUSTER_FUZZ_SECONDS ?= 20
HANDOFF_FUZZ_SECONDS ?= 20
PORT ?= 7000

# Debian packages the build, the tests and the tools need.
DEB_PACKAGES := cmake ninja-build g++ clang libclang-rt-14-dev clang-format pkg-config \
  libgtest-dev libgmock-dev libbenchmark-dev libabsl-dev libxxhash-dev libssl-dev \
  libboost-dev nlohmann-json3-dev libtomlplusplus-dev libluajit-5.1-dev \
  redis-server redis-tools prometheus prometheus-cpp-dev python3 python3-redis python3-pytest \
  procps iproute2 iptables openssl util-linux curl libcpprest-dev libyaml-cpp-dev liburing-dev

.PHONY: all deps build build-bench build-asan build-fuzz run test unit asan fuzz e2e e2e-k8s bench \
  format clean

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

$(ASAN_DIR)/build.ninja:
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DKEEP_SANITIZE=ON -DKEEP_BENCH=OFF

build-asan: $(ASAN_DIR)/build.ninja
	cmake --build $(ASAN_DIR) -j $(JOBS)

$(FUZZ_DIR)/build.ninja:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEP_FUZZ=ON -DKEEP_BENCH=OFF

build-fuzz: $(FUZZ_DIR)/build.ninja
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target resp_parser_fuzz binary_codec_fuzz cluster_fuzz handoff_codec_fuzz

run: deps build
	$(BUILD_DIR)/bin/keep-server --bind 127.0.0.1 --port $(PORT)

unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

asan: build-asan
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/operator/lsan_suppressions.txt UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# Each fuzzer runs on a scratch copy of its committed corpus, so runs never rewrite the tree.
fuzz: build-fuzz
	@corpus=$$(mktemp -d); cp dataplane/proto/fuzz_corpus/resp/* $$corpus/; \
	$(FUZZ_DIR)/bin/resp_parser_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$corpus 2>&1 | tail -n 12; \
	status=$${PIPESTATUS[0]}; rm -rf $$corpus; [ $$status -eq 0 ] || exit $$status; \
	corpus=$$(mktemp -d); cp dataplane/proto/fuzz_corpus/binary/* $$corpus/; \
	$(FUZZ_DIR)/bin/binary_codec_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$corpus 2>&1 | tail -n 12; \
	status=$${PIPESTATUS[0]}; rm -rf $$corpus; [ $$status -eq 0 ] || exit $$status; \
	corpus=$$(mktemp -d); cp dataplane/cluster/fuzz_corpus/membership/* $$corpus/; \
	$(FUZZ_DIR)/bin/cluster_fuzz -max_total_time=$(CLUSTER_FUZZ_SECONDS) -print_final_stats=1 $$corpus 2>&1 | tail -n 12; \
	status=$${PIPESTATUS[0]}; rm -rf $$corpus; [ $$status -eq 0 ] || exit $$status; \
	corpus=$$(mktemp -d); cp dataplane/cluster/fuzz_corpus/handoff/* $$corpus/; \
	$(FUZZ_DIR)/bin/handoff_codec_fuzz -max_total_time=$(HANDOFF_FUZZ_SECONDS) -print_final_stats=1 $$corpus 2>&1 | tail -n 12; \
	status=$${PIPESTATUS[0]}; rm -rf $$corpus; exit $$status

e2e: build
	$(PYTHON) -m pytest -q e2e --ignore=e2e/k8s

# The real Kubernetes control plane (built from Go modules into ~/.cache/keep-e2e, warm in
# seconds) and the suites that run on it.
e2e-k8s: build
	e2e/k8s/build-tools.sh
	$(PYTHON) -m pytest -q e2e/k8s

test: deps
	$(MAKE) unit
	$(MAKE) asan
	$(MAKE) fuzz
	$(MAKE) e2e
	$(MAKE) e2e-k8s

# What the bench scripts run, and only that: on a fresh clone the whole build took about 5 of the
# first `make bench`'s 13.6 minutes, these targets 100 s.
BENCH_TARGETS := keep-server keep-server-nometrics keep-bench keep-floor keep-core-pingpong \
  keep-wake-latency keep_micro_bench

build-bench: $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target $(BENCH_TARGETS)

# Side-by-side comparison against redis-server (and the floor) on loopback; ratios, not absolutes.
bench: deps build-bench
	bench/compare.sh
	bench/metrics_cost.sh
	bench/memory.sh
	$(BUILD_DIR)/bin/keep_micro_bench --benchmark_min_time=0.1

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR)
