#pragma once
// The output constraint a generation request asks for, from any of the fields clients use:
// OpenAI's response_format ({"type": "text" | "json_object" | "json_schema"}), vLLM's
// structured_outputs object (json, regex, choice, grammar, json_object) and its older guided_*
// fields (guided_json, guided_regex, guided_choice, guided_grammar; guided_decoding_backend is
// read and ignored: there is one backend). At most one constraint per request. Both endpoints
// take all of them (vLLM takes response_format on /v1/completions too).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/constrain/constraint.h"

namespace dq4::server {

struct OutputConstraint {
  constrain::ConstraintSpec spec;
  std::string param;  // the field it came from: a spec that does not compile is a 400 naming it
};

// The top-level request keys read here, to add to the keys an endpoint knows.
const std::vector<std::string_view>& structured_output_keys();

// Reads the body's constraint fields (the body is known to be a JSON object of bounded depth).
// Throws ApiError (400 naming the field) for a malformed one, an unknown key inside one, a kind
// dq4 does not offer, or two constraints at once. A JSON schema keeps its keys in the order the
// client wrote them (objects come out in their properties' order).
std::optional<OutputConstraint> read_output_constraint(std::string_view body);

}  // namespace dq4::server
