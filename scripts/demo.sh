#!/usr/bin/env bash
# Builds dq4 and runs its main job on a built-in default: for now the quick kernel benchmark.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target dq4_cli
./build/dq4 info
./build/dq4 bench kernels --quick "$@"
