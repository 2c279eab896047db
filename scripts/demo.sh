#!/usr/bin/env bash
# Builds dq4 and runs its main job with nothing to download: quantizes the stories260K fixture
# (a real trained tiny Llama) to W4A8, streams a story from it, then measures a synthetic
# Llama-3.2-1B-shaped model quantized to W4A8 G32 (dq4 bench model --quick).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
fixtures="${DQ4_FIXTURES:-$root/../shared/fixtures}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target dq4_cli
./build/dq4 info
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
./build/dq4 quantize "$fixtures/stories260K-hf" -o "$work/stories260K-w4a8" --scheme groupwise \
  --group-size 32
echo "== a story from stories260K, W4A8 G32"
./build/dq4 generate -m "$work/stories260K-w4a8" -p "Once upon a time" -n 200 --temp 0.8 --seed 7
echo "== Llama-3.2-1B shapes (synthetic weights), W4A8 G32"
./build/dq4 bench model --synth llama-1b --quick "$@"
