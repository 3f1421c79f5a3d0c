# Top-level driver: installs Debian dependencies, configures CMake, builds, runs.
JOBS ?= $(shell nproc)
CMAKE_CONFIGURE = cmake -S . -B

.PHONY: all deps build build-asan run test bench clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@$(CMAKE_CONFIGURE) build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build -j$(JOBS)

build-asan: deps
	@$(CMAKE_CONFIGURE) build-asan -DCMAKE_BUILD_TYPE=Debug -DOR1_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j$(JOBS)

# The main job on the built-in default.
run: build
	@bash scripts/run.sh

# The whole suite, once on the optimised build and once under ASan + UBSan.
test: build build-asan
	cd build && ctest --output-on-failure --timeout 1500
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure --timeout 2400

bench: build
	@bash bench/run.sh

clean:
	rm -rf build build-asan
