#!/usr/bin/env bash
# The serving benchmark of docs/benchmarks.md: a synthetic Llama-3.2-1B-shaped model (`dq4 synth
# --preset llama-1b`) quantized W4A8 G32 by `dq4 quantize`, served by `dq4 serve` on loopback,
# measured by `dq4 bench serve` at each concurrency (random prompts of INPUT_LEN tokens,
# OUTPUT_LEN generated, greedy, ignore_eos); then the single stream and `dq4 bench model`'s decode
# on the same directory and threads, alternating. Prints the table and the three targets' ratios.
#
# Environment: CONCURRENCY (default 1,4,16,64, the sweep of `dq4 bench serve`), INPUT_LEN (256), OUTPUT_LEN (128), PROMPTS_PER_LEVEL
# (requests per level: default the concurrency, at least 4), SINGLE_ROUNDS (rounds of the
# single-stream comparison; default 3), THREADS (engine threads; default all CPUs), PORT (8123),
# DQ4_BIN (default build/dq4), BENCH_DIR (scratch, ~4 GB, kept; default a new directory under
# /tmp, removed at the end), SPECULATIVE_CONFIG (the server's --speculative-config JSON; default
# none).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dq4="${DQ4_BIN:-$root/build/dq4}"
levels="${CONCURRENCY:-1,4,16,64}"
input_len="${INPUT_LEN:-256}"
output_len="${OUTPUT_LEN:-128}"
threads="${THREADS:-$(nproc)}"
port="${PORT:-8123}"
rounds="${SINGLE_ROUNDS:-3}"
[[ -x $dq4 ]] || { echo "$dq4 is not an executable (build it or set DQ4_BIN)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq not found (scripts/install-deps.sh)" >&2; exit 2; }
work="${BENCH_DIR:-}"
keep_work=1
[[ -n $work ]] || { work=$(mktemp -d /tmp/dq4-bench-serve-XXXXXX); keep_work=0; }
mkdir -p "$work"
server=""
cleanup() {
  if [[ -n $server ]]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" || true; fi
  [[ $keep_work == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT
echo "== scratch: $work, $(nproc) CPUs, engine threads $threads, levels $levels," \
  "prompts of $input_len tokens, $output_len generated"

if [[ ! -f $work/w4a8-g32/config.json ]]; then
  "$dq4" synth --preset llama-1b -o "$work/llama-1b"
  "$dq4" quantize "$work/llama-1b" -o "$work/w4a8-g32" --scheme groupwise --group-size 32
  rm -rf "$work/llama-1b"
fi

speculative=()
[[ -z ${SPECULATIVE_CONFIG:-} ]] || speculative=(--speculative-config "$SPECULATIVE_CONFIG")
"$dq4" serve "$work/w4a8-g32" --port "$port" --threads "$threads" --max-model-len 2048 \
  "${speculative[@]}" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.5
done

echo "== dq4 bench serve"
: > "$work/serve.jsonl"
rm -f "$work/model.json"
IFS=, read -ra levels_list <<< "$levels"
# A seed per level: no level may find another's prompts in the server's prefix cache.
for i in "${!levels_list[@]}"; do
  c=${levels_list[$i]}
  n="${PROMPTS_PER_LEVEL:-$(( c > 4 ? c : 4 ))}"
  "$dq4" bench serve --url "http://127.0.0.1:$port" --concurrency "$c" --num-prompts "$n" \
    --input-len "$input_len" --output-len "$output_len" --seed "$((100 * i))" --json |
    jq -c '.[]' >> "$work/serve.jsonl"
done
# The single-stream comparison: shared hosts drift between speed states over minutes, so the
# server's single stream and `dq4 bench model`'s decode alternate, a few seconds apart,
# SINGLE_ROUNDS times, and the ratio is the median of the rounds' ratios.
echo "== single stream vs dq4 bench model decode ($threads threads), alternating, $rounds rounds"
: > "$work/single.jsonl"
for r in $(seq "$rounds"); do
  "$dq4" bench model -m "$work/w4a8-g32" --threads-list "$threads" --json > "$work/model.json"
  decode=$(jq '[.[] | select(.phase == "decode")][0].tokens_per_s' "$work/model.json")
  "$dq4" bench serve --url "http://127.0.0.1:$port" --concurrency 1 --num-prompts 2 \
    --input-len "$input_len" --output-len "$output_len" --seed "$((1000 + r))" --json |
    jq -c --argjson decode "$decode" \
      '.[0] | {serve: (1000 / .tpot.p50_ms), model: $decode, ratio: (1000 / .tpot.p50_ms / $decode)}' \
      >> "$work/single.jsonl"
done
curl -s "http://127.0.0.1:$port/metrics" |
  grep -E '^vllm:(prefix_cache_hits|spec_decode_num_draft_tokens|spec_decode_num_accepted_tokens)_total' ||
  true
kill -TERM "$server"
wait "$server" || true
server=""
jq -r -s '(["concurrency", "completed", "out tok/s", "req/s", "TTFT p50 ms", "TTFT p99 ms",
            "TPOT p50 ms", "ITL p50 ms", "ITL p99 ms"]),
          (.[] | [.concurrency, .completed, (.output_tokens_per_s * 100 | round / 100),
                  (.requests_per_s * 1000 | round / 1000), (.ttft.p50_ms | round),
                  (.ttft.p99_ms | round), (.tpot.p50_ms * 10 | round / 10),
                  (.itl.p50_ms * 10 | round / 10), (.itl.p99_ms * 10 | round / 10)]) | @tsv' \
  "$work/serve.jsonl" | column -t -s $'\t'

echo "== targets"
[[ ! -s $work/single.jsonl ]] || jq -r -s '
  map("single stream (1 / TPOT p50) \(.serve * 100 | round / 100) tok/s, bench model decode \(.model * 100 | round / 100): \(.ratio * 1000 | round / 1000)")[],
  "single stream / bench model decode, median of the rounds: \(map(.ratio) | sort | .[length / 2 | floor] * 1000 | round / 1000) (target: within 5 %)"' \
  "$work/single.jsonl"
jq -r -s '
  (map(select(.concurrency == 1))[0]) as $one
  | (map(select(.concurrency == 16))[0]) as $sixteen
  | (if $sixteen and $one then
       "16 streams / 1 stream: \($sixteen.output_tokens_per_s / $one.output_tokens_per_s * 100 | round / 100)x (target >= 6)",
       "median TTFT at 16 streams: \($sixteen.ttft.p50_ms | round) ms (target < 1000)"
     else empty end)' "$work/serve.jsonl"
