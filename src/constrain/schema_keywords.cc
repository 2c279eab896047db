#include "schema_keywords.h"

#include <algorithm>
#include <array>

namespace dq4::constrain {

bool refused_keyword(std::string_view key) {
  static constexpr std::array<std::string_view, 21> kRefused = {
      "not",           "if",           "then",           "else",
      "patternProperties", "dependentSchemas", "dependentRequired", "dependencies",
      "propertyNames", "minProperties", "maxProperties", "unevaluatedProperties",
      "unevaluatedItems", "contains", "minContains", "maxContains",
      "multipleOf",    "additionalItems", "prefixItems", "$dynamicRef",
      "$recursiveRef"};
  return std::find(kRefused.begin(), kRefused.end(), key) != kRefused.end();
}

bool assertion_keyword(std::string_view key) {
  static constexpr std::array<std::string_view, 21> kAssertions = {
      "type",      "enum",      "const",     "properties", "required",  "additionalProperties",
      "items",     "minItems",  "maxItems",  "minLength",  "maxLength", "pattern",
      "format",    "minimum",   "maximum",   "exclusiveMinimum", "exclusiveMaximum",
      "anyOf",     "oneOf",     "allOf",     "$ref"};
  return std::find(kAssertions.begin(), kAssertions.end(), key) != kAssertions.end();
}

}  // namespace dq4::constrain
