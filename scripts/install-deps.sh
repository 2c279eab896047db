#!/usr/bin/env bash
# Installs everything dq4 needs to build, test and benchmark on Debian (12 "bookworm" or later).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
packages=(
  cmake ninja-build g++ ccache pkg-config
  libgtest-dev libgmock-dev googletest   # GoogleTest (+ sources, built for aarch64 in the cross build)
  libbenchmark-dev                       # Google Benchmark
  libopenblas-dev                        # the f32 baseline of dq4 bench
  nlohmann-json3-dev                     # JSON in tests
  g++-aarch64-linux-gnu qemu-user        # Arm cross build, run under qemu-aarch64
  clang libclang-rt-dev                  # libFuzzer targets (scripts/fuzz.sh)
)
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
