// Token masks on real vocabularies (byte-level BPE: Llama 3, Qwen3; SentencePiece with byte
// fallback: Llama 2) against the brute force of constrain_test_support, along texts the grammars
// accept: exact masks, EOS exactly when the grammar may end, rollback, special tokens.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <thread>

#include "constrain_test_support.h"
#include "grammar_constraint.h"
#include "tokenizer_test_support.h"

namespace dq4::test {
namespace {

using constrain::ByteGrammar;
using constrain::GrammarConstraint;
using constrain::Vocabulary;

bool allowed(const std::vector<uint64_t>& mask, TokenId id) {
  return (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
}

// A fixture tokenizer's vocabulary (a model width a little larger than the tokenizer's, as real
// models pad it), built once per process.
struct TestVocabulary {
  const Tokenizer* tokenizer;
  int64_t size;
  std::vector<TokenId> eos;
  std::shared_ptr<const Vocabulary> vocabulary;
};
const TestVocabulary& test_vocabulary(const std::string& name) {
  static std::map<std::string, TestVocabulary> cache;
  auto found = cache.find(name);
  if (found == cache.end()) {
    const Tokenizer& tokenizer = fixture_tokenizer(name);
    const auto size = static_cast<int64_t>(tokenizer.vocab_size()) + 40;
    // Llama 2's fixture has no tokenizer_config.json.
    std::vector<TokenId> eos{tokenizer.eos_id() ? *tokenizer.eos_id()
                                                : *tokenizer.token_to_id("</s>")};
    auto vocabulary = std::make_shared<Vocabulary>(tokenizer, size, eos);
    found = cache.emplace(name, TestVocabulary{&tokenizer, size, eos, vocabulary}).first;
  }
  return found->second;
}

std::unique_ptr<constrain::Matcher> matcher_for(const TestVocabulary& v,
                                                std::shared_ptr<const ByteGrammar> grammar) {
  return GrammarConstraint(std::move(grammar), v.vocabulary).matcher();
}

std::vector<uint64_t> mask_of(constrain::Matcher& matcher) {
  std::vector<uint64_t> mask(static_cast<size_t>((matcher.vocab_size() + 63) / 64));
  matcher.fill_mask(mask);
  return mask;
}

// Steps through the tokens of each sample text, checking every token against the mask and, at a
// few positions, the whole mask against the brute force.
void check_masks(const std::string& tokenizer_name, const std::vector<std::string>& grammars,
                 size_t masks_per_text) {
  const TestVocabulary& v = test_vocabulary(tokenizer_name);
  for (const SampleGrammar& sample : sample_grammars()) {
    if (std::find(grammars.begin(), grammars.end(), sample.name) == grammars.end()) continue;
    auto grammar = std::make_shared<ByteGrammar>(grammar_of(sample.gbnf));
    BruteForceAutomaton brute(*grammar);
    for (const std::string& text : sample.texts) {
      SCOPED_TRACE(tokenizer_name + ", grammar " + sample.name + ": " + text);
      const std::vector<TokenId> ids = v.tokenizer->encode(text);
      auto matcher = matcher_for(v, grammar);
      int brute_state = brute.initial();
      // The whole mask at `masks_per_text` positions spread inside the text (never the start).
      const size_t stride = std::max<size_t>(1, ids.size() / (masks_per_text + 1));
      for (size_t i = 0; i <= ids.size(); ++i) {
        const std::vector<uint64_t> mask = mask_of(*matcher);
        if (i > 0 && i % stride == 0 && i / stride <= masks_per_text) {
          EXPECT_EQ(mask, brute_force_mask(brute, brute_state, *v.tokenizer, v.size, v.eos))
              << "after " << i << " tokens";
        }
        EXPECT_EQ(allowed(mask, v.eos[0]), brute.can_end(brute_state));
        EXPECT_EQ(matcher->can_end(), brute.can_end(brute_state));
        if (i == ids.size()) break;
        ASSERT_TRUE(allowed(mask, ids[i])) << "token " << i << " (" << ids[i] << ")";
        ASSERT_TRUE(matcher->accept(ids[i]));
        brute_state = brute.run(brute_state, v.tokenizer->token_bytes(ids[i]).value());
        ASSERT_GE(brute_state, 0);
      }
      EXPECT_TRUE(matcher->can_end());
      EXPECT_TRUE(matcher->accept(v.eos[0]));
      EXPECT_TRUE(matcher->is_ended());
      EXPECT_FALSE(matcher->accept(ids[0]));
    }
  }
}

TEST(Mask, EqualsBruteForceOnLlama3) {
  check_masks("tokenizer-llama3", {"json", "schema", "regex"}, 1);
}
TEST(Mask, EqualsBruteForceOnQwen3) { check_masks("tokenizer-qwen3", {"json", "regex"}, 1); }
// SentencePiece encodes a text with a leading space: the JSON grammar allows one.
TEST(Mask, EqualsBruteForceOnLlama2) { check_masks("tokenizer-llama2", {"json"}, 3); }

// Inside a string most of the vocabulary is allowed and whole subtrees of the trie are taken at
// once: with all characters, with some non-ASCII ones, with ASCII only.
TEST(Mask, InsideStringsEqualsBruteForce) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {sample_grammars()[0].gbnf, "{\"key\": \"caf"},
      // (" "? for SentencePiece, which encodes the prefix with a leading space)
      {R"(root ::= " "? "\"" [a-z é]* "\"")", "\"caf"},
      {R"(root ::= " "? "\"" [ -~]* "\"")", "\"abc"},
  };
  for (const std::string name : {"tokenizer-llama3", "tokenizer-llama2"}) {
    const TestVocabulary& v = test_vocabulary(name);
    for (const auto& [gbnf, prefix] : cases) {
      SCOPED_TRACE(name + ": " + gbnf + " after " + prefix);
      auto grammar = std::make_shared<ByteGrammar>(grammar_of(gbnf));
      auto matcher = matcher_for(v, grammar);
      BruteForceAutomaton brute(*grammar);
      int state = brute.initial();
      for (const TokenId id : v.tokenizer->encode(prefix)) {
        ASSERT_TRUE(matcher->accept(id)) << id;
        state = brute.run(state, v.tokenizer->token_bytes(id).value());
      }
      ASSERT_GE(state, 0);
      EXPECT_EQ(mask_of(*matcher), brute_force_mask(brute, state, *v.tokenizer, v.size, v.eos));
    }
  }
}

TEST(Mask, RollbackRestoresEarlierMasksExactly) {
  const TestVocabulary& v = test_vocabulary("tokenizer-llama2");
  const SampleGrammar& json = sample_grammars()[0];
  auto grammar = std::make_shared<ByteGrammar>(grammar_of(json.gbnf));
  auto matcher = matcher_for(v, grammar);
  const std::vector<TokenId> ids = v.tokenizer->encode(json.texts[0]);
  std::vector<std::vector<uint64_t>> masks;
  for (size_t i = 0; i < 12; ++i) {
    masks.push_back(mask_of(*matcher));
    ASSERT_TRUE(matcher->accept(ids[i]));
  }
  matcher->rollback(5);
  EXPECT_EQ(mask_of(*matcher), masks[7]);
  matcher->rollback(7);
  EXPECT_EQ(mask_of(*matcher), masks[0]);
  EXPECT_THROW(matcher->rollback(1), Error);
  // A refused token changes nothing.
  EXPECT_FALSE(matcher->accept(*v.tokenizer->token_to_id("}")));
  EXPECT_EQ(mask_of(*matcher), masks[0]);
}

// Matchers of one constraint share its automaton and masks, not their positions, also when used
// from several threads at once.
TEST(Mask, MatchersOfOneConstraintAreIndependent) {
  const TestVocabulary& v = test_vocabulary("tokenizer-llama2");
  const SampleGrammar& json = sample_grammars()[0];
  const GrammarConstraint constraint(std::make_shared<ByteGrammar>(grammar_of(json.gbnf)),
                                     v.vocabulary);
  const std::vector<TokenId> ids = v.tokenizer->encode(json.texts[0]);
  auto first = constraint.matcher();
  const std::vector<uint64_t> initial = mask_of(*first);
  auto second = constraint.matcher();
  for (size_t i = 0; i < 5; ++i) ASSERT_TRUE(second->accept(ids[i]));
  EXPECT_EQ(mask_of(*first), initial);
  EXPECT_NE(mask_of(*second), initial);

  std::vector<std::thread> threads;
  std::vector<int> accepted(4, 0);
  for (int& count : accepted) {
    threads.emplace_back([&] {
      auto matcher = constraint.matcher();
      std::vector<uint64_t> mask((v.size + 63) / 64);
      for (const TokenId id : ids) {
        matcher->fill_mask(mask);
        if (!((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) || !matcher->accept(id)) break;
        ++count;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const int count : accepted) EXPECT_EQ(count, static_cast<int>(ids.size()));
}

TEST(Mask, SpecialTokensAndIdsBeyondTheTokenizerAreNeverAllowed) {
  const TestVocabulary& v = test_vocabulary("tokenizer-llama3");
  auto grammar = std::make_shared<ByteGrammar>(grammar_of("root ::= .*"));
  auto matcher = matcher_for(v, grammar);
  const std::vector<uint64_t> mask = mask_of(*matcher);
  const TokenId eot = *v.tokenizer->token_to_id("<|eot_id|>");  // the EOS
  const TokenId header = *v.tokenizer->token_to_id("<|start_header_id|>");
  EXPECT_TRUE(allowed(mask, eot));
  EXPECT_FALSE(allowed(mask, header));
  EXPECT_FALSE(matcher->accept(header));
  EXPECT_TRUE(allowed(mask, 9906));  // "Hello"
  for (auto id = static_cast<TokenId>(v.tokenizer->vocab_size()); id < v.size; ++id)
    EXPECT_FALSE(allowed(mask, id)) << id;
  EXPECT_FALSE(matcher->accept(static_cast<TokenId>(v.size)));
}

TEST(Mask, EosOnlyWhenTheGrammarMayEnd) {
  const TestVocabulary& v = test_vocabulary("tokenizer-llama2");
  auto matcher = matcher_for(v, std::make_shared<ByteGrammar>(grammar_of(R"(root ::= "ab" "c"?)")));
  const TokenId eos = v.eos[0];
  EXPECT_FALSE(allowed(mask_of(*matcher), eos));
  EXPECT_FALSE(matcher->accept(eos));
  ASSERT_TRUE(matcher->accept(*v.tokenizer->token_to_id("ab")));
  EXPECT_TRUE(allowed(mask_of(*matcher), eos));
  EXPECT_TRUE(matcher->can_end());
  EXPECT_FALSE(matcher->is_ended());
  ASSERT_TRUE(matcher->accept(*v.tokenizer->token_to_id("c")));
  EXPECT_TRUE(matcher->is_ended());  // only the end may follow
  const std::vector<uint64_t> mask = mask_of(*matcher);
  for (size_t w = 0; w < mask.size(); ++w)
    EXPECT_EQ(mask[w], w == static_cast<size_t>(eos) / 64 ? uint64_t{1} << (eos % 64) : 0u);
  EXPECT_TRUE(matcher->accept(eos));
  EXPECT_EQ(mask_of(*matcher), std::vector<uint64_t>(mask.size(), 0));
}

TEST(Mask, TokensSplittingACharacterFollowTheBytes) {
  // Llama 2 spells 東 with its three byte-fallback tokens.
  const TestVocabulary& v = test_vocabulary("tokenizer-llama2");
  auto matcher = matcher_for(v, std::make_shared<ByteGrammar>(grammar_of(R"(root ::= [東京])")));
  const TokenId e6 = *v.tokenizer->token_to_id("<0xE6>");
  const TokenId e4 = *v.tokenizer->token_to_id("<0xE4>");
  const std::vector<uint64_t> mask = mask_of(*matcher);
  EXPECT_TRUE(allowed(mask, e6));  // 東 is E6 9D B1
  EXPECT_TRUE(allowed(mask, e4));  // 京 is E4 BA AC
  EXPECT_FALSE(allowed(mask, *v.tokenizer->token_to_id("<0xE5>")));
  ASSERT_TRUE(matcher->accept(e6));
  EXPECT_TRUE(allowed(mask_of(*matcher), *v.tokenizer->token_to_id("<0x9D>")));
  EXPECT_FALSE(matcher->accept(*v.tokenizer->token_to_id("<0xBA>")));
}

}  // namespace
}  // namespace dq4::test
