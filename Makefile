# The README's two commands:
#   make test   configure + build + every test through ctest (GPU tests skip, with the
#               reason, when there is no GPU)
#   make bench  build + the default benchmark suite on GPU 0 (table on stdout, JSON lines
#               under bench/results/)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all configure build test bench clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(BUILD)/tests/tachyon_gpu_probe

bench: build
	$(BUILD)/bench/tachyon-bench --suite default --results bench/results

clean:
	rm -rf $(BUILD)
