// Loading a draft model, and checking that it speaks the target's tokens.

#include <filesystem>

#include "dq4/engine/speculation.h"
#include "dq4/kernels/error.h"

namespace dq4 {

namespace {

std::string shown(const std::optional<std::string>& token) {
  return token ? "'" + *token + "'" : std::string("none");
}

std::string shown(const std::optional<TokenId>& id) {
  return id ? std::to_string(*id) : std::string("none");
}

}  // namespace

void check_same_tokenizer(const Tokenizer& target, const Tokenizer& draft,
                          const std::string& draft_dir) {
  const std::string where = "draft model " + draft_dir + ": its tokenizer is not the target's: ";
  if (draft.vocab_size() != target.vocab_size())
    throw Error(where + std::to_string(draft.vocab_size()) + " tokens, the target's " +
                std::to_string(target.vocab_size()));
  // The draft sees and proposes token ids: each must stand for the same text in both.
  for (size_t i = 0; i < target.vocab_size(); ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::optional<std::string> a = draft.id_to_token(id), b = target.id_to_token(id);
    if (a != b)
      throw Error(where + "token " + std::to_string(id) + " is " + shown(a) + ", the target's " +
                  shown(b));
    if (draft.is_special(id) != target.is_special(id))
      throw Error(where + "token " + std::to_string(id) + " is special in " +
                  (draft.is_special(id) ? "the draft's" : "the target's") + " alone");
  }
  if (draft.bos_id() != target.bos_id())
    throw Error(where + "BOS " + shown(draft.bos_id()) + ", the target's " +
                shown(target.bos_id()));
  if (draft.eos_id() != target.eos_id())
    throw Error(where + "EOS " + shown(draft.eos_id()) + ", the target's " +
                shown(target.eos_id()));
}

void load_draft_model(SpeculativeConfig& config, const Tokenizer& target_tokenizer,
                      int64_t target_vocab, const ModelOptions& options, ThreadPool* pool) {
  if (config.method != SpeculativeConfig::Method::draft_model) return;
  const std::string& dir = config.model;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error("draft model " + dir + ": not a directory");
  if (!std::filesystem::exists(dir + "/tokenizer.json", ec))
    throw Error(
        "draft model " + dir +
        ": no tokenizer.json (a draft must have the target's tokenizer, and dq4 checks it)");
  check_same_tokenizer(target_tokenizer, Tokenizer::from_directory(dir), dir);
  std::shared_ptr<Model> model = Model::load(dir, options, pool);
  if (model->vocab_size() < target_vocab)
    throw Error("draft model " + dir + ": its logits cover " + std::to_string(model->vocab_size()) +
                " token ids, fewer than the target's " + std::to_string(target_vocab));
  config.draft = std::move(model);
}

}  // namespace dq4
