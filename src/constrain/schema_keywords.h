#pragma once
// Which JSON Schema keywords the converter acts on, refuses or ignores.
//
// Acted on: type (a name or a list), enum, const, properties, required, additionalProperties, items
// (a schema, or draft 7's array with additionalItems), prefixItems, minItems, maxItems, minLength,
// maxLength, pattern, format (date, time, date-time, uuid, ipv4, ipv6, hostname, duration, email),
// minimum, maximum, exclusiveMinimum, exclusiveMaximum (integer bounds), anyOf, oneOf (as anyOf: a
// value matching two branches is not excluded), allOf (one schema), $ref (to this document, $defs
// and definitions alike, recursion included), uniqueItems false. Ignored, as annotations: title,
// description, default, examples, $schema, $id, $comment, $anchor, deprecated, readOnly, writeOnly,
// content* and any keyword JSON Schema does not define. Refused: every other keyword that
// constrains values (below), so that no constraint is silently dropped.

#include <string_view>

namespace dq4::constrain {

bool refused_keyword(std::string_view key);
// Keywords that constrain a value (as opposed to annotations), refused beside $ref, anyOf ...
bool assertion_keyword(std::string_view key);

}  // namespace dq4::constrain
