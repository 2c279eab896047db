#pragma once
// JSON Schema string formats written as GBNF (the text between the quotes).

#include <string>
#include <string_view>

namespace dq4::constrain {

// date, time, date-time (RFC 3339; days valid in every year, so no 29 February), duration, uuid,
// ipv4, ipv6, hostname and email (plain subsets of names and addresses); "" for any other format.
std::string string_format_gbnf(std::string_view format);

}  // namespace dq4::constrain
