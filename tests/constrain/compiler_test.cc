// The Compiler: every kind compiles to a working constraint, equal specs share one compiled
// constraint (the cache, also under concurrent compiles), failures are errors and never cached.

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "dq4/constrain/constraint.h"
#include "tokenizer_test_support.h"

namespace dq4::test {
namespace {

using constrain::Compiler;
using constrain::ConstraintError;
using constrain::ConstraintSpec;
using Kind = ConstraintSpec::Kind;

// Accepts `text`'s tokens one by one and then EOS.
bool accepts(const constrain::Constraint& constraint, const Tokenizer& tokenizer,
             const std::string& text) {
  auto matcher = constraint.matcher();
  for (const TokenId id : tokenizer.encode(text))
    if (!matcher->accept(id)) return false;
  return matcher->accept(*tokenizer.eos_id());
}

TEST(Compiler, EveryKindCompilesForTheVocabulary) {
  const Tokenizer& tokenizer = fixture_tokenizer("tokenizer-llama3");
  Compiler compiler(tokenizer, 128256, {*tokenizer.eos_id()});
  const auto grammar = compiler.compile({Kind::grammar, R"(root ::= "yes" | "no")", {}});
  EXPECT_TRUE(accepts(*grammar, tokenizer, "yes"));
  EXPECT_FALSE(accepts(*grammar, tokenizer, "maybe"));
  const auto choice = compiler.compile({Kind::choice, "", {"red", "green"}});
  EXPECT_TRUE(accepts(*choice, tokenizer, "green"));
  EXPECT_FALSE(accepts(*choice, tokenizer, "blue"));
  const auto regex = compiler.compile({Kind::regex, "[0-9]{3}-[a-z]+", {}});
  EXPECT_TRUE(accepts(*regex, tokenizer, "123-abc"));
  EXPECT_FALSE(accepts(*regex, tokenizer, "12-abc"));
  const auto object = compiler.compile({Kind::json_object, "", {}});
  EXPECT_TRUE(accepts(*object, tokenizer, R"({"a": [1, 2]})"));
  EXPECT_FALSE(accepts(*object, tokenizer, "[1]"));
  const auto schema =
      compiler.compile({Kind::json_schema,
                        R"({"type": "object", "properties": {"n": {"type": "integer"}},
         "required": ["n"], "additionalProperties": false})",
                        {}});
  EXPECT_TRUE(accepts(*schema, tokenizer, R"({"n": 42})"));
  EXPECT_FALSE(accepts(*schema, tokenizer, R"({"n": "x"})"));
}

TEST(Compiler, EqualSpecsShareOneConstraint) {
  const Tokenizer& tokenizer = fixture_tokenizer("tokenizer-llama3");
  Compiler compiler(tokenizer, 128256, {*tokenizer.eos_id()}, 2);
  const ConstraintSpec a{Kind::grammar, R"(root ::= "a")", {}};
  const ConstraintSpec b{Kind::grammar, R"(root ::= "b")", {}};
  const ConstraintSpec c{Kind::choice, "", {"a"}};
  const auto first = compiler.compile(a);
  EXPECT_EQ(compiler.compile(a), first);
  // Choices are keyed by the list, not joined text: {"ab"} and {"a", "b"} differ.
  EXPECT_NE(compiler.compile({Kind::choice, "", {"ab"}}),
            compiler.compile({Kind::choice, "", {"a", "b"}}));
  // Two entries: a is evicted by b and c, and then compiled anew.
  compiler.compile(b);
  compiler.compile(c);
  EXPECT_NE(compiler.compile(a), first);

  // Threads asking at once get one constraint.
  const ConstraintSpec d{Kind::grammar, R"(root ::= [a-z]{1,100})", {}};
  std::vector<std::shared_ptr<const constrain::Constraint>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) threads.emplace_back([&] { result = compiler.compile(d); });
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, results[0]);
}

TEST(Compiler, FailuresAreErrorsEachTime) {
  const Tokenizer& tokenizer = fixture_tokenizer("tokenizer-llama3");
  Compiler compiler(tokenizer, 128256, {*tokenizer.eos_id()});
  const ConstraintSpec bad{Kind::grammar, "root ::= undefined-rule", {}};
  EXPECT_THROW(compiler.compile(bad), ConstraintError);
  EXPECT_THROW(compiler.compile(bad), ConstraintError);
  EXPECT_THROW(compiler.compile({Kind::json_schema, "{not json", {}}), ConstraintError);
  EXPECT_THROW(Compiler(tokenizer, 128256, {128256}), ConstraintError);  // EOS outside
}

}  // namespace
}  // namespace dq4::test
