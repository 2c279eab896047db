#pragma once
// JSON parsing for checkpoint headers and indexes: UTF-8 checked (by nlohmann-json), and a key
// repeated within one object is an error instead of silently keeping the last value.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dq4::io {

// Throws dq4::Error starting with `context` (the file, usually) and saying what is wrong.
nlohmann::json parse_strict_json(std::string_view text, const std::string& context);

}  // namespace dq4::io
