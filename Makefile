# Quick start: `make demo` (set up, build, run the main job on generated data) and `make test` (all tests).
JOBS ?= $(shell nproc)
BUILD := build/release
ASAN_BUILD := build/asan
DNMF := $(BUILD)/bin/dnmf
# The Python environment of the extension's build, the Python tests and the demo: a venv, so that neither the
# system's (externally managed) Python nor the user's site-packages is touched.
VENV := build/venv
PYTHON := $(VENV)/bin/python

.PHONY: deps venv build build-asan build-fuzz demo test test-release test-asan test-fuzz bench format clean

deps:
	@bash scripts/install-deps.sh

venv: $(VENV)/.installed
$(VENV)/.installed: python/requirements-dev.txt | deps
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip
	$(PYTHON) -m pip install -q -r python/requirements-dev.txt
	# mpi4py compiled against the system's Open MPI (the one dnmf links), not a wheel's bundled MPI.
	$(PYTHON) -m pip install -q --no-binary mpi4py "mpi4py>=3.1"
	touch $@

build: deps venv
	cmake --preset release -DPython_EXECUTABLE=$(abspath $(PYTHON))
	cmake --build --preset release -j $(JOBS)

build-asan: deps venv
	cmake --preset asan -DPython_EXECUTABLE=$(abspath $(PYTHON))
	cmake --build --preset asan -j $(JOBS)

# libFuzzer targets of the file readers (clang; docs/reliability.md): only the layers they read with are built.
build-fuzz: deps
	cmake --preset fuzz
	cmake --build --preset fuzz -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(DNMF)
	PYTHONPATH=$(BUILD)/python $(PYTHON) scripts/demo.py

test: build build-asan build-fuzz
	ctest --preset release -j $(JOBS)
	ctest --preset asan -j $(JOBS)
	ctest --preset fuzz -j $(JOBS)

# Bounded fuzz runs (DNMF_FUZZ_SECONDS each, 20 by default) over the seed corpora.
test-fuzz: build-fuzz
	ctest --preset fuzz -j $(JOBS)

test-release: build
	ctest --preset release -j $(JOBS)

bench: build
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bin/bench_iteration --threads 2 --json $(BUILD)/bench_iteration.json
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bin/bench_threads --threads 2
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bin/bench_blas --threads 2
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=$(BUILD)/python $(PYTHON) \
	    bench/time_to_solution.py --threads 2

format:
	git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf build demo
