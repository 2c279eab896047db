#include "engine_outputs.h"

#include <gtest/gtest.h>

namespace dq4::test {
namespace {

void expect_same_logprob(const TokenLogprob& want, const TokenLogprob& got,
                         const std::string& where) {
  EXPECT_EQ(got.token, want.token) << where;
  EXPECT_EQ(got.logprob, want.logprob) << where;
}

void expect_same_logprobs(const std::vector<TokenLogprobs>& want,
                          const std::vector<TokenLogprobs>& got, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where << ": logprob positions";
  for (size_t t = 0; t < want.size(); ++t) {
    const std::string at = where + ", position " + std::to_string(t);
    expect_same_logprob(want[t].chosen, got[t].chosen, at + ", chosen");
    ASSERT_EQ(got[t].top.size(), want[t].top.size()) << at << ": top logprobs";
    for (size_t k = 0; k < want[t].top.size(); ++k)
      expect_same_logprob(want[t].top[k], got[t].top[k], at + ", top " + std::to_string(k));
  }
}

}  // namespace

void append(ChoiceOutputs& choices, const ChoiceDelta& delta) {
  ChoiceOutput& c = choices[delta.index];
  c.tokens.insert(c.tokens.end(), delta.token_ids.begin(), delta.token_ids.end());
  c.text += delta.text;
  c.logprobs.insert(c.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
  c.finish = delta.finish_reason;
}

void expect_same_choices(const ChoiceOutputs& want, const ChoiceOutputs& got,
                         const std::string& what) {
  std::vector<int> want_indices, got_indices;
  for (const auto& [index, choice] : want) want_indices.push_back(index);
  for (const auto& [index, choice] : got) got_indices.push_back(index);
  EXPECT_EQ(got_indices, want_indices) << what << ": choice indices";
  for (const auto& [index, w] : want) {
    const auto it = got.find(index);
    if (it == got.end()) continue;
    const ChoiceOutput& g = it->second;
    const std::string where = what + ", choice " + std::to_string(index);
    EXPECT_EQ(g.tokens, w.tokens) << where;
    EXPECT_EQ(g.text, w.text) << where;
    EXPECT_EQ(g.finish, w.finish) << where;
    expect_same_logprobs(w.logprobs, g.logprobs, where);
  }
}

}  // namespace dq4::test
