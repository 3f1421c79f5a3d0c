# Top-level driver: installs Debian dependencies, configures CMake, builds, runs.
JOBS ?= $(shell nproc)
CMAKE_CONFIGURE = cmake -S . -B

.PHONY: all deps test-deps build build-asan run test bench clean base

all: build

deps:
	@bash scripts/deps.sh scripts/debian-packages.txt

test-deps:
	@bash scripts/deps.sh scripts/debian-packages.txt scripts/debian-packages-test.txt

build: deps
	@$(CMAKE_CONFIGURE) build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build -j$(JOBS)

build-asan: deps
	@$(CMAKE_CONFIGURE) build-asan -DCMAKE_BUILD_TYPE=Debug -DOR1_SANITIZE=ON -DOR1_NATIVE=ON >/dev/null
	@cmake --build build-asan -j$(JOBS)

# The main job on the built-in default.
run: build
	@bash scripts/run.sh

# The whole suite, once on the optimised build and once under ASan + UBSan.
test: test-deps build build-asan
	cd build && ctest --output-on-failure --timeout 1500
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure --timeout 2400

bench: test-deps build
	@bash bench/run.sh

# Remakes the demo's base model under models/arith-base (tokenizer, init, SFT on traces, avg@8).
base: build
	@bash scripts/make_base.sh

clean:
	rm -rf build build-asan
