#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and runs each one for a
# bounded time (FUZZ_SECONDS per target, default 30), seeded from the fixtures and from
# fuzz/regressions/<target>/ (inputs that once failed, replayed first). FUZZ_SEED (default 1) fixes
# the mutation sequence so a CI run is reproducible; FUZZ_SEED=0 lets libFuzzer pick one.
# Needs: clang libclang-rt-dev cmake nlohmann-json3-dev libpcre2-dev, and DQ4_FIXTURES (default
# ../shared/fixtures). Exits non-zero if a build fails or a fuzzer finds a crash, leak or hang.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export DQ4_FIXTURES="${DQ4_FIXTURES:-$root/../shared/fixtures}"
seconds="${FUZZ_SECONDS:-30}"
fuzz_seed="${FUZZ_SEED:-1}"
build="$root/build-fuzz"
fixtures="$DQ4_FIXTURES"

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found" >&2; exit 2; }
done

# The targets: name, dictionary (or -), seed files (copied into the corpus each run, never
# committed; the corpus grows between local runs).
targets=(safetensors_header_fuzz)
seeds_safetensors_header_fuzz=("$fixtures/stories260K-hf/model.safetensors"
  "$fixtures/stories260K-hf-w4a16-ct/model.safetensors")
dict_safetensors_header_fuzz="$root/fuzz/safetensors.dict"
targets+=(quant_config_fuzz)
seeds_quant_config_fuzz=("$fixtures/stories260K-hf/config.json"
  "$fixtures/stories260K-hf-w4a16-ct/config.json"
  "$fixtures/compressed-tensors-pack-vectors/int4_config.json")
dict_quant_config_fuzz="$root/fuzz/quant_config.dict"
targets+=(tokenizer_encode_fuzz)
seeds_tokenizer_encode_fuzz=("$fixtures/tokenizer-llama3/README.md"
  "$fixtures/tokenizer-qwen3/README.md" "$fixtures/stories260K-hf/README.md"
  "$fixtures/tokenizer-llama3/reference_tokenizations.json"
  "$fixtures/tokenizer-llama2/reference_tokenizations.json")
# Inputs at most this long (libFuzzer's -max_len; larger seeds are cut): the tokenizer's cost
# grows with the text, and long inputs find nothing short ones do not.
max_len_tokenizer_encode_fuzz=1024
# Chat templates: Qwen3's tokenizer_config.json holds a real template (inside a JSON string;
# Llama 3's file is 50 KB of added tokens around a short one).
targets+=(chat_template_fuzz)
seeds_chat_template_fuzz=("$fixtures/tokenizer-qwen3/tokenizer_config.json")
dict_chat_template_fuzz="$root/fuzz/chat_template.dict"
max_len_chat_template_fuzz=16384  # the Qwen3 seed whole (9.7 KB)
# Checkpoint loading: the input is a model.safetensors (see the target for the configs).
targets+=(checkpoint_load_fuzz)
seeds_checkpoint_load_fuzz=("$fixtures/stories260K-hf-w4a16-ct/model.safetensors"
  "$fixtures/stories260K-hf/model.safetensors")
dict_checkpoint_load_fuzz="$root/fuzz/safetensors.dict"
# The HTTP server: raw requests to a live server (seeds: handwritten requests in the repository).
targets+=(http_request_fuzz)
seeds_http_request_fuzz=("$root"/fuzz/seeds/http_request_fuzz/*)
dict_http_request_fuzz="$root/fuzz/http_request.dict"
max_len_http_request_fuzz=8192
# The constraint converters (JSON schema, regex, choice) to GBNF: the first byte picks one.
targets+=(to_gbnf_fuzz)
seeds_to_gbnf_fuzz=("$root"/fuzz/seeds/to_gbnf_fuzz/*)
dict_to_gbnf_fuzz="$root/fuzz/to_gbnf.dict"
max_len_to_gbnf_fuzz=4096
# libFuzzer checks for leaks after every input whose mallocs and frees differ, which with a live
# server's threads is nearly every input: each check scanned the whole heap (model, tokenizer,
# server), most of the run. ASan still reports any leak when the target exits.
options_http_request_fuzz=(-detect_leaks=0)

# GBNF grammars (seeds: handwritten grammars in the repository).
targets+=(gbnf_compile_fuzz)
seeds_gbnf_compile_fuzz=("$root"/fuzz/seeds/gbnf_compile_fuzz/*)
dict_gbnf_compile_fuzz="$root/fuzz/gbnf.dict"
max_len_gbnf_compile_fuzz=4096

options=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then options+=(-G Ninja); fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${options[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_UNITY_BUILD=ON \
  -DDQ4_FUZZ=ON -DDQ4_BUILD_TOOLS=OFF -DDQ4_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target "${targets[@]}" --parallel "$(nproc)"

summary=()
for target in "${targets[@]}"; do
  corpus="$build/corpus-$target"
  mkdir -p "$corpus"
  declare -n seeds="seeds_$target"
  for seed in "${seeds[@]}"; do
    [[ -f "$seed" ]] || { echo "fuzz: seed $seed not found (set DQ4_FIXTURES)" >&2; exit 2; }
    name="${seed#"$fixtures"/}"
    cp -f "$seed" "$corpus/seed-$(echo "${name#"$root"/}" | tr '/' '_')"
  done
  unset -n seeds
  if [[ -d "$root/fuzz/regressions/$target" ]]; then
    for regression in "$root/fuzz/regressions/$target"/*; do
      cp -f "$regression" "$corpus/regression-$(basename "$regression")"
    done
  fi
  dict_var="dict_$target"
  target_options=()
  if [[ -n "${!dict_var:-}" ]]; then target_options=(-dict="${!dict_var}"); fi
  max_len_var="max_len_$target"
  if [[ -n "${!max_len_var:-}" ]]; then target_options+=(-max_len="${!max_len_var}"); fi
  extra_var="options_$target[@]"
  target_options+=("${!extra_var}")
  echo "== fuzz: $target, $seconds s"
  log="$build/$target.log"
  (cd "$build" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "./fuzz/$target" "$corpus" "${target_options[@]}" -max_total_time="$seconds" -seed="$fuzz_seed" -timeout=30 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/$target-" 2>&1 | tee "$log" |
    grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse) ')  # keep the log to the start and the end
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
  summary+=("$(printf '%-26s %10s inputs %8s exec/s' "$target" "${runs:-?}" "${rate:-?}")")
  echo "fuzz: $target: no crash in $seconds s"
done
echo "== fuzz: executions per target ($seconds s each)"
printf '%s\n' "${summary[@]}"
