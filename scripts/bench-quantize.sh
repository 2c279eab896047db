#!/usr/bin/env bash
# Quantizer speed and memory on a synthetic Llama-3.2-1B-shaped BF16 model (~2.5 GB): writes it
# with `dq4 synth --preset llama-1b`, then runs `dq4 quantize` twice (W4A8 int-quantized G32, and
# W4A8 pack-quantized channelwise) and prints each run's MB/s and peak RSS. Needs ~6 GB free in
# the scratch directory (BENCH_DIR, default: a new directory under /tmp), removed at the end.
# DQ4_BIN overrides the binary (default build/dq4, built here when missing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dq4="${DQ4_BIN:-$root/build/dq4}"
if [[ ! -x "$dq4" ]]; then
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j "$(nproc)" --target dq4_cli
fi
work="${BENCH_DIR:-$(mktemp -d /tmp/dq4-bench-quantize-XXXXXX)}"
trap 'rm -rf "$work"' EXIT
echo "== scratch: $work ($(df -h --output=avail "$work" | tail -1 | tr -d ' ') free), $(nproc) CPUs"

echo "== dq4 synth --preset llama-1b"
"$dq4" synth --preset llama-1b -o "$work/llama-1b"

echo "== dq4 quantize: W4A8, int-quantized, groupwise G=32"
"$dq4" quantize "$work/llama-1b" -o "$work/w4a8-g32" --scheme groupwise --group-size 32 \
  --format int-quantized
du -sh "$work/w4a8-g32"
rm -rf "$work/w4a8-g32"

echo "== dq4 quantize: W4A8, pack-quantized, channelwise"
"$dq4" quantize "$work/llama-1b" -o "$work/w4a8-channel" --scheme channelwise \
  --format pack-quantized
du -sh "$work/w4a8-channel"
