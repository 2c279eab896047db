// dq4's tokenizer against the Hugging Face tokenizers library itself (npm `tokenizers`, the Rust
// implementation, run by node on tests/js/tokenizer_reference.js): thousands of random strings
// per fixture tokenizer (ids without and with special tokens, decode with and without
// skip_special_tokens), random id lists for decode, streaming decode against decode, and
// variants of the fixture files that switch on the components the fixtures themselves do not
// use (Digits, Split behaviors and invert, Metaspace schemes, NFD/NFKC/NFKD, Replace with a
// regex, added-token flags, unk with and without fuse_unk, Roberta/Bert processing, Strip).

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "dq4/tokenizer/stream_decoder.h"
#include "dq4/tokenizer/tokenizer.h"
#include "sanitized_build.h"
#include "tokenizer_test_support.h"
#include "tokenizer_text_generator.h"

namespace dq4::test {
namespace {

constexpr int kTextsPerFixture = cases_to_draw(2000);
constexpr int kTextsPerVariant = cases_to_draw(400);
constexpr int kIdListsPerTokenizer = cases_to_draw(300);

struct Job {
  std::string label;
  std::string tokenizer_path;  // the file node reads
  Tokenizer tokenizer;         // dq4's, from the same text
  std::vector<std::string> texts;
  std::vector<std::vector<TokenId>> id_lists;
};

std::string stream_decode(const Tokenizer& tokenizer, const std::vector<TokenId>& ids, bool skip) {
  StreamDecoder stream(tokenizer, skip);
  std::string text;
  for (const TokenId id : ids) text += stream.step(id);
  return text + stream.finish();
}

std::string show(const std::string& text) { return nlohmann::json(text).dump(); }

// Runs the node reference on all jobs at once; fails the test (returns null) when it cannot.
nlohmann::json run_reference(const std::vector<Job>& jobs) {
  const std::string js_dir = DQ4_JS_DIR;
  if (!std::filesystem::exists(js_dir + "/node_modules/tokenizers/package.json")) {
    ADD_FAILURE() << js_dir << "/node_modules/tokenizers is missing: run scripts/install-deps.sh";
    return nullptr;
  }
  const std::string stem = testing::TempDir() + "dq4_tok_diff_" + std::to_string(getpid());
  nlohmann::json input = nlohmann::json::array();
  for (const Job& job : jobs)
    input.push_back(
        {{"tokenizer", job.tokenizer_path}, {"texts", job.texts}, {"id_lists", job.id_lists}});
  std::ofstream(stem + "_in.json") << input.dump();
  const std::string command =
      "node " + js_dir + "/tokenizer_reference.js " + stem + "_in.json " + stem + "_out.json";
  const int status = std::system(command.c_str());
  if (status != 0) {
    const bool no_node = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    ADD_FAILURE() << "'" << command << "' failed (status " << status << ")"
                  << (no_node ? ": node is not on PATH; run scripts/install-deps.sh" : "");
    return nullptr;
  }
  nlohmann::json output = nlohmann::json::parse(read_test_file(stem + "_out.json"));
  std::filesystem::remove(stem + "_in.json");
  std::filesystem::remove(stem + "_out.json");
  return output;
}

// Random ids: anywhere in the vocabulary, byte-fallback tokens, special tokens, and a few that
// the vocabulary lacks.
std::vector<std::vector<TokenId>> random_id_lists(const Tokenizer& tokenizer, uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  std::vector<TokenId> bytes, specials;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    if (const auto id = tokenizer.token_to_id(name)) bytes.push_back(*id);
  }
  const int limit = static_cast<int>(tokenizer.vocab_size());
  for (TokenId id = 0; id < limit + 300; ++id)
    if (tokenizer.is_special(id)) specials.push_back(id);
  std::vector<std::vector<TokenId>> lists;
  for (int i = 0; i < kIdListsPerTokenizer; ++i) {
    std::vector<TokenId> ids;
    for (int n = uniform(1, 16); n > 0; --n) {
      const int kind = uniform(0, 99);
      if (kind < 55 || (kind < 80 && bytes.empty()))
        ids.push_back(uniform(0, limit - 1));
      else if (kind < 80)
        ids.push_back(bytes[static_cast<size_t>(uniform(0, static_cast<int>(bytes.size()) - 1))]);
      else if (kind < 97 && !specials.empty())
        ids.push_back(
            specials[static_cast<size_t>(uniform(0, static_cast<int>(specials.size()) - 1))]);
      else
        ids.push_back(limit + 1000 + uniform(0, 10));
    }
    lists.push_back(std::move(ids));
  }
  return lists;
}

void compare(const Job& job, const nlohmann::json& reference) {
  const Tokenizer& tokenizer = job.tokenizer;
  const auto& encodings = reference.at("encodings");
  ASSERT_EQ(encodings.size(), job.texts.size());
  int failures = 0;
  auto report = [&](const std::string& what) {
    if (++failures <= 8) ADD_FAILURE() << job.label << ": " << what;
  };
  for (size_t i = 0; i < job.texts.size(); ++i) {
    const std::string& text = job.texts[i];
    const auto& want = encodings[i];
    const auto ids = want.at("ids").get<std::vector<TokenId>>();
    const auto with_special = want.at("ids_with_special_tokens").get<std::vector<TokenId>>();
    if (tokenizer.encode(text, false) != ids)
      report("encode " + show(text) + " want " + want.at("ids").dump() + " got " +
             nlohmann::json(tokenizer.encode(text, false)).dump());
    if (tokenizer.encode(text, true) != with_special)
      report("encode with special tokens " + show(text) + " want " +
             want.at("ids_with_special_tokens").dump());
    if (tokenizer.decode(ids, false) != want.at("decoded"))
      report("decode " + want.at("ids").dump() + " want " + want.at("decoded").dump() + " got " +
             show(tokenizer.decode(ids, false)));
    if (tokenizer.decode(with_special, true) != want.at("decoded_skip_special"))
      report("decode skipping specials " + want.at("ids_with_special_tokens").dump());
    for (const bool skip : {false, true})
      if (stream_decode(tokenizer, with_special, skip) != tokenizer.decode(with_special, skip))
        report("stream decode of " + show(text) + (skip ? " skipping specials" : ""));
  }
  const auto& decodings = reference.at("decodings");
  ASSERT_EQ(decodings.size(), job.id_lists.size());
  for (size_t i = 0; i < job.id_lists.size(); ++i) {
    const auto& ids = job.id_lists[i];
    const std::string list = nlohmann::json(ids).dump();
    if (tokenizer.decode(ids, false) != decodings[i].at("text"))
      report("decode " + list + " want " + decodings[i].at("text").dump() + " got " +
             show(tokenizer.decode(ids, false)));
    if (tokenizer.decode(ids, true) != decodings[i].at("text_skip_special"))
      report("decode skipping specials " + list);
    for (const bool skip : {false, true})
      if (stream_decode(tokenizer, ids, skip) != tokenizer.decode(ids, skip))
        report("stream decode of " + list + (skip ? " skipping specials" : "") + ": " +
               show(stream_decode(tokenizer, ids, skip)) + " vs " +
               show(tokenizer.decode(ids, skip)));
  }
  EXPECT_EQ(failures, 0) << job.label << ": " << failures << " mismatches (first 8 shown)";
}

// `text` is the tokenizer.json at `path`.
Job make_job(const std::string& label, const std::string& path, const std::string& text, int texts,
             uint32_t seed) {
  Job job{label, path, Tokenizer::from_json(text, path), {}, {}};
  TextGenerator generator(seed, job.tokenizer.added_tokens());
  job.texts.push_back("");
  for (int i = 0; i < texts; ++i) job.texts.push_back(generator.next());
  // A prompt far longer than any file's training-time truncation length (gpt2's is 50 tokens).
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += generator.next();
  job.texts.push_back(long_text);
  job.id_lists = random_id_lists(job.tokenizer, seed + 1);
  return job;
}

nlohmann::json fixture_document(const std::string& name) {
  return nlohmann::json::parse(read_test_file(fixture_tokenizer_dir(name) + "/tokenizer.json"));
}

nlohmann::json added_token(int id, const std::string& content, bool special, bool normalized,
                           bool lstrip, bool rstrip, bool single_word) {
  return {{"id", id},
          {"content", content},
          {"special", special},
          {"normalized", normalized},
          {"lstrip", lstrip},
          {"rstrip", rstrip},
          {"single_word", single_word}};
}

// Fixture files with other components switched on, each written where node can read it.
std::vector<std::pair<std::string, nlohmann::json>> variants() {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  const nlohmann::json split_digits = {{"type", "Digits"}, {"individual_digits", true}};

  nlohmann::json a = fixture_document("tokenizer-llama2");  // SentencePiece-style, byte fallback
  a["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "NFKC"}},
        {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}},
        {{"type", "Prepend"}, {"prepend", "\u2581"}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  a["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {split_digits,
                          {{"type", "Split"},
                           {"pattern", {{"String", "\u2581"}}},
                           {"behavior", "MergedWithNext"},
                           {"invert", false}}}}};
  a["added_tokens"].push_back(added_token(32000, "[MASK]", true, false, true, false, false));
  a["added_tokens"].push_back(added_token(32001, "<tool>", false, false, false, true, true));
  a["added_tokens"].push_back(added_token(32002, "\uFB01sh", false, true, false, false, false));
  a["post_processor"] = {{"type", "RobertaProcessing"},
                         {"sep", {"</s>", 2}},
                         {"cls", {"<s>", 1}},
                         {"trim_offsets", true},
                         {"add_prefix_space", false}};
  // (A Strip "stop" > 0 makes Hugging Face panic on an empty decode, so only "start" here.)
  a["decoder"]["decoders"][3] = {{"type", "Strip"}, {"content", " "}, {"start", 2}, {"stop", 0}};
  a["model"]["byte_fallback"] = false;  // unknown characters become <unk>, one each
  a["model"]["fuse_unk"] = false;
  out.emplace_back("llama2-nfkc-digits-roberta-unk", a);

  // Gemma's shape: SentencePiece-style BPE with byte fallback, spaces replaced by "▁" without a
  // prepended one, no pre-tokenizer, a decoder without Strip, its chat turn markers as specials.
  nlohmann::json g = fixture_document("tokenizer-llama2");
  g["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  g["pre_tokenizer"] = nullptr;
  g["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}}}}};
  g["added_tokens"].push_back(
      added_token(32000, "<start_of_turn>", true, false, false, false, false));
  g["added_tokens"].push_back(
      added_token(32001, "<end_of_turn>", true, false, false, false, false));
  out.emplace_back("gemma-shape", g);

  nlohmann::json b = fixture_document("tokenizer-mistral");
  b["normalizer"] = {{"type", "NFD"}};
  b["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", "\\p{P}+"}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          {{"type", "Metaspace"},
                           {"replacement", "\u2581"},
                           {"prepend_scheme", "always"},
                           {"split", true}}}}};
  b["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "ByteFallback"}},
                    {{"type", "Metaspace"},
                     {"replacement", "\u2581"},
                     {"prepend_scheme", "always"},
                     {"split", true}}}}};
  b["added_tokens"].push_back(added_token(32000, "<tool>", false, false, true, true, false));
  out.emplace_back("mistral-nfd-metaspace-always", b);

  nlohmann::json c = fixture_document("tokenizer-mistral");
  c["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", "\\s+"}}},
                           {"behavior", "MergedWithPrevious"},
                           {"invert", false}},
                          {{"type", "Metaspace"},
                           {"replacement", "\u2581"},
                           {"prepend_scheme", "first"},
                           {"split", true}},
                          {{"type", "Digits"}, {"individual_digits", false}}}}};
  c["decoder"] = {{"type", "Metaspace"},
                  {"replacement", "\u2581"},
                  {"prepend_scheme", "never"},
                  {"split", false}};
  c["model"]["byte_fallback"] = false;  // runs of unknown characters become one <unk>
  out.emplace_back("mistral-first-split-digits-fused-unk", c);

  nlohmann::json d = fixture_document("tokenizer-gpt2");
  d["normalizer"] = {{"type", "NFKD"}};
  d["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", "[a-z]+"}}},
                           {"behavior", "Removed"},
                           {"invert", true}},
                          {{"type", "Split"},
                           {"pattern", {{"String", "e"}}},
                           {"behavior", "Contiguous"},
                           {"invert", false}},
                          {{"type", "ByteLevel"},
                           {"add_prefix_space", true},
                           {"trim_offsets", true},
                           {"use_regex", true}}}}};
  d["added_tokens"].push_back(added_token(50257, "hello", false, true, true, true, false));
  d["added_tokens"].push_back(added_token(50258, "[SEP]", true, false, false, false, true));
  d["post_processor"] = {
      {"type", "BertProcessing"}, {"sep", {"[SEP]", 50258}}, {"cls", {"<|endoftext|>", 50256}}};
  out.emplace_back("gpt2-nfkd-invert-removed-bert", d);

  nlohmann::json e = fixture_document("tokenizer-qwen3");
  e["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "NFKC"}},
        {{"type", "Replace"}, {"pattern", {{"Regex", "[0-9]"}}}, {"content", "#"}}}}};
  e["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithNext";
  e["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = true;
  out.emplace_back("qwen3-nfkc-mergednext", e);
  return out;
}

TEST(TokenizerDifferential, MatchesHuggingFaceTokenizers) {
  std::vector<Job> jobs;
  uint32_t seed = 20261130;
  for (const std::string& name : fixture_tokenizer_names()) {
    const std::string path = fixture_tokenizer_dir(name) + "/tokenizer.json";
    jobs.push_back(make_job(name, path, read_test_file(path), kTextsPerFixture, seed += 17));
  }
  const std::string dir = testing::TempDir() + "dq4_tok_variants_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  for (const auto& [label, document] : variants()) {
    const std::string path = dir + "/" + label + ".json";
    const std::string text = document.dump();
    std::ofstream(path) << text;
    jobs.push_back(make_job(label, path, text, kTextsPerVariant, seed += 17));
  }
  const nlohmann::json reference = run_reference(jobs);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(reference.is_null());
  ASSERT_EQ(reference.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) compare(jobs[i], reference[i]);
}

}  // namespace
}  // namespace dq4::test
