#!/usr/bin/env bash
# Checks the formatting, then builds and runs every test: x86-64 (Release), x86-64 under
# ASan+UBSan, the whole library cross-compiled for aarch64 with the model and kernel tests under
# qemu-aarch64 (-cpu max, cortex-a76 and cortex-a72), and a bounded libFuzzer run (clang) of
# every fuzz target.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export DQ4_FIXTURES="${DQ4_FIXTURES:-$(cd "$root/../shared/fixtures" 2>/dev/null && pwd || echo "$root/../shared/fixtures")}"
jobs="$(nproc)"
# Unity builds (8 files per compiler run) halve the build: most of a file's compile time is the
# headers (nlohmann/json above all), parsed once per batch instead of once per file.
# (test-arm.sh and fuzz.sh build the same way.)
unity=(-DCMAKE_UNITY_BUILD=ON)  # CMake batches 8 files by default
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

# Each stage's start is stamped with the minutes since this script began (CI allows 90 in all).
stage() { echo "== [$((SECONDS / 60)) min] $*"; }

stage "formatting: clang-format (.clang-format) of every tracked C++ file"
git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run --Werror

stage "layering: no header included across layers (scripts/check-includes.sh)"
"$root/scripts/check-includes.sh"

stage "x86-64 release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${unity[@]}" "${launcher[@]}" >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

stage "x86-64 ASan+UBSan build and tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDQ4_SANITIZE=ON "${unity[@]}" \
  "${launcher[@]}" >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

stage "aarch64 cross build (the whole library), model and kernel tests under qemu"
"$root/scripts/test-arm.sh"

stage "libFuzzer targets, ${FUZZ_SECONDS:-30} s each"
"$root/scripts/fuzz.sh"
stage "all tests passed"
