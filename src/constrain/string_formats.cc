#include "string_formats.h"

namespace dq4::constrain {
namespace {

const char* kDate =
    R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | )"
    R"(( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | )"
    R"("02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ))";
const char* kTime =
    R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? )"
    R"(( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))";

}  // namespace

std::string string_format_gbnf(std::string_view format) {
  if (format == "date") return kDate;
  if (format == "time") return kTime;
  if (format == "date-time") return std::string("( ") + kDate + " ) \"T\" " + kTime;
  if (format == "email") {
    // A plain subset of RFC 5321 addresses: dot-separated words before the @, a domain of
    // letter-digit-hyphen labels that neither start nor end with a hyphen.
    const std::string word = "[a-zA-Z0-9_+-]+";
    const std::string label = "[a-zA-Z0-9] ( [a-zA-Z0-9-]{0,61} [a-zA-Z0-9] )?";
    return word + " ( \".\" " + word + " )* \"@\" ( " + label + " \".\" )+ " + label;
  }
  if (format == "ipv4") {
    const std::string octet =
        R"(( "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9] ))";
    return octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet;
  }
  if (format == "uuid") {
    return R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" )"
           R"([0-9a-fA-F]{12})";
  }
  return "";
}

}  // namespace dq4::constrain
