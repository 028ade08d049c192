# Thin wrapper over CMake so the usual verbs work from the checkout root.
#   make            release build (build/)       make test    release build + all tests
#   make debug      debug build (build-debug/)   make asan    ASan+UBSan build + all tests
#   make check      test + asan + fuzz build (CI) make demo    release build + `multi2 demo`
#   make bench      build and run benchmarks      make fuzz    clang libFuzzer targets (build-fuzz/)
#   make fuzz-run   run every fuzz target for FUZZ_SECONDS (default 30; FUZZ_RUNS=N stops at N
#                   executions first) via bench/run_fuzz.sh
JOBS ?= $(shell nproc)
CMAKE ?= cmake

.PHONY: all release debug asan test check demo bench fuzz fuzz-run clean

all: release

release:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

debug:
	@$(CMAKE) -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@$(CMAKE) --build build-debug -j $(JOBS)

test: release
	cd build && ctest --output-on-failure -j $(JOBS)

asan:
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DM2_SANITIZE=ON -DCMAKE_C_FLAGS="-O1" >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

check: test asan fuzz

demo: release
	./build/multi2 demo

bench: release
	@for b in build/bench_*; do [ -x "$$b" ] && echo "== $$b" && "$$b"; done

fuzz:
	@$(CMAKE) -S fuzz -B build-fuzz -DCMAKE_C_COMPILER=clang >/dev/null
	@$(CMAKE) --build build-fuzz -j $(JOBS)

clean:
	rm -rf build build-debug build-asan build-fuzz

FUZZ_SECONDS ?= 30
fuzz-run:
	sh bench/run_fuzz.sh $(FUZZ_SECONDS)
