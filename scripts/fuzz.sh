#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and fuzzes the safetensors
# parser for a bounded time (FUZZ_SECONDS, default 60), seeded with the fixtures' model files.
# Needs: clang libclang-rt-14-dev cmake nlohmann-json3-dev, and DQ4_FIXTURES (default
# ../shared/fixtures). Exits non-zero if the build fails or the fuzzer finds a crash, leak or hang.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export DQ4_FIXTURES="${DQ4_FIXTURES:-$root/../shared/fixtures}"
seconds="${FUZZ_SECONDS:-60}"
build="$root/build-fuzz"

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found" >&2; exit 2; }
done
seeds=("$DQ4_FIXTURES/stories260K-hf/model.safetensors" "$DQ4_FIXTURES/stories260K-hf-w4a16-ct/model.safetensors")
for seed in "${seeds[@]}"; do
  [[ -f "$seed" ]] || { echo "fuzz: seed $seed not found (set DQ4_FIXTURES)" >&2; exit 2; }
done

options=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then options+=(-G Ninja); fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${options[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDQ4_FUZZ=ON -DDQ4_BUILD_TOOLS=OFF -DDQ4_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target safetensors_header_fuzz --parallel "$(nproc)"

# The corpus grows between runs; the fixtures are copied in each time, never committed.
mkdir -p "$build/corpus"
cp -f "${seeds[0]}" "$build/corpus/seed-stories260K-hf.safetensors"
cp -f "${seeds[1]}" "$build/corpus/seed-stories260K-hf-w4a16-ct.safetensors"
printf '\x18\x00\x00\x00\x00\x00\x00\x00{"__metadata__":{}}     ' >"$build/corpus/seed-empty.safetensors"
printf '\x40\x00\x00\x00\x00\x00\x00\x00{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}          \x00\x00\x80\x3f' \
  >"$build/corpus/seed-one.safetensors"

cd "$build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ./fuzz/safetensors_header_fuzz corpus -dict="$root/fuzz/safetensors.dict" -max_total_time="$seconds" \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/"
echo "fuzz: no crash in $seconds s"
