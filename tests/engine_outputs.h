#pragma once
// What the engine delivered for a request, per choice, and the check that two runs delivered the
// same to the bit.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dq4/engine/engine.h"

namespace dq4::test {

struct ChoiceOutput {
  std::vector<TokenId> tokens;
  std::string text;
  std::vector<TokenLogprobs> logprobs;
  std::optional<FinishReason> finish;  // the last delta's, so a delta after the finish shows
};
using ChoiceOutputs = std::map<int, ChoiceOutput>;  // by choice index

// Adds a delta to its choice.
void append(ChoiceOutputs& choices, const ChoiceDelta& delta);

// `got` has the choices of `want`, each with the same token ids, text and finish reason, and at
// each position the same chosen and top logprobs (ids, and values exactly). Failures name `what`,
// the choice and the position.
void expect_same_choices(const ChoiceOutputs& want, const ChoiceOutputs& got,
                         const std::string& what);

}  // namespace dq4::test
