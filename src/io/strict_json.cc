#include "strict_json.h"

#include <set>
#include <vector>

#include "dq4/kernels/error.h"

namespace dq4::io {
namespace {

// nlohmann's messages quote the bytes last read, which may be invalid UTF-8; keep ours ASCII.
std::string ascii_only(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

nlohmann::json parse_strict_json(std::string_view text, const std::string& context) {
  std::vector<std::set<std::string>> open_objects;  // keys seen so far, per enclosing object
  auto check_keys = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end) {
      open_objects.pop_back();
    } else if (event == Event::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second)
        throw Error(context + ": key \"" + key + "\" appears twice in one JSON object");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check_keys);
  } catch (const nlohmann::json::exception& e) {
    throw Error(context + ": not valid JSON: " + ascii_only(e.what()));
  }
}

}  // namespace dq4::io
