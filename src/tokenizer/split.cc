#include "split.h"

#include <algorithm>

namespace dq4::tokenizer {
namespace {

struct Span {
  size_t begin, end;
  bool flag;  // is a match (before the behavior), or must be removed (after it)
};

}  // namespace

bool parse_split_behavior(const std::string& name, SplitBehavior& behavior) {
  static const std::pair<const char*, SplitBehavior> kNames[] = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous},
  };
  for (const auto& [n, b] : kNames) {
    if (name == n) {
      behavior = b;
      return true;
    }
  }
  return false;
}

Matches find_literal(std::string_view text, std::string_view literal) {
  Matches matches;
  if (literal.empty()) return matches;
  for (size_t at = text.find(literal); at != std::string_view::npos;
       at = text.find(literal, at + literal.size()))
    matches.emplace_back(at, at + literal.size());
  return matches;
}

std::string replace_literal(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (const auto& [begin, end] : find_literal(text, from)) {
    out.append(text.substr(previous, begin - previous));
    out.append(to);
    previous = end;
  }
  out.append(text.substr(previous));
  return out;
}

void split_piece(const Piece& piece, const Matches& matches, SplitBehavior behavior, bool invert,
                 std::vector<Piece>& out) {
  const size_t length = piece.text.size();
  // The whole text as alternating spans, as Hugging Face's Pattern::find_matches gives them.
  std::vector<Span> spans;
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) spans.push_back({previous, begin, invert});
    spans.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous != length) spans.push_back({previous, length, invert});

  std::vector<Span> splits;  // flag: remove
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) splits.push_back({s.begin, s.end, false});
      break;
    case SplitBehavior::kRemoved:
      splits = spans;
      break;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.flag == previous_match && !splits.empty()) {
          splits.back().end = s.end;
        } else {
          splits.push_back({s.begin, s.end, false});
        }
        previous_match = s.flag;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.flag && !previous_match && !splits.empty()) {
          splits.back().end = s.end;
        } else {
          splits.push_back({s.begin, s.end, false});
        }
        previous_match = s.flag;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (size_t i = spans.size(); i-- > 0;) {
        const Span& s = spans[i];
        if (s.flag && !previous_match && !splits.empty()) {
          splits.back().begin = s.begin;
        } else {
          splits.push_back({s.begin, s.end, false});
        }
        previous_match = s.flag;
      }
      std::reverse(splits.begin(), splits.end());
      break;
  }
  for (const Span& s : splits) {
    if (s.flag || s.end == s.begin) continue;
    out.push_back(
        {piece.text.substr(s.begin, s.end - s.begin), piece.at_input_start && s.begin == 0});
  }
}

}  // namespace dq4::tokenizer
