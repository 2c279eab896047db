#!/usr/bin/env bash
# Checks the layering at the level of headers, which the per-layer link checks cannot see: a file of
# layer L (src/L/... or include/dq4/L/...) includes only its own folder's private headers (no
# "../other_layer/...") and the public headers (dq4/M/...) of the layers L may use.
set -euo pipefail
cd "$(dirname "$0")/.."

# The layers each layer may include, itself first (the libraries' link order in CMakeLists.txt).
declare -A allowed=(
  [kernels]="kernels"
  [io]="io kernels"
  [tokenizer]="tokenizer kernels"
  [quant]="quant io kernels"
  [layers]="layers quant io kernels"
  [model]="model layers quant io kernels"
  [convert]="convert model layers quant io tokenizer kernels"
  [constrain]="constrain io tokenizer kernels"
  [engine]="engine constrain model layers quant io tokenizer kernels"
  [server]="server engine constrain model layers quant io tokenizer kernels"
  [loadgen]="loadgen kernels"
)

status=0
fail() {
  echo "check-includes: $1" >&2
  status=1
}

for layer in "${!allowed[@]}"; do
  for dir in "src/$layer" "include/dq4/$layer"; do
    [ -d "$dir" ] || fail "$dir: no such folder (a layer listed here must exist)"
  done
done
for dir in src/* include/dq4/*; do
  [ -n "${allowed[$(basename "$dir")]+set}" ] || fail "$dir: a folder of no known layer"
done

while IFS= read -r -d '' file; do
  layer="$(echo "$file" | sed -E 's#^(src|include/dq4)/([^/]+)/.*#\2#')"
  while IFS=: read -r line target; do
    case "$target" in
      dq4/*/*)
        used="$(echo "$target" | cut -d/ -f2)"
        [[ " ${allowed[$layer]} " == *" $used "* ]] ||
          fail "$file:$line: layer '$layer' includes $target (layer '$used' is not below it)"
        ;;
      dq4/*) fail "$file:$line: $target is not in a layer's folder (dq4/<layer>/...)" ;;
      *)
        # A private header: must resolve inside this layer's own source folder.
        resolved="$(realpath -m --relative-to=. "$(dirname "$file")/$target")"
        [[ "$resolved" == "src/$layer/"* || "$resolved" == "include/dq4/$layer/"* ]] ||
          fail "$file:$line: includes $target, a private header outside layer '$layer'"
        ;;
    esac
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
             sed -E 's/^([0-9]+):.*"([^"]+)".*/\1:\2/')
done < <(find src include/dq4 -type f \( -name '*.cc' -o -name '*.h' \) -print0)
exit "$status"
