#pragma once
// Pieces of text between the pipeline stages, and Hugging Face's way of splitting a piece at
// pattern matches (SplitDelimiterBehavior), shared by the Split, Digits and Metaspace
// pre-tokenizers.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dq4::tokenizer {

struct Piece {
  std::string text;
  // Whether the piece begins at byte 0 of the text given to encode (Metaspace's "first").
  bool at_input_start = false;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Parses "Removed", "Isolated", ... ; returns false for anything else.
bool parse_split_behavior(const std::string& name, SplitBehavior& behavior);

using Matches = std::vector<std::pair<size_t, size_t>>;  // [begin, end) byte ranges, in order

// Non-overlapping occurrences of `literal` in `text`, left to right.
Matches find_literal(std::string_view text, std::string_view literal);

// `text` with every occurrence of `from` (non-empty) replaced by `to`.
std::string replace_literal(std::string_view text, std::string_view from, std::string_view to);

// Splits `piece` around `matches` (inverted: the text between them is what matched) and appends
// the non-empty results to `out`.
void split_piece(const Piece& piece, const Matches& matches, SplitBehavior behavior, bool invert,
                 std::vector<Piece>& out);

}  // namespace dq4::tokenizer
