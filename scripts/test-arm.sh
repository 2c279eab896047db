#!/usr/bin/env bash
# Cross-builds the whole dq4 library for aarch64 into build-arm/ (every layer, each linked alone by
# its link check, with Debian's arm64 PCRE2 and ICU), then under qemu-user runs the model end to
# end on the stories260K fixtures (model_tests, and engine_tests' speculative decoding) and
# kernels_tests on three emulated CPUs, checking
# that runtime dispatch picks the kernel each one must get:
#   max         dotprod + i8mm   -> neon_i8mm
#   cortex-a76  dotprod, no i8mm -> neon_dotprod (neon_i8mm unsupported)
#   cortex-a72  plain NEON       -> neon (neon_dotprod and neon_i8mm unsupported)
# (W4A16 and attention: neon on all three; dense: neon on all three, neon_bf16 supported on max
# only.) Every kernel the CPU supports is compared bit for bit with the reference by the suite
# itself.
# Needs: g++-aarch64-linux-gnu qemu-user googletest nlohmann-json3-dev libboost-dev cmake and the
# arm64 packages libpcre2-dev:arm64 libicu-dev:arm64 (scripts/install-deps.sh; ninja optional).
# Exits non-zero if the build, any test or any dispatch check fails.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-arm"
sysroot=/usr/aarch64-linux-gnu
export DQ4_FIXTURES="${DQ4_FIXTURES:-$repo/../shared/fixtures}"

for tool in aarch64-linux-gnu-g++ qemu-aarch64 cmake; do
  command -v "$tool" >/dev/null || { echo "test-arm: $tool not found" >&2; exit 2; }
done
[[ -d "$DQ4_FIXTURES" ]] || { echo "test-arm: DQ4_FIXTURES=$DQ4_FIXTURES is not a directory" >&2; exit 2; }

options=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then options+=(-G Ninja); fi
if command -v ccache >/dev/null; then
  options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Unity builds, as in test.sh: the headers parsed once per 8 files.
cmake -S "$repo" -B "$build" "${options[@]}" -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" -DDQ4_BUILD_TOOLS=OFF
cmake --build "$build" --target dq4_layer_checks kernels_tests model_tests moe_tests \
  engine_tests --parallel "$(nproc)"

failed=0
# run CPU EXPECTED_DEFAULT EXPECTED_SUPPORTED_LIST EXPECTED_DENSE_SUPPORTED_LIST [GTEST_FILTER]
run() {
  local cpu=$1 want_default=$2 want_supported=$3 want_dense=$4 filter=${5:-*}
  local xml="$build/kernels_tests-$1.xml"
  echo "== qemu-aarch64 -cpu $cpu (tests: $filter)"
  rm -f "$xml"
  local start=$SECONDS
  if ! qemu-aarch64 -cpu "$cpu" -L "$sysroot" "$build/tests/kernels_tests" --gtest_brief=1 \
      --gtest_filter="$filter" --gtest_output="xml:$xml"; then
    echo "test-arm: FAILED: kernels_tests under -cpu $cpu" >&2
    failed=1
  fi
  if ! grep -q "name=\"chosen_kernel\" value=\"$want_default\"" "$xml" 2>/dev/null; then
    echo "test-arm: FAILED: -cpu $cpu did not choose $want_default by default" >&2
    failed=1
  fi
  if ! grep -q "name=\"supported_kernels\" value=\"$want_supported\"" "$xml" 2>/dev/null; then
    echo "test-arm: FAILED: -cpu $cpu should support exactly: $want_supported" >&2
    failed=1
  fi
  # W4A16 has one Arm variant (plain NEON), which every CPU here runs.
  if ! grep -q 'name="w4a16_chosen_kernel" value="neon"' "$xml" 2>/dev/null ||
     ! grep -q 'name="w4a16_supported_kernels" value="reference neon"' "$xml" 2>/dev/null; then
    echo "test-arm: FAILED: -cpu $cpu should choose and support W4A16 neon" >&2
    failed=1
  fi
  # Dense: the exact neon kernel is the automatic choice everywhere; neon_bf16 needs FEAT_BF16.
  if ! grep -q 'name="dense_chosen_kernel" value="neon"' "$xml" 2>/dev/null ||
     ! grep -q "name=\"dense_supported_kernels\" value=\"$want_dense\"" "$xml" 2>/dev/null; then
    echo "test-arm: FAILED: -cpu $cpu should choose dense neon and support exactly: $want_dense" >&2
    failed=1
  fi
  # Attention has one Arm variant (plain NEON), the automatic choice everywhere.
  if ! grep -q 'name="attention_chosen_kernel" value="neon"' "$xml" 2>/dev/null; then
    echo "test-arm: FAILED: -cpu $cpu should choose attention neon" >&2
    failed=1
  fi
  echo "   $(grep -o 'tests="[0-9]*" failures="[0-9]*" disabled="[0-9]*"' "$xml" 2>/dev/null | head -1)" \
       "in $((SECONDS - start)) s"
}

# -cpu max supports every Arm variant, so its run checks each one bit for bit against the
# reference. The older CPUs check what differs there: the dispatcher's choice and fallback, the
# argument checks and the pool, and that the chosen kernels run without an illegal instruction
# (the exactness suites of every variant under -cpu max take most of this stage's time).
older_cpus='*Dispatch*:*BadInput*:*Arguments*:*KnownAnswer*:ThreadPool*:Int4*'
run max "neon_i8mm" "reference neon neon_dotprod neon_i8mm" "reference neon neon_bf16"
run cortex-a76 "neon_dotprod" "reference neon neon_dotprod" "reference neon" "$older_cpus"
run cortex-a72 "neon" "reference neon" "reference neon" "$older_cpus"

# The model end to end: stories260K's reference generations and logits, the batched forward bit
# for bit at 1 to 3 threads, the W4A8 and W4A16 paths, sampling and the errors.
echo "== qemu-aarch64 -cpu max: model_tests"
start=$SECONDS
if ! qemu-aarch64 -cpu max -L "$sysroot" "$build/tests/model_tests" --gtest_brief=1; then
  echo "test-arm: FAILED: model_tests under -cpu max" >&2
  failed=1
fi
echo "   model_tests in $((SECONDS - start)) s"

# Mixtures of experts: routing, the grouped W4A8 experts, batches bit for bit, pool jobs.
echo "== qemu-aarch64 -cpu max: moe_tests"
start=$SECONDS
if ! qemu-aarch64 -cpu max -L "$sysroot" "$build/tests/moe_tests" --gtest_brief=1; then
  echo "test-arm: FAILED: moe_tests under -cpu max" >&2
  failed=1
fi
echo "   moe_tests in $((SECONDS - start)) s"

# Speculative decoding on the model: n-gram and draft-model drafts verified by the rows of a step
# give the outputs of plain decoding, the draft's cache rolled back with the target's.
echo "== qemu-aarch64 -cpu max: engine_tests (speculative decoding)"
start=$SECONDS
if ! qemu-aarch64 -cpu max -L "$sysroot" "$build/tests/engine_tests" --gtest_brief=1 \
    --gtest_filter='Speculation.*:DraftModel.*:EngineModel.Speculation*'; then
  echo "test-arm: FAILED: engine_tests under -cpu max" >&2
  failed=1
fi
echo "   engine_tests in $((SECONDS - start)) s"

if [[ $failed -ne 0 ]]; then
  echo "test-arm: FAILED" >&2
  exit 1
fi
echo "test-arm: all passed"
