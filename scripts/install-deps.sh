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
  nlohmann-json3-dev                     # JSON (configs, tokenizer.json, tests)
  libpcre2-dev                           # tokenizer pre-tokenizer regexes (Unicode classes)
  libicu-dev                             # tokenizer Unicode normalization (NFC, NFKC, ...)
  g++-aarch64-linux-gnu qemu-user        # Arm cross build, run under qemu-aarch64
  clang libclang-rt-dev                  # libFuzzer targets (scripts/fuzz.sh)
  clang-format                           # scripts/test.sh checks the tree's formatting
  libboost-dev                           # Boost.Beast/Asio (header-only): dq4 serve's HTTP server
  haproxy                                # scripts/serve-cluster.sh: replicas behind a balancer
  prometheus                             # promtool checks /metrics in the tests
  jq                                     # scripts/bench-serve.sh and bench-vs-llamacpp.sh read JSON
)
# The aarch64 cross build (scripts/test-arm.sh) links Debian's arm64 builds of PCRE2 and ICU
# (multiarch); Boost and nlohmann-json are headers and GoogleTest is built from its sources.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
packages+=(libpcre2-dev:arm64 libicu-dev:arm64)
# Node.js runs the reference implementations of the differential tests (tests/js). Debian's
# packages only where no node/npm is installed yet (a NodeSource nodejs already bundles npm).
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm reference implementations (Hugging Face tokenizers, @huggingface/jinja, llama.cpp through
# node-llama-cpp's prebuilt binaries), pinned by tests/js/package-lock.json. node-llama-cpp must
# never download or build llama.cpp itself: its prebuilt CPU binary comes with the npm packages.
(cd "$(dirname "$0")/../tests/js" &&
  NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund --loglevel=error)
