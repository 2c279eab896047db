#pragma once
// A JSON scanner for text that may still be arriving: it says whether a value starting at a
// position is complete, a valid prefix that the text's end cut short, or invalid, without
// building the value. The tool-call parsers use it to find a call's pieces in model output.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dq4::server::tool_parsers {

enum class ScanStatus { complete, partial, invalid };

struct ScanResult {
  ScanStatus status = ScanStatus::invalid;
  size_t end = 0;  // complete: just past the value; partial: the text's size; invalid: the error
};

size_t skip_whitespace(std::string_view text, size_t pos);

// The JSON value at `pos` (no leading whitespace), nested at most 64 deep.
ScanResult scan_value(std::string_view text, size_t pos);

// The string at `pos` (at its opening quote) decoded, when it is complete and valid.
std::optional<std::string> decode_string(std::string_view text, size_t pos, size_t end);

// Whether `text` ends with a proper prefix of `marker` (text that may become the marker): the
// length of the longest such suffix, 0 when none.
size_t partial_marker_suffix(std::string_view text, std::string_view marker);

// The rest of `text` from `pos` is a proper prefix of `marker` (empty included): the marker may
// still be arriving.
bool marker_arriving(std::string_view text, size_t pos, std::string_view marker);

}  // namespace dq4::server::tool_parsers
