// The Compiler: every kind becomes a GBNF grammar, compiled to bytes for the vocabulary; compiled
// constraints are kept in an LRU cache by kind and text. A spec is compiled once even when several
// threads ask for it together (the later ones wait for the first).

#include <future>
#include <list>
#include <mutex>
#include <unordered_map>

#include "byte_grammar.h"
#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"
#include "gbnf_parser.h"
#include "grammar_constraint.h"
#include "vocabulary.h"

namespace dq4::constrain {
namespace {

using Result = std::shared_future<std::shared_ptr<const Constraint>>;

std::string cache_key(const ConstraintSpec& spec) {
  std::string key(1, static_cast<char>('0' + static_cast<int>(spec.kind)));
  if (spec.kind == ConstraintSpec::Kind::choice) {
    for (const std::string& choice : spec.choices)
      key += std::to_string(choice.size()) + ":" + choice;
  } else {
    key += spec.text;
  }
  return key;
}

std::string grammar_text(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::grammar:
      return spec.text;
    case ConstraintSpec::Kind::json_schema:
      return json_schema_to_gbnf(spec.text);
    case ConstraintSpec::Kind::json_object:
      return json_object_gbnf();
    case ConstraintSpec::Kind::regex:
      return regex_to_gbnf(spec.text);
    case ConstraintSpec::Kind::choice:
      return choice_to_gbnf(spec.choices);
  }
  throw ConstraintError("constraint: unknown kind");
}

}  // namespace

struct Compiler::Impl {
  std::shared_ptr<const Vocabulary> vocabulary;
  size_t capacity;
  std::mutex mutex;
  std::list<std::string> order;  // most recently used first
  struct Entry {
    Result result;
    std::list<std::string>::iterator position;
  };
  std::unordered_map<std::string, Entry> entries;

  std::shared_ptr<const Constraint> build(const ConstraintSpec& spec) const {
    const std::string text = grammar_text(spec);
    auto grammar = std::make_shared<ByteGrammar>(compile_grammar(parse_gbnf(text), text));
    return std::make_shared<GrammarConstraint>(std::move(grammar), vocabulary);
  }
};

Compiler::Compiler(const Tokenizer& tokenizer, int64_t vocab_size, std::vector<TokenId> eos_ids,
                   size_t cache_entries)
    : impl_(std::make_unique<Impl>()) {
  impl_->vocabulary = std::make_shared<Vocabulary>(tokenizer, vocab_size, std::move(eos_ids));
  impl_->capacity = cache_entries;
}

Compiler::~Compiler() = default;

std::shared_ptr<const Constraint> Compiler::compile(const ConstraintSpec& spec) {
  if (impl_->capacity == 0) return impl_->build(spec);
  const std::string key = cache_key(spec);
  std::promise<std::shared_ptr<const Constraint>> promise;
  Result result;
  bool compile_here = false;
  {
    std::lock_guard lock(impl_->mutex);
    const auto found = impl_->entries.find(key);
    if (found != impl_->entries.end()) {
      impl_->order.splice(impl_->order.begin(), impl_->order, found->second.position);
      result = found->second.result;
    } else {
      result = promise.get_future().share();
      impl_->order.push_front(key);
      impl_->entries.emplace(key, Impl::Entry{result, impl_->order.begin()});
      if (impl_->entries.size() > impl_->capacity) {
        impl_->entries.erase(impl_->order.back());
        impl_->order.pop_back();
      }
      compile_here = true;
    }
  }
  if (compile_here) {
    try {
      promise.set_value(impl_->build(spec));
    } catch (...) {
      // Those waiting get the error; a spec that fails is not kept.
      promise.set_exception(std::current_exception());
      std::lock_guard lock(impl_->mutex);
      const auto entry = impl_->entries.find(key);
      if (entry != impl_->entries.end()) {
        impl_->order.erase(entry->second.position);
        impl_->entries.erase(entry);
      }
    }
  }
  return result.get();
}

}  // namespace dq4::constrain
