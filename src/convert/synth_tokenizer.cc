// A deterministic byte-level BPE for synthetic models: merges learnt by counting pairs over a
// small built-in text, as BPE training does (most frequent pair first, ties by the pair's text).

#include "synth_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "dq4/kernels/error.h"
#include "dq4/tokenizer/byte_level.h"

namespace dq4::quant {
namespace {

// Training text for the merges: plain English, so common words become single tokens.
constexpr std::string_view kCorpus =
    "Once upon a time there was a little town by the sea. Every morning the people of the town "
    "walked down to the water to watch the boats come in. The children ran along the sand and the "
    "old men sat on the wall and talked about the weather. One day a girl named Mia found a small "
    "blue shell that could sing. When she held it to her ear, it told her stories about the deep "
    "water, the fish that lived there and the ships that had gone down long ago. Mia told her "
    "mother, but her mother only smiled and said that every shell sings if you listen well. So Mia "
    "went back to the sea the next day and the day after that, and she listened to the shell until "
    "the sun went down. She learned the names of the stars, the songs of the whales and the way "
    "home when the fog came in. When she grew up, she became the captain of the biggest boat in "
    "the "
    "town, and she never got lost, because the shell was always in her pocket.\n"
    "A computer reads numbers and writes numbers. The model turns the words of a question into "
    "numbers, multiplies them with its weights, and turns the numbers it gets back into the words "
    "of an answer. It is fast when the weights are small and the memory is close, and it is slow "
    "when it has to wait for data. That is why we store the weights in four bits and read them as "
    "few times as we can. There are 7 days in a week, 12 months in a year and 365 days in most "
    "years.\n";

constexpr int64_t kMaxMerges = 2000;

// Pieces the merges are learnt within: a run of letters with the space before it, a digit, or
// one other character with the space before it (close to the families' pre-tokenizer regexes).
std::vector<std::string> corpus_words() {
  const auto is_letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  std::vector<std::string> words;
  size_t i = 0;
  while (i < kCorpus.size()) {
    size_t start = i;
    if (kCorpus[i] == ' ' && i + 1 < kCorpus.size() && kCorpus[i + 1] != ' ') ++i;
    if (is_letter(kCorpus[i])) {
      while (i < kCorpus.size() && is_letter(kCorpus[i])) ++i;
    } else {
      ++i;
    }
    words.emplace_back(kCorpus.substr(start, i - start));
  }
  return words;
}

using Symbols = std::vector<std::string>;

// Learns up to `budget` merges (pairs of byte-level strings) from the corpus.
std::vector<std::pair<std::string, std::string>> learn_merges(int64_t budget) {
  std::map<Symbols, int64_t> words;  // a word as symbols -> its count
  for (const std::string& word : corpus_words()) {
    Symbols symbols;
    for (const char c : word)
      symbols.push_back(tokenizer::byte_level_char(static_cast<uint8_t>(c)));
    ++words[symbols];
  }
  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int64_t>(merges.size()) < budget) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [symbols, count] : words)
      for (size_t j = 0; j + 1 < symbols.size(); ++j) pairs[{symbols[j], symbols[j + 1]}] += count;
    const std::pair<std::string, std::string>* best = nullptr;
    int64_t best_count = 1;  // a pair seen once is not worth a token
    for (const auto& [pair, count] : pairs)
      if (count > best_count) best = &pair, best_count = count;
    if (best == nullptr) break;
    const auto merge = *best;
    merges.push_back(merge);
    std::map<Symbols, int64_t> merged;
    for (const auto& [symbols, count] : words) {
      Symbols out;
      for (size_t j = 0; j < symbols.size(); ++j) {
        if (j + 1 < symbols.size() && symbols[j] == merge.first && symbols[j + 1] == merge.second) {
          out.push_back(merge.first + merge.second);
          ++j;
        } else {
          out.push_back(symbols[j]);
        }
      }
      merged[out] += count;
    }
    words = std::move(merged);
  }
  return merges;
}

// The family's special tokens, in id order from the top block's start.
std::vector<std::string> special_tokens(int64_t vocab_size, TokenizerStyle style) {
  if (style == TokenizerStyle::qwen) return {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  std::vector<std::string> t = {"<|begin_of_text|>",
                                "<|end_of_text|>",
                                "<|reserved_special_token_0|>",
                                "<|reserved_special_token_1|>",
                                "<|finetune_right_pad_id|>",
                                "<|reserved_special_token_2|>",
                                "<|start_header_id|>",
                                "<|end_header_id|>",
                                "<|eom_id|>",
                                "<|eot_id|>"};
  // Llama 3's 128256-token vocabulary keeps 256 special ids at the top (128000 = BOS).
  if (vocab_size >= 4096) {
    t.push_back("<|python_tag|>");
    for (int i = 3; t.size() < 256; ++i)
      t.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
  }
  return t;
}

nlohmann::ordered_json template_processing(const std::string& bos, int32_t bos_id) {
  using nlohmann::ordered_json;
  const auto special = [&](int type_id) {
    return ordered_json{{"SpecialToken", {{"id", bos}, {"type_id", type_id}}}};
  };
  const auto sequence = [](const char* id, int type_id) {
    return ordered_json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  ordered_json p;
  p["type"] = "TemplateProcessing";
  p["single"] = {special(0), sequence("A", 0)};
  p["pair"] = {special(0), sequence("A", 0), special(1), sequence("B", 1)};
  p["special_tokens"] = {{bos, {{"id", bos}, {"ids", {bos_id}}, {"tokens", {bos}}}}};
  return p;
}

// Llama 3's split regex and Qwen2's (digits one at a time).
constexpr const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwenRegex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The Llama 3 and ChatML conversation formats.
constexpr const char* kLlama3ChatTemplate =
    "{{- bos_token }}\n"
    "{%- for message in messages %}\n"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
    "message['content'] | trim + '<|eot_id|>' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    "{%- endif %}\n";
constexpr const char* kChatMlTemplate =
    "{%- for message in messages %}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "{{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n";

}  // namespace

SynthTokenizer make_synthetic_tokenizer(int64_t vocab_size, TokenizerStyle style) {
  using nlohmann::ordered_json;
  const bool llama = style == TokenizerStyle::llama3;
  const std::vector<std::string> specials = special_tokens(vocab_size, style);
  const int64_t regular = vocab_size - static_cast<int64_t>(specials.size());
  if (regular < 256)
    throw Error("synth: vocab_size " + std::to_string(vocab_size) +
                " cannot hold the 256 byte tokens and " + std::to_string(specials.size()) +
                " special tokens of the tokenizer (at least " +
                std::to_string(256 + specials.size()) + ")");

  // Built as a list: ordered_json's object lookups are linear, too slow for 150k tokens.
  std::vector<std::string> tokens;
  std::unordered_set<std::string> known;
  const auto add = [&](std::string token) {
    if (known.insert(token).second) tokens.push_back(std::move(token));
  };
  for (int b = 0; b < 256; ++b) add(tokenizer::byte_level_char(static_cast<uint8_t>(b)));
  ordered_json merges = ordered_json::array();
  for (const auto& [a, b] : learn_merges(std::min(regular - 256, kMaxMerges))) {
    merges.push_back({a, b});
    add(a + b);
  }
  // Filler tokens no text encodes to: the vocabulary spans every id of the embedding.
  for (int64_t i = 0; static_cast<int64_t>(tokens.size()) < regular; ++i)
    add("<filler_" + std::to_string(i) + ">");
  ordered_json vocab = ordered_json::object();
  auto& entries = vocab.get_ref<ordered_json::object_t&>();
  entries.reserve(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id)
    entries.std::vector<std::pair<const std::string, ordered_json>>::emplace_back(
        std::move(tokens[id]), static_cast<int32_t>(id));
  int32_t next = static_cast<int32_t>(regular);

  ordered_json added = ordered_json::array();
  for (const std::string& s : specials)
    added.push_back({{"id", next++},
                     {"content", s},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  const auto id_of = [&](const std::string& s) {
    return static_cast<int32_t>(
        regular + (std::find(specials.begin(), specials.end(), s) - specials.begin()));
  };

  SynthTokenizer t;
  ordered_json& j = t.tokenizer;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = llama ? ordered_json(nullptr) : ordered_json{{"type", "NFC"}};
  ordered_json split = {{"type", "Split"},
                        {"pattern", {{"Regex", llama ? kLlama3Regex : kQwenRegex}}},
                        {"behavior", "Isolated"},
                        {"invert", false}};
  ordered_json byte_level = {{"type", "ByteLevel"},
                             {"add_prefix_space", false},
                             {"trim_offsets", llama},
                             {"use_regex", false}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}};
  if (llama) {
    t.bos_id = id_of("<|begin_of_text|>");
    t.eos_ids = {id_of("<|end_of_text|>"), id_of("<|eom_id|>"), id_of("<|eot_id|>")};
    j["post_processor"] = template_processing("<|begin_of_text|>", t.bos_id);
  } else {
    t.eos_ids = {id_of("<|im_end|>"), id_of("<|endoftext|>")};
    j["post_processor"] = byte_level;
  }
  j["decoder"] = byte_level;
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", llama},
                {"vocab", vocab},
                {"merges", merges}};

  ordered_json& c = t.tokenizer_config;
  c["add_bos_token"] = llama;
  c["add_eos_token"] = false;
  if (llama) c["bos_token"] = "<|begin_of_text|>";  // Qwen has none
  c["eos_token"] = llama ? "<|eot_id|>" : "<|im_end|>";
  if (!llama) c["pad_token"] = "<|endoftext|>";
  c["chat_template"] = llama ? kLlama3ChatTemplate : kChatMlTemplate;
  c["clean_up_tokenization_spaces"] = false;
  c["model_max_length"] = 131072;
  c["tokenizer_class"] = llama ? "PreTrainedTokenizerFast" : "Qwen2Tokenizer";
  return t;
}

void write_synthetic_tokenizer(const SynthTokenizer& t, const std::string& dir) {
  for (const auto& [name, json] :
       {std::pair<const char*, const nlohmann::ordered_json*>{"tokenizer.json", &t.tokenizer},
        {"tokenizer_config.json", &t.tokenizer_config}}) {
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << json->dump(2, ' ', false) << "\n";
    out.close();
    if (!out) throw Error("cannot write " + path);
  }
}

}  // namespace dq4::quant
