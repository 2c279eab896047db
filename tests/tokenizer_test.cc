// The tokenizer against the reference tokenizations shipped with the fixtures (Hugging Face
// tokenizers 0.23.2 on the same tokenizer.json), plus tokenizer_config.json, errors and UTF-8.

#include "dq4/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dq4/kernels/error.h"
#include "dq4/tokenizer/stream_decoder.h"
#include "expect_error.h"
#include "tokenizer_test_support.h"

namespace dq4::test {
namespace {

class FixtureTokenizer : public testing::TestWithParam<std::string> {};

TEST_P(FixtureTokenizer, MatchesReferenceTokenizations) {
  const std::string dir = fixture_tokenizer_dir(GetParam());
  const Tokenizer& tokenizer = fixture_tokenizer(GetParam());
  const auto reference =
      nlohmann::json::parse(read_test_file(dir + "/reference_tokenizations.json"));
  const auto& cases = reference.at("cases");
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    SCOPED_TRACE("case " + std::to_string(c.at("id").get<int>()) + ": " + text);
    const auto ids = c.at("ids").get<std::vector<TokenId>>();
    EXPECT_EQ(tokenizer.encode(text, false), ids);
    EXPECT_EQ(tokenizer.encode(text, true),
              c.at("ids_with_special_tokens").get<std::vector<TokenId>>());
    EXPECT_EQ(tokenizer.decode(ids, false), c.at("decoded").get<std::string>());
  }
}

TEST_P(FixtureTokenizer, StreamingDecodeEqualsDecode) {
  const std::string dir = fixture_tokenizer_dir(GetParam());
  const Tokenizer& tokenizer = fixture_tokenizer(GetParam());
  const auto reference =
      nlohmann::json::parse(read_test_file(dir + "/reference_tokenizations.json"));
  for (const auto& c : reference.at("cases")) {
    const auto ids = c.at("ids_with_special_tokens").get<std::vector<TokenId>>();
    for (const bool skip : {false, true}) {
      StreamDecoder stream(tokenizer, skip);
      std::string streamed;
      for (const TokenId id : ids) streamed += stream.step(id);
      streamed += stream.finish();
      EXPECT_EQ(streamed, tokenizer.decode(ids, skip)) << c.at("text") << " skip=" << skip;
    }
  }
}

TEST_P(FixtureTokenizer, StreamingDecodeAfterAContextReturnsOnlyTheContinuation) {
  const std::string dir = fixture_tokenizer_dir(GetParam());
  const Tokenizer& tokenizer = fixture_tokenizer(GetParam());
  const auto reference =
      nlohmann::json::parse(read_test_file(dir + "/reference_tokenizations.json"));
  for (const auto& c : reference.at("cases")) {
    const auto ids = c.at("ids_with_special_tokens").get<std::vector<TokenId>>();
    for (size_t split = 1; split < ids.size(); ++split) {
      const std::span<const TokenId> context = std::span(ids).first(split);
      const std::string before = tokenizer.decode(context, true), all = tokenizer.decode(ids, true);
      // Where a later id changes the context's text (completes a character it began) there is
      // no continuation to compare with.
      if (!all.starts_with(before)) continue;
      StreamDecoder stream(tokenizer, true, context);
      std::string streamed;
      for (size_t i = split; i < ids.size(); ++i) streamed += stream.step(ids[i]);
      streamed += stream.finish();
      EXPECT_EQ(streamed, all.substr(before.size())) << c.at("text") << " split " << split;
    }
  }
}

TEST(StreamDecoder, AContextEndingInAnInvalidByteGroupNeverStallsTheStream) {
  const Tokenizer& tokenizer = fixture_tokenizer("tokenizer-llama2");
  const auto id = [&](const char* token) { return *tokenizer.token_to_id(token); };
  // "!Fk" then a stray continuation byte: the group is invalid, five U+FFFD once <0x64> joins.
  const std::vector<TokenId> context = {id("<0x21>"), id("<0x46>"), id("<0x6B>"), id("<0x90>")};
  const std::vector<TokenId> generated = {id("<0x64>"), id("▁the"), id("▁cat")};
  std::vector<TokenId> all = context;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string before = tokenizer.decode(context, true), after = tokenizer.decode(all, true);
  ASSERT_TRUE(after.starts_with(before));
  StreamDecoder stream(tokenizer, true, context);
  std::string streamed;
  for (TokenId t : generated) streamed += stream.step(t);
  EXPECT_EQ(streamed, after.substr(before.size()));
  EXPECT_EQ(streamed + stream.finish(), "\xEF\xBF\xBD the cat");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureTokenizer, testing::ValuesIn(fixture_tokenizer_names()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(Tokenizer, ReadsBosAndEosFromTokenizerConfig) {
  const Tokenizer& llama3 = fixture_tokenizer("tokenizer-llama3");
  EXPECT_EQ(llama3.bos_id(), 128000);
  EXPECT_EQ(llama3.eos_id(), 128009);  // <|eot_id|> in the Instruct config
  const Tokenizer& gpt2 = fixture_tokenizer("tokenizer-gpt2");
  EXPECT_EQ(gpt2.eos_id(), 50256);
  EXPECT_EQ(fixture_tokenizer("tokenizer-llama2").token_to_id("</s>"), 2);
}

TEST(Tokenizer, VocabularyLookups) {
  const Tokenizer& llama3 = fixture_tokenizer("tokenizer-llama3");
  EXPECT_EQ(llama3.vocab_size(), 128256u);
  EXPECT_EQ(llama3.id_to_token(9906), "Hello");
  EXPECT_EQ(llama3.token_to_id("<|eot_id|>"), 128009);
  EXPECT_TRUE(llama3.is_special(128009));
  EXPECT_FALSE(llama3.is_special(9906));
  EXPECT_EQ(llama3.id_to_token(-1), std::nullopt);
  EXPECT_EQ(llama3.id_to_token(1 << 30), std::nullopt);
  const std::vector<std::string> added = llama3.added_tokens();
  ASSERT_EQ(added.size(), 256u);
  EXPECT_EQ(added[0], "<|begin_of_text|>");
  // Ids the vocabulary lacks are left out of decode, as Hugging Face does.
  EXPECT_EQ(llama3.decode(std::vector<TokenId>{9906, 999999, -5, 1917}), "Hello world");
}

TEST(Tokenizer, TokenBytesAreWhatEachTokenAddsToTheText) {
  const Tokenizer& llama3 = fixture_tokenizer("tokenizer-llama3");
  EXPECT_EQ(llama3.token_bytes(9906), "Hello");
  EXPECT_EQ(llama3.token_bytes(1917), " world");
  EXPECT_EQ(llama3.token_bytes(*llama3.token_to_id("\xC3\x83")), "\xC3");  // half of a character
  EXPECT_EQ(llama3.token_bytes(128009), "<|eot_id|>");
  EXPECT_EQ(llama3.token_bytes(1 << 30), std::nullopt);
  const Tokenizer& llama2 = fixture_tokenizer("tokenizer-llama2");
  EXPECT_EQ(llama2.token_bytes(*llama2.token_to_id("\xE2\x96\x81the")), " the");
  EXPECT_EQ(llama2.token_bytes(*llama2.token_to_id("<0x0A>")), "\n");
  EXPECT_EQ(llama2.token_bytes(*llama2.token_to_id("<0xE2>")), "\xE2");
  // Byte-level tokens of a valid text add up to its decoding.
  const auto reference = nlohmann::json::parse(
      read_test_file(fixture_tokenizer_dir("tokenizer-llama3") + "/reference_tokenizations.json"));
  for (const auto& c : reference.at("cases")) {
    const auto ids = c.at("ids").get<std::vector<TokenId>>();
    std::string joined;
    for (const TokenId id : ids) joined += llama3.token_bytes(id).value();
    EXPECT_EQ(joined, llama3.decode(ids)) << c.at("text");
  }
}

TEST(Tokenizer, SkipSpecialTokensLeavesOutSpecialTokens) {
  const Tokenizer& llama3 = fixture_tokenizer("tokenizer-llama3");
  const std::vector<TokenId> ids =
      llama3.encode("<|start_header_id|>user<|end_header_id|>Hi", true);
  EXPECT_EQ(ids.front(), 128000);
  EXPECT_EQ(llama3.decode(ids, false),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>Hi");
  EXPECT_EQ(llama3.decode(ids, true), "userHi");
}

TEST(Tokenizer, PromptsAreEncodedWhole) {
  // gpt2's tokenizer.json holds "truncation": {"max_length": 50, ...}, a training-time setting
  // that transformers and vLLM do not apply to a prompt: all 80 words are encoded.
  const Tokenizer& gpt2 = fixture_tokenizer("tokenizer-gpt2");
  std::string text;
  for (int i = 0; i < 80; ++i) text += "word ";
  const std::vector<TokenId> ids = gpt2.encode(text, true);
  EXPECT_GT(ids.size(), 80u);
  EXPECT_EQ(gpt2.decode(ids), text);

  // Whatever the blocks hold, even values dq4 would not know how to apply, nothing is cut.
  nlohmann::json document = nlohmann::json::parse(
      read_test_file(fixture_tokenizer_dir("tokenizer-gpt2") + "/tokenizer.json"));
  document["truncation"] = {{"max_length", 3}, {"direction", "Middle"}, {"strategy", "Other"}};
  document["padding"] = {{"strategy", {{"Fixed", 512}}}, {"pad_id", 0}};
  const Tokenizer changed = Tokenizer::from_json(document.dump(), "gpt2 variant");
  EXPECT_EQ(changed.encode(text, true), ids);
}

TEST(Tokenizer, InvalidUtf8IsAClearError) {
  const Tokenizer& llama3 = fixture_tokenizer("tokenizer-llama3");
  for (const std::string& bad :
       {std::string("abc\xff"), std::string("\xc3"), std::string("x\xed\xa0\x80y"),
        std::string("\xf4\x90\x80\x80"), std::string("\xc0\xaf")}) {
    expect_error([&] { llama3.encode(bad); }, {"not valid UTF-8", "byte offset"});
  }
  EXPECT_EQ(llama3.encode(std::string("a\0b", 3)).size(), 3u);  // NUL is valid UTF-8
}

TEST(Tokenizer, MissingDirectoryIsAClearError) {
  expect_error([] { Tokenizer::from_directory("/nonexistent-dq4-dir"); },
               {"/nonexistent-dq4-dir/tokenizer.json"});
}

// A small valid tokenizer.json to break one field at a time.
nlohmann::json small_tokenizer() {
  return nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                      "use_regex": true},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false,
              "byte_fallback": false, "vocab": {"<s>": 0, "a": 1, "b": 2, "ab": 3, "Ġ": 4},
              "merges": ["a b"]}
  })");
}

Tokenizer load(const nlohmann::json& document) {
  return Tokenizer::from_json(document.dump(), "test/tokenizer.json");
}

TEST(Tokenizer, SmallTokenizerWorks) {
  const Tokenizer t = load(small_tokenizer());
  EXPECT_EQ(t.encode("ab a<s>b", true), (std::vector<TokenId>{0, 3, 4, 1, 0, 2}));
  EXPECT_EQ(t.decode(std::vector<TokenId>{0, 3, 4, 1}, true), "ab a");
}

TEST(Tokenizer, MalformedFilesAreClearErrors) {
  struct Case {
    const char* pointer;  // JSON pointer of the field to replace
    nlohmann::json value;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"/model", nullptr, {"test/tokenizer.json", "model", "missing"}},
      {"/model/type", "WordPiece", {"model", "unsupported model type \"WordPiece\""}},
      {"/model/vocab", nlohmann::json::array(), {"model.vocab", "expected an object"}},
      {"/model/vocab/a", "one", {"model.vocab", "\"a\""}},
      {"/model/merges/0", "a", {"model.merges[0]", "exactly one space"}},
      {"/model/merges/0", "a c", {"model.merges[0]", "\"c\" is not in the vocabulary"}},
      {"/model/merges", 5, {"model.merges", "expected a JSON array"}},
      {"/model/dropout", 0.1, {"model.dropout", "not supported"}},
      {"/normalizer/type",
       "Lowercase",
       {"normalizer", "unsupported normalizer type \"Lowercase\""}},
      {"/normalizer",
       nlohmann::json{{"type", "Replace"}, {"pattern", {{"Regex", "("}}}, {"content", ""}},
       {"normalizer.pattern.Regex", "bad regular expression"}},
      {"/pre_tokenizer",
       nlohmann::json{{"type", "Sequence"}, {"pretokenizers", {{{"type", "Whitespace"}}}}},
       {"pre_tokenizer.pretokenizers[0]", "unsupported pre-tokenizer type \"Whitespace\""}},
      {"/pre_tokenizer",
       nlohmann::json{{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}},
       {"pre_tokenizer.behavior", "Sideways"}},
      {"/pre_tokenizer",
       nlohmann::json{{"type", "Metaspace"}, {"replacement", "ab"}},
       {"pre_tokenizer.replacement", "exactly one character"}},
      {"/decoder/type", "WordPiece", {"decoder", "unsupported decoder type \"WordPiece\""}},
      {"/post_processor/type", "Mystery", {"post_processor", "unsupported post-processor type"}},
      {"/post_processor/single/0/SpecialToken/id",
       "</s>",
       {"post_processor.single[0]", "\"</s>\""}},
      {"/added_tokens/0/id", -3, {"added_tokens[0].id"}},
      {"/added_tokens/0/content", 7, {"added_tokens[0].content", "expected a string"}},
  };
  for (const Case& c : cases) {
    nlohmann::json document = small_tokenizer();
    if (c.value.is_null() && std::string(c.pointer) == "/model") {
      document.erase("model");
    } else {
      document[nlohmann::json::json_pointer(c.pointer)] = c.value;
    }
    try {
      load(document);
      ADD_FAILURE() << c.pointer << ": no error";
    } catch (const Error& e) {
      for (const std::string& fragment : c.fragments)
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
            << c.pointer << ": '" << e.what() << "' does not mention '" << fragment << "'";
    }
  }
}

TEST(Tokenizer, ModelWithoutTypeIsReadAsBpe) {
  nlohmann::json document = small_tokenizer();
  document["model"].erase("type");
  EXPECT_EQ(load(document).encode("ab"), (std::vector<TokenId>{3}));
  document["model"].erase("merges");
  expect_error([&] { load(document); }, {"model", "no \"type\""});
}

TEST(Tokenizer, NotJsonIsAClearError) {
  expect_error([] { Tokenizer::from_json("{\"model\": ", "x/tokenizer.json"); },
               {"x/tokenizer.json", "not valid JSON"});
  expect_error([] { Tokenizer::from_json("[1, 2]", "x/tokenizer.json"); },
               {"x/tokenizer.json", "expected a JSON object"});
  expect_error([] { Tokenizer::from_json("\"\xff\"", "x/tokenizer.json"); },
               {"x/tokenizer.json", "not valid JSON"});
}

TEST(Tokenizer, UnknownUnkTokenIsAnErrorWhenNeeded) {
  nlohmann::json document = small_tokenizer();
  document["pre_tokenizer"] = nullptr;
  document["model"]["unk_token"] = "<unk>";
  const Tokenizer t = load(document);
  EXPECT_EQ(t.encode("ab"), (std::vector<TokenId>{3}));
  expect_error([&] { t.encode("z"); }, {"unk_token \"<unk>\" is not in the vocabulary"});
}

}  // namespace
}  // namespace dq4::test
