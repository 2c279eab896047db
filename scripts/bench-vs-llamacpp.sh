#!/usr/bin/env bash
# dq4 vs llama.cpp on the same weights, same machine, same run, same thread counts: a synthetic
# Llama-3.2-1B-shaped model (`dq4 synth --preset llama-1b`, BF16) quantized W4A8 G32 by
# `dq4 quantize` (lm_head kept BF16), run by `dq4 bench model`, and the same checkpoint exported
# by `dq4 export-gguf` (Q4_0 holding the very same int4 values and scales, BF16 head and
# embeddings) run by llama.cpp through node-llama-cpp's prebuilt CPU library
# (tests/js/llamacpp_bench.mjs). Prints both sides' prompt processing of 512 tokens and decode of
# 128 tokens at each thread count, and dq4 / llama.cpp. The two sides alternate ROUNDS times
# (default 3): a host whose speed drifts between states (as shared VMs do) then weighs
# on both alike; the table has each side's median and the range of the rounds' ratios.
# Needs ~5 GB in the scratch directory (BENCH_DIR, default: a new directory under /tmp), removed
# at the end. DQ4_BIN overrides the binary (default build/dq4, built here when missing);
# THREADS the thread counts (default 1,2); ROUNDS the alternations (default 3). PRESET another
# synth preset (e.g. qwen3-30b-a3b, a mixture of experts exported as llama.cpp's qwen3moe) and
# LAYERS its depth (synth --layers), so that a large model fits the scratch directory. BENCH_WRAP
# a command prefix for each timed run (e.g. `flock FILE` on a host other programs benchmark on).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dq4="${DQ4_BIN:-$root/build/dq4}"
threads="${THREADS:-1,2}"
rounds="${ROUNDS:-3}"
preset="${PRESET:-llama-1b}"
layers=()
read -r -a wrap <<< "${BENCH_WRAP:-}"
if [[ -n "${LAYERS:-}" ]]; then layers=(--layers "$LAYERS"); fi
if [[ ! -x "$dq4" ]]; then
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j "$(nproc)" --target dq4_cli
fi
if [[ ! -d "$root/tests/js/node_modules/node-llama-cpp" ]]; then
  echo "tests/js/node_modules/node-llama-cpp is missing: run scripts/install-deps.sh" >&2
  exit 1
fi
work="${BENCH_DIR:-$(mktemp -d /tmp/dq4-bench-vs-llamacpp-XXXXXX)}"
trap 'rm -rf "$work"' EXIT
echo "== scratch: $work, $(nproc) CPUs, threads $threads"

"$dq4" synth --preset "$preset" "${layers[@]}" -o "$work/$preset"
"$dq4" quantize "$work/$preset" -o "$work/w4a8-g32" --scheme groupwise --group-size 32
rm -rf "${work:?}/$preset"
"$dq4" export-gguf "$work/w4a8-g32" -o "$work/w4a8-g32.gguf"

for round in $(seq "$rounds"); do
  echo "== round $round of $rounds: dq4 bench model (W4A8 G32, BF16 head)"
  "${wrap[@]}" "$dq4" bench model -m "$work/w4a8-g32" --threads-list "$threads" --json \
    > "$work/dq4-$round.json"
  echo "== round $round of $rounds: llama.cpp (node-llama-cpp 3.21.1, Q4_0, BF16 head)"
  "${wrap[@]}" node "$root/tests/js/llamacpp_bench.mjs" "$work/w4a8-g32.gguf" \
    --threads "$threads" --pp 512 --tg 128 > "$work/llamacpp-$round.json"
done

# Per round, dq4's first case of each (phase, tokens, threads) is the BF16 head's, like the GGUF's.
echo "== dq4 vs llama.cpp: medians over $rounds rounds, and the rounds' ratios"
jq -r -n --slurpfile d <(cat "$work"/dq4-*.json) --slurpfile l <(cat "$work"/llamacpp-*.json) '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor]
                     else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def r2: . * 100 | round / 100;
  [range(0; $l | length) as $i
   | $l[$i][] as $x
   | ($d[$i] | map(select(.phase == $x.phase and .tokens == $x.tokens and .threads == $x.threads))
      | .[0]) as $y
   | {phase: $x.phase, tokens: $x.tokens, threads: $x.threads, llama: $x.tokens_per_s,
      dq4: $y.tokens_per_s}]
  | group_by([.threads, .phase == "decode", .tokens])
  | (["phase", "tokens", "threads", "dq4 tok/s", "llama.cpp tok/s", "dq4 / llama.cpp",
      "rounds: min - max"]),
    (.[] | (map(.dq4) | median) as $dq4 | (map(.llama) | median) as $llama
     | (map(.dq4 / .llama)) as $ratios
     | [.[0].phase, .[0].tokens, .[0].threads, ($dq4 | r2), ($llama | r2), ($dq4 / $llama | r2),
        "\($ratios | min | r2) - \($ratios | max | r2)"])
  | @tsv' | column -t -s $'\t'

echo "== dq4 alone (round 1): each case against its ceiling measured in the same run"
jq -r '(["phase", "tokens", "threads", "head", "tok/s", "ceiling", "ratio", "head share", "RSS MB",
         "RSS/model", "load s"]),
       (.[] | [.phase, .tokens, .threads, .head, (.tokens_per_s * 100 | round / 100),
               (.ceiling_tokens_per_s * 100 | round / 100), (.ceiling_ratio * 1000 | round / 1000),
               (.head_share * 1000 | round / 1000), (.peak_rss_mb | round),
               (.rss_ratio * 1000 | round / 1000), (.load_s * 100 | round / 100)])
       | @tsv' "$work/dq4-1.json" | column -t -s $'\t'
