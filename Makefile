# The README's two commands:
#   make test   install what the tests need (PyTorch from the package registry included),
#               build, run every C++ test through ctest, install the Python package with
#               `pip install .` and run its tests with pytest (GPU tests skip, with the reason,
#               when there is no GPU)
#   make bench  build + the C++ benchmark suite on GPU 0 (table on stdout, JSON lines in
#               bench/results/local/), then the Python peer benchmark (table, JSON lines, PNGs)
BUILD ?= build
JOBS ?= $(shell nproc)
PYTHON ?= python3
CMAKE_ARGS ?=
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
# The Python package's requirements: torch (CUDA 13 wheels from PyPI) and the test tools.
PY_DEPS := "torch>=2.11,<2.12" "scikit-build-core>=0.10" pytest numpy expecttest
PEER_ARGS ?= --quick

.PHONY: all configure build test test-cpp test-python pydeps pyinstall bench clean

all: build

# The C++ build skips the torch operator library: `pip install .` builds it (in build/wheel).
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Release -DTACHYON_BUILD_PYTHON=OFF $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

pydeps:
	$(PYTHON) -m pip install -q --disable-pip-version-check $(PY_DEPS)

pyinstall: pydeps
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PYTHON) -m pip install -q --disable-pip-version-check --no-build-isolation .

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(BUILD)/tests/tachyon_gpu_probe

test-python: pyinstall
	cd tests/python && $(PYTHON) -m pytest -q -rs .

test: test-cpp test-python

bench: build pyinstall
	$(BUILD)/bench/tachyon-bench --suite default --results bench/results/local
	$(PYTHON) bench/python/bench_peers.py $(PEER_ARGS) --results bench/results/local --plots bench/results/local/plots

clean:
	rm -rf $(BUILD) build/wheel
