#!/usr/bin/env bash
# Perplexity of stories260K in F32, W4A16 (the fixture) and W4A8 channelwise and G32, on text
# sampled from the F32 model itself (temperature 1, fixed seeds: ~4,000 tokens), so that the
# number says how far each quantization moves the model's own distribution.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fixtures="${DQ4_FIXTURES:-$root/../shared/fixtures}"
dq4="${DQ4:-$root/build/dq4}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for seed in 1 2 3 4 5 6 7 8; do
  "$dq4" generate -m "$fixtures/stories260K-hf" -p "Once upon a time" -n 500 --temp 1 --top-k 0 \
    --top-p 1 --min-p 0 --seed "$seed" --ignore-eos --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["text"])' >>"$work/text.txt"
done
"$dq4" quantize "$fixtures/stories260K-hf" -o "$work/w4a8-ch" --scheme channelwise >/dev/null
"$dq4" quantize "$fixtures/stories260K-hf" -o "$work/w4a8-g32" --scheme groupwise --group-size 32 >/dev/null
echo "| model | perplexity (ctx 256) |"
echo "|---|---|"
for m in "F32:$fixtures/stories260K-hf" "W4A16 channelwise (fixture):$fixtures/stories260K-hf-w4a16-ct" \
  "W4A8 channelwise:$work/w4a8-ch" "W4A8 G32:$work/w4a8-g32"; do
  name="${m%%:*}" dir="${m#*:}"
  "$dq4" perplexity -m "$dir" -f "$work/text.txt" --ctx 256 --json |
    python3 -c "import json,sys; r=json.load(sys.stdin); print('| $name | %.4f +/- %.4f (%d tokens) |' % (r['perplexity'], r['standard_error'], r['scored_tokens']))"
done
