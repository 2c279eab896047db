#include "schema_keywords.h"

#include <algorithm>
#include <iterator>

namespace dq4::constrain {

bool refused_keyword(std::string_view key) {
  static constexpr std::string_view kRefused[] = {"not",
                                                  "if",
                                                  "then",
                                                  "else",
                                                  "patternProperties",
                                                  "dependentSchemas",
                                                  "dependentRequired",
                                                  "dependencies",
                                                  "propertyNames",
                                                  "minProperties",
                                                  "maxProperties",
                                                  "unevaluatedProperties",
                                                  "unevaluatedItems",
                                                  "contains",
                                                  "minContains",
                                                  "maxContains",
                                                  "multipleOf",
                                                  "$dynamicRef",
                                                  "$recursiveRef"};
  return std::find(std::begin(kRefused), std::end(kRefused), key) != std::end(kRefused);
}

bool assertion_keyword(std::string_view key) {
  static constexpr std::string_view kAssertions[] = {"type",
                                                     "enum",
                                                     "const",
                                                     "properties",
                                                     "required",
                                                     "additionalProperties",
                                                     "items",
                                                     "minItems",
                                                     "maxItems",
                                                     "minLength",
                                                     "maxLength",
                                                     "pattern",
                                                     "format",
                                                     "minimum",
                                                     "maximum",
                                                     "exclusiveMinimum",
                                                     "exclusiveMaximum",
                                                     "anyOf",
                                                     "oneOf",
                                                     "allOf",
                                                     "$ref",
                                                     "prefixItems",
                                                     "additionalItems"};
  return std::find(std::begin(kAssertions), std::end(kAssertions), key) != std::end(kAssertions);
}

}  // namespace dq4::constrain
