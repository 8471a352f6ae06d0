# Quick start: `make demo` (set up, build, run the main job on generated data) and `make test` (all tests).
JOBS ?= $(shell nproc)
BUILD := build/release
ASAN_BUILD := build/asan
DNMF := $(BUILD)/bin/dnmf

.PHONY: deps build build-asan demo test test-release test-asan bench format clean

deps:
	@bash scripts/install-deps.sh

build: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS)

build-asan: deps
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(DNMF)

test: build build-asan
	ctest --preset release -j $(JOBS)
	ctest --preset asan -j $(JOBS)

test-release: build
	ctest --preset release -j $(JOBS)

bench: build
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bin/bench_iteration --threads 2 --json $(BUILD)/bench_iteration.json

format:
	git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf build demo
