// tokenizer.json -> tokenizer.ggml.*: tokens by id (ids the tokenizer lacks up to vocab_size
// become "[PAD<id>]" of type UNUSED, as convert_hf_to_gguf.py pads them), token types, and for
// byte-level BPE ("gpt2") the merges and the pre-tokenizer's llama.cpp name, for
// SentencePiece-style BPE ("llama") scores of -1000 as the script's LlamaHfVocab gives every token.

#include "gguf_vocab.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "dq4/io/text_file.h"
#include "dq4/kernels/error.h"
#include "dq4/tokenizer/chat_template.h"

namespace dq4::model {
namespace {

// llama.cpp's token types (llama_token_type).
enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// Byte-level BPE pre-tokenizer regexes and the llama.cpp pre-tokenizer that applies the same one.
struct KnownPre {
  const char* regex;
  const char* name;
};
constexpr KnownPre kKnownPres[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "llama-bpe"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "qwen2"},
};

nlohmann::json read_json(const std::string& path) {
  const std::string text = io::read_text_file(path, "export-gguf");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("export-gguf: " + path + ": invalid JSON: " + e.what());
  }
}

// The llama.cpp name of a byte-level pre-tokenizer: a Split by a known regex followed by a
// ByteLevel without its own regex, or GPT-2's ByteLevel with its regex.
std::string pre_tokenizer_name(const nlohmann::json& pre, const std::string& file) {
  if (pre.is_object() && pre.value("type", "") == "ByteLevel" && pre.value("use_regex", false))
    return "gpt-2";
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers")) {
    const nlohmann::json& list = pre["pretokenizers"];
    if (list.size() == 2 && list[0].value("type", "") == "Split" &&
        list[1].value("type", "") == "ByteLevel" && !list[1].value("use_regex", true)) {
      const std::string regex = list[0]["pattern"].value("Regex", "");
      for (const KnownPre& known : kKnownPres)
        if (regex == known.regex) return known.name;
    }
  }
  throw Error("export-gguf: " + file +
              ": pre_tokenizer: not one llama.cpp names (known: GPT-2's ByteLevel, the Split "
              "regexes of Llama 3 and Qwen2 followed by ByteLevel)");
}

// bos_token / eos_token / pad_token of tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> config_token(const nlohmann::json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const nlohmann::json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return std::nullopt;
}

// Whether the post-processor puts a special token first (a BOS), as the script's SpecialVocab
// decides when tokenizer_config.json does not say.
bool post_processor_adds_bos(const nlohmann::json& post) {
  if (!post.is_object()) return false;
  if (post.value("type", "") == "Sequence" && post.contains("processors")) {
    for (const nlohmann::json& p : post["processors"])
      if (post_processor_adds_bos(p)) return true;
    return false;
  }
  return post.value("type", "") == "TemplateProcessing" && post.contains("single") &&
         !post["single"].empty() && post["single"][0].contains("SpecialToken");
}

}  // namespace

void add_gguf_vocab(const std::string& model_dir, const ModelConfig& config, GgufWriter& writer) {
  const std::string file = model_dir + "/tokenizer.json";
  if (!std::filesystem::exists(file))
    throw Error("export-gguf: " + file + " is missing (llama.cpp needs the vocabulary)");
  const nlohmann::json tok = read_json(file);
  const std::string config_file = model_dir + "/tokenizer_config.json";
  const nlohmann::json tok_config =
      std::filesystem::exists(config_file) ? read_json(config_file) : nlohmann::json::object();

  const nlohmann::json& model = tok["model"];
  if (!model.is_object() || model.value("type", "") != "BPE" || !model.contains("vocab"))
    throw Error("export-gguf: " + file + ": model: only BPE tokenizers are exported");
  const bool spm = model.value("byte_fallback", false);  // SentencePiece-style: "llama"

  const auto size = static_cast<size_t>(config.vocab_size);
  std::vector<std::string> tokens(size);
  std::vector<int32_t> types(size, kUnused);
  std::vector<bool> present(size, false);
  const auto set = [&](const std::string& text, int64_t id, int32_t type) {
    if (id < 0 || static_cast<size_t>(id) >= size)
      throw Error("export-gguf: " + file + ": token '" + text + "' has id " + std::to_string(id) +
                  ", outside config.json's vocab_size " + std::to_string(size));
    tokens[id] = text;
    types[id] = type;
    present[id] = true;
  };
  static const std::regex byte_token("<0x[0-9A-Fa-f]{2}>");
  for (const auto& [text, id] : model["vocab"].items())
    set(text, id.get<int64_t>(), spm && std::regex_match(text, byte_token) ? kByte : kNormal);
  if (tok.contains("added_tokens"))
    for (const nlohmann::json& added : tok["added_tokens"])
      set(added["content"].get<std::string>(), added["id"].get<int64_t>(),
          added.value("special", false) ? kControl : kUserDefined);
  for (size_t id = 0; id < size; ++id)
    if (!present[id]) tokens[id] = "[PAD" + std::to_string(id) + "]";

  const auto id_of = [&](const std::string& text) -> std::optional<uint32_t> {
    for (size_t id = 0; id < size; ++id)
      if (present[id] && tokens[id] == text) return static_cast<uint32_t>(id);
    return std::nullopt;
  };

  if (spm) {
    writer.add_string("tokenizer.ggml.model", "llama");
    writer.add_string("tokenizer.ggml.pre", "default");
    writer.add_strings("tokenizer.ggml.tokens", tokens);
    writer.add_f32s("tokenizer.ggml.scores", std::vector<float>(size, -1000.0f));
    writer.add_i32s("tokenizer.ggml.token_type", types);
  } else {
    writer.add_string("tokenizer.ggml.model", "gpt2");
    writer.add_string("tokenizer.ggml.pre", pre_tokenizer_name(tok["pre_tokenizer"], file));
    writer.add_strings("tokenizer.ggml.tokens", tokens);
    writer.add_i32s("tokenizer.ggml.token_type", types);
    std::vector<std::string> merges;
    for (const nlohmann::json& m : model.value("merges", nlohmann::json::array())) {
      if (m.is_string())
        merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2)
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      else
        throw Error("export-gguf: " + file + ": model.merges: expected \"a b\" or [a, b]");
    }
    writer.add_strings("tokenizer.ggml.merges", merges);
  }

  const auto special_id = [&](const char* key, int64_t fallback) -> std::optional<uint32_t> {
    if (const auto text = config_token(tok_config, key)) {
      const auto id = id_of(*text);
      if (!id)
        throw Error("export-gguf: " + config_file + ": " + key + " '" + *text +
                    "' is not in the vocabulary");
      return id;
    }
    if (fallback >= 0) return static_cast<uint32_t>(fallback);
    return std::nullopt;
  };
  const auto bos = special_id("bos_token", config.bos_token_id);
  const auto eos =
      special_id("eos_token", config.eos_token_ids.empty() ? -1 : config.eos_token_ids[0]);
  const auto unk = spm && model.contains("unk_token") && model["unk_token"].is_string()
                       ? id_of(model["unk_token"].get<std::string>())
                       : std::nullopt;
  const auto pad = special_id("pad_token", -1);
  if (bos) writer.add_u32("tokenizer.ggml.bos_token_id", *bos);
  if (eos) writer.add_u32("tokenizer.ggml.eos_token_id", *eos);
  if (unk) writer.add_u32("tokenizer.ggml.unknown_token_id", *unk);
  if (pad) writer.add_u32("tokenizer.ggml.padding_token_id", *pad);
  const bool add_bos =
      tok_config.contains("add_bos_token") && tok_config["add_bos_token"].is_boolean()
          ? tok_config["add_bos_token"].get<bool>()
          : post_processor_adds_bos(tok["post_processor"]);
  writer.add_bool("tokenizer.ggml.add_bos_token", add_bos);

  if (const std::optional<std::string> chat_template = ChatTemplate::find_source(model_dir))
    writer.add_string("tokenizer.chat_template", *chat_template);
}

}  // namespace dq4::model
