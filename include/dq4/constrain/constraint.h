#pragma once
// Constrained decoding: what a request's output must match (a JSON schema, any JSON object, a
// regular expression, one of several strings, or a grammar in llama.cpp's GBNF), compiled once
// against a tokenizer's vocabulary into matchers that say, token by token, which tokens may come
// next. The engine applies that mask before sampling; the layer knows nothing of models or HTTP.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dq4/kernels/error.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::constrain {

// What a request asks for. The text is compiled as given; equal specs share one compiled
// constraint (the compiler's cache).
struct ConstraintSpec {
  enum class Kind { json_schema, json_object, regex, choice, grammar };
  Kind kind = Kind::json_object;
  std::string text;                  // json_schema: the schema's JSON; regex; grammar: GBNF
  std::vector<std::string> choices;  // choice: the output is exactly one of these
};

// A spec the compiler refuses (bad syntax, an unsupported schema keyword, a grammar that can
// match nothing): what() names the keyword, rule or position at fault. The server answers 400.
class ConstraintError : public Error {
 public:
  using Error::Error;
};

// One sequence's position in a constraint. Not thread-safe; one per sequence.
class Matcher {
 public:
  virtual ~Matcher() = default;
  // Writes every word of `allowed` (bit t % 64 of word t / 64 = token t, vocab_size() bits
  // rounded up to whole words): set for each token that may come next, and for the EOS ids
  // exactly when the output may end here.
  virtual void fill_mask(std::span<uint64_t> allowed) = 0;
  // Advances past `token`. Returns false, and changes nothing, when the token is not allowed.
  // An EOS id is accepted when the output may end, and ends it.
  virtual bool accept(TokenId token) = 0;
  // Undoes the last `tokens` accepted tokens (at most as many as were accepted).
  virtual void rollback(int tokens) = 0;
  virtual bool can_end() const = 0;   // the output so far is complete
  virtual bool is_ended() const = 0;  // EOS accepted, or nothing but the end may follow
  virtual int64_t vocab_size() const = 0;
};

// A compiled constraint: immutable and shared by every sequence (and thread) that uses it.
class Constraint {
 public:
  virtual ~Constraint() = default;
  virtual std::unique_ptr<Matcher> matcher() const = 0;
};

// Compiles specs for one tokenizer and the model's logits width (ids the tokenizer lacks are never
// allowed). Thread-safe: the server's connection threads compile concurrently.
class Compiler {
 public:
  Compiler(const Tokenizer& tokenizer, int64_t vocab_size, std::vector<TokenId> eos_ids,
           size_t cache_entries = 64);
  ~Compiler();
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  // Throws ConstraintError for a spec it cannot compile.
  std::shared_ptr<const Constraint> compile(const ConstraintSpec& spec);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dq4::constrain
