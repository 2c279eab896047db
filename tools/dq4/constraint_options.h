#pragma once
// What `dq4 generate`'s output must match: --json-schema FILE, --regex RE, --grammar FILE (GBNF),
// --choice TEXT (repeatable): at most one kind.

#include <optional>

#include "args.h"
#include "dq4/constrain/constraint.h"

namespace dq4::cli {

void declare_constraint_options(Args& args);
// The spec those options describe (nullopt: none), files read. Throws dq4::Error naming the
// option (and the file) for an unreadable file or two kinds at once.
std::optional<constrain::ConstraintSpec> constraint_spec(const Args& args);
// The option that gave `spec`, and its file, for an error compiling it: "option --grammar
// g.gbnf".
std::string constraint_source(const Args& args, const constrain::ConstraintSpec& spec);

}  // namespace dq4::cli
