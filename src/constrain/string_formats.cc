#include "string_formats.h"

namespace dq4::constrain {
namespace {

const char* kDate =
    R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | )"
    R"(( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | )"
    R"("02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ))";
const char* kOctet = R"(( "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9] ))";
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
    const std::string octet = kOctet;
    return octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet;
  }
  if (format == "hostname") {
    // RFC 1123 labels of letters, digits and hyphens (no hyphen first or last), at most four of
    // at most 61 characters: a subset that always stays within the 253 a name may have.
    const std::string label = "[a-zA-Z0-9] ( [a-zA-Z0-9-]{0,59} [a-zA-Z0-9] )?";
    return "( " + label + " \".\" ){0,3} " + label;
  }
  if (format == "ipv6") {
    // RFC 3986's IPv6address: eight groups, or fewer around one "::", the last two groups
    // possibly an IPv4 address.
    const std::string h16 = "[0-9a-fA-F]{1,4}";
    const std::string octet = kOctet;
    const std::string ls32 = "( " + h16 + " \":\" " + h16 + " | " + octet + " \".\" " + octet +
                             " \".\" " + octet + " \".\" " + octet + " )";
    const auto groups = [&](int n) {  // n times h16 ":"
      return n == 0 ? std::string() : "( " + h16 + " \":\" ){" + std::to_string(n) + "} ";
    };
    const auto before = [&](int most) {  // up to `most` + 1 groups before "::"
      const std::string more =
          most == 0 ? "" : "( " + h16 + " \":\" ){0," + std::to_string(most) + "} ";
      return "( " + more + h16 + " )? ";
    };
    std::string out = "( " + groups(6) + ls32 + " | \"::\" " + groups(5) + ls32;
    for (int right = 4; right >= 0; --right)
      out += " | " + before(4 - right) + "\"::\" " + groups(right) + ls32;
    out += " | " + before(5) + "\"::\" " + h16 + " | " + before(6) + "\"::\" )";
    return out;
  }
  if (format == "duration") {
    // RFC 3339's ISO 8601 durations (P1Y2M3DT4H5M6S, P2W), each number of at most 9 digits.
    const std::string n = "[0-9]{1,9} ";
    const std::string second = n + "\"S\"";
    const std::string minute = n + "\"M\" ( " + second + " )?";
    const std::string hour = n + "\"H\" ( " + minute + " )?";
    const std::string time = "\"T\" ( " + hour + " | " + minute + " | " + second + " )";
    const std::string day = n + "\"D\"";
    const std::string month = n + "\"M\" ( " + day + " )?";
    const std::string year = n + "\"Y\" ( " + month + " )?";
    return "\"P\" ( ( " + year + " | " + month + " | " + day + " ) ( " + time + " )? | " + time +
           " | " + n + "\"W\" )";
  }
  if (format == "uuid") {
    return R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" )"
           R"([0-9a-fA-F]{12})";
  }
  return "";
}

}  // namespace dq4::constrain
