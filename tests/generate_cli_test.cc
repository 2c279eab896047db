// dq4 generate, chat and perplexity end to end on the stories260K fixtures.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_runner.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

std::string stories() { return shell_quote(fixtures_dir() + "/stories260K-hf"); }

nlohmann::json reference_run(const std::string& name) {
  std::ifstream in(fixtures_dir() + "/stories260K-hf/reference_generation.json");
  const nlohmann::json reference = nlohmann::json::parse(in);
  for (const nlohmann::json& run : reference["runs"])
    if (run["name"] == name) return run;
  ADD_FAILURE() << "no run " << name;
  return {};
}

nlohmann::json generate_json(const std::string& args) {
  const CliResult r = run_dq4("generate " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(GenerateCli, GreedyMatchesTheReference) {
  const nlohmann::json ref = reference_run("once_upon_a_time");
  const nlohmann::json j =
      generate_json("-m " + stories() + " -p 'Once upon a time' -n 64 --temp 0");
  EXPECT_EQ(j["prompt_ids"], ref["prompt_ids"]);
  EXPECT_EQ(j["generated_ids"], ref["generated_ids"]);
  EXPECT_EQ(j["finish_reason"], "length");
  for (const char* key :
       {"text", "prompt_tokens_per_s", "decode_tokens_per_s", "ttft_ms", "peak_rss_mb", "load_s"})
    EXPECT_TRUE(j.contains(key)) << key;
  // The streamed text is the same text.
  const CliResult streamed =
      run_dq4("generate -m " + stories() + " -p 'Once upon a time' -n 64 --temp 0");
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(streamed.out, j["text"].get<std::string>() + "\n");
  EXPECT_NE(streamed.err.find("decode: 64 tokens"), std::string::npos) << streamed.err;
}

TEST(GenerateCli, StopStringsAndSeeds) {
  const nlohmann::json stopped =
      generate_json("-m " + stories() + " -p 'Once upon a time' -n 64 --temp 0 --stop Lily");
  EXPECT_EQ(stopped["finish_reason"], "stop");
  EXPECT_EQ(stopped["text"], ", there was a little girl named ");
  const std::string sampled =
      "-m " + stories() + " -p 'Once upon a time' -n 48 --temp 1.5 --top-k 0 --top-p 1 --min-p 0";
  const nlohmann::json a = generate_json(sampled + " --seed 5"),
                       b = generate_json(sampled + " --seed 5");
  EXPECT_EQ(a["generated_ids"], b["generated_ids"]);
  EXPECT_NE(generate_json(sampled + " --seed 6")["generated_ids"], a["generated_ids"]);
}

const std::string kOnce = " -p 'Once upon a time' --temp 0";

TEST(GenerateCli, StopStringsAreHeldBackOnceAndCutOnce) {
  const std::string base = "-m " + stories() + kOnce + " -n 40";
  const std::string text = generate_json(base)["text"];
  ASSERT_NE(text.find("girl named"), std::string::npos) << text;
  // A stop string whose start appears but that never completes: the held-back text comes out
  // once, streamed or not.
  const nlohmann::json near = generate_json(base + " --stop 'girl namex'");
  EXPECT_EQ(near["text"], text);
  EXPECT_EQ(near["finish_reason"], "length");
  EXPECT_TRUE(near["stop_reason"].is_null());
  CliResult streamed = run_dq4("generate " + base + " --stop 'girl namex'");
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(streamed.out, text + "\n");
  streamed = run_dq4("generate " + base + " --stop Lily");
  EXPECT_EQ(streamed.out, ", there was a little girl named \n");
  const nlohmann::json kept = generate_json(base + " --stop Lily --include-stop-str-in-output");
  EXPECT_EQ(kept["text"], ", there was a little girl named Lily");
  EXPECT_EQ(kept["finish_reason"], "stop");
  EXPECT_EQ(kept["stop_reason"], "Lily");
}

TEST(GenerateCli, StopTokenIdsEndTheOutputAndMinTokensHoldEveryStopOff) {
  const std::string base = "-m " + stories() + kOnce + " -n 100";
  const nlohmann::json plain = generate_json(base);
  const int comma = plain["generated_ids"][0];  // ", there was ..."
  const std::string stop_comma = " --stop-token-ids 7," + std::to_string(comma);
  const nlohmann::json stopped = generate_json(base + stop_comma);
  EXPECT_EQ(stopped["generated_ids"], nlohmann::json::array());  // the stop token is not output
  EXPECT_EQ(stopped["text"], "");
  EXPECT_EQ(stopped["finish_reason"], "stop");
  EXPECT_EQ(stopped["stop_reason"], comma);

  const nlohmann::json held = generate_json(base + stop_comma + " --min-tokens 6");
  const std::vector<int> ids = held["generated_ids"];
  ASSERT_GE(ids.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_NE(ids[i], comma) << i;
  EXPECT_EQ(held["finish_reason"], "stop");
  EXPECT_EQ(held["stop_reason"], comma);

  // Stop strings are not looked for before min_tokens either: the first "Lily" stays.
  const std::string text = plain["text"];
  const size_t first = text.find("Lily"), second = text.find("Lily", first + 1);
  ASSERT_NE(second, std::string::npos) << text;
  const nlohmann::json late = generate_json(base + " --stop Lily --min-tokens 12");
  EXPECT_EQ(late["text"], text.substr(0, second));
  EXPECT_EQ(late["stop_reason"], "Lily");
  EXPECT_EQ(generate_json(base + " --stop Lily")["text"], text.substr(0, first));
}

// stories260K whose tokenizer calls "," a special token.
TEST(GenerateCli, SkipSpecialTokensLeavesThemOutOfTheText) {
  ScratchDir scratch;
  const std::string dir = scratch.file("model");
  fs::create_directory(dir);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(fixtures_dir() + "/stories260K-hf/" + f, dir + "/" + f);
  std::ifstream in(fixtures_dir() + "/stories260K-hf/tokenizer.json");
  nlohmann::json tokenizer = nlohmann::json::parse(in);
  const int comma = tokenizer["model"]["vocab"][","];
  tokenizer["added_tokens"].push_back({{"id", comma},
                                       {"content", ","},
                                       {"single_word", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"normalized", false},
                                       {"special", true}});
  write_file(dir + "/tokenizer.json", tokenizer.dump());
  const std::string base = "-m " + shell_quote(dir) + kOnce + " -n 40";
  const nlohmann::json skipped = generate_json(base);
  const nlohmann::json kept = generate_json(base + " --no-skip-special-tokens");
  const nlohmann::json original = generate_json("-m " + stories() + kOnce + " -n 40");
  EXPECT_EQ(skipped["generated_ids"], original["generated_ids"]);
  EXPECT_EQ(kept["generated_ids"], original["generated_ids"]);
  EXPECT_EQ(kept["text"], original["text"]);
  std::string without = original["text"];
  std::erase(without, ',');
  ASSERT_NE(without, original["text"]);
  EXPECT_EQ(skipped["text"], without);
}

TEST(GenerateCli, LogprobsAreTheGeneratedTokens) {
  const nlohmann::json j = generate_json("-m " + stories() + kOnce + " -n 12 --logprobs 2");
  ASSERT_EQ(j["logprobs"].size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    const nlohmann::json& t = j["logprobs"][i];
    EXPECT_EQ(t["id"], j["generated_ids"][i]);
    ASSERT_EQ(t["top"].size(), 2u);
    EXPECT_EQ(t["top"][0]["id"], t["id"]);  // greedy: the most likely
    EXPECT_EQ(t["top"][0]["logprob"], t["logprob"]);
    EXPECT_LT(t["logprob"].get<double>(), 0.0);
    EXPECT_GE(t["top"][0]["logprob"].get<double>(), t["top"][1]["logprob"].get<double>());
  }
}

TEST(GenerateCli, ThePredictionStopsAtTheEndOfTheContext) {
  const nlohmann::json j = generate_json("-m " + stories() + kOnce + " -n 600 --ctx 64");
  EXPECT_EQ(j["prompt_ids"].size() + j["generated_ids"].size(), 64u);
  EXPECT_EQ(j["finish_reason"], "length");
}

TEST(GenerateCli, QuantizedCheckpointEqualsQuantizingAtLoad) {
  ScratchDir scratch;
  const std::string out = shell_quote(scratch.file("w4a8"));
  ASSERT_EQ(run_dq4("quantize " + stories() + " -o " + out).exit_code, 0);
  const nlohmann::json from_checkpoint =
      generate_json("-m " + out + " -p 'Once upon a time' -n 40 --temp 0");
  const nlohmann::json at_load = generate_json(
      "-m " + stories() + " --quantize w4a8-g32 -p 'Once upon a time' -n 40 --temp 0");
  EXPECT_EQ(from_checkpoint["generated_ids"], at_load["generated_ids"]);
  EXPECT_EQ(from_checkpoint["generated_ids"].size(), 40u);
}

TEST(GenerateCli, ConstrainedOutputs) {
  ScratchDir scratch;
  const std::string schema = scratch.file("schema.json"), grammar = scratch.file("list.gbnf");
  write_file(schema, R"({"type": "object", "properties": {"n": {"type": "integer",
      "minimum": 0, "maximum": 99}, "w": {"enum": ["cat", "dog"]}}, "required": ["n", "w"],
      "additionalProperties": false})");
  write_file(grammar, "root ::= \"(\" [0-9] (\"+\" [0-9]){0,3} \")\"\n");
  const std::string base = "-m " + stories() + " -p 'Once upon a time' -n 60 --temp 1.2 ";
  for (int seed = 0; seed < 4; ++seed) {
    const std::string seeded = base + "--seed " + std::to_string(seed) + " ";
    const nlohmann::json object = nlohmann::json::parse(
        generate_json(seeded + "--json-schema " + schema)["text"].get<std::string>());
    EXPECT_TRUE(object["n"].is_number_integer() && object["n"] >= 0 && object["n"] <= 99) << object;
    EXPECT_TRUE(object["w"] == "cat" || object["w"] == "dog") << object;
    EXPECT_EQ(object.size(), 2u) << object;
    const nlohmann::json sum = generate_json(seeded + "--grammar " + grammar);
    EXPECT_TRUE(
        std::regex_match(sum["text"].get<std::string>(), std::regex(R"(\([0-9](\+[0-9]){0,3}\))")))
        << sum["text"];
    EXPECT_EQ(sum["finish_reason"], "stop");
    const nlohmann::json date = generate_json(seeded + "--regex '[0-9]{4}-(0[1-9]|1[0-2])'");
    EXPECT_TRUE(
        std::regex_match(date["text"].get<std::string>(), std::regex("[0-9]{4}-(0[1-9]|1[0-2])")))
        << date["text"];
    const std::string choice =
        generate_json(seeded + "--choice 'a cat' --choice 'a dog' --choice fish")["text"];
    EXPECT_TRUE(choice == "a cat" || choice == "a dog" || choice == "fish") << choice;
  }
  for (const auto& [options, message] : std::vector<std::pair<std::string, std::string>>{
           {"--json-schema /nonexistent/s.json",
            "option --json-schema: cannot read /nonexistent/s.json"},
           {"--grammar " + schema, "option --grammar " + schema + ": grammar"},
           {"--regex '(a'", "option --regex: regex"},
           {"--regex a --grammar " + grammar, "options --regex and --grammar"}}) {
    const CliResult r = run_dq4("generate " + base + options);
    EXPECT_EQ(r.exit_code, 1) << options;
    EXPECT_NE(r.err.find(message), std::string::npos) << options << ": " << r.err;
  }
}

TEST(GenerateCli, SpeculationChangesNoTokenAndReportsItsAcceptance) {
  // Sampling at a low temperature: text repetitive enough that prompt lookup is sometimes right
  // before the pacing stops drafting (a hotter sample may accept nothing in 120 tokens).
  for (const std::string sampling : {"--temp 0", "--temp 0.3 --seed 3 --logprobs 2"}) {
    const std::string base =
        "-m " + stories() + " -p 'Once upon a time' -n 120 --ignore-eos " + sampling;
    const nlohmann::json plain = generate_json(base);
    const nlohmann::json spec =
        generate_json(base + " --speculative ngram:min=1,max=3 --num-speculative-tokens 3");
    EXPECT_EQ(spec["generated_ids"], plain["generated_ids"]) << sampling;
    EXPECT_EQ(spec["text"], plain["text"]);
    EXPECT_EQ(spec.value("logprobs", nlohmann::json()), plain.value("logprobs", nlohmann::json()));
    EXPECT_FALSE(plain.contains("speculation"));
    const nlohmann::json& s = spec["speculation"];
    EXPECT_EQ(s["method"], "ngram:k=3,min=1,max=3");
    EXPECT_GT(s["accepted_tokens"].get<int>(), 0) << sampling;
    EXPECT_LE(s["accepted_tokens"].get<int>(), s["draft_tokens"].get<int>());
  }
  CliResult r = run_dq4("generate -m " + stories() + " -p hi --speculative eagle");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--speculative"), std::string::npos) << r.err;
  r = run_dq4("generate -m " + stories() +
              " -p hi --speculative ngram --num-speculative-tokens 99");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("num_speculative_tokens"), std::string::npos) << r.err;
}

TEST(GenerateCli, ADraftModelChangesNoTokenAndReportsItsAcceptance) {
  // stories260K in W4A8 drafted by its F32 checkpoint.
  const std::string base = "-m " + stories() +
                           " --quantize w4a8-g32 -p 'Once upon a time' -n 60 --ignore-eos "
                           "--temp 0.8 --seed 3 --logprobs 1";
  const nlohmann::json plain = generate_json(base);
  const nlohmann::json spec =
      generate_json(base + " --speculative " + stories() + " --num-speculative-tokens 3");
  EXPECT_EQ(spec["generated_ids"], plain["generated_ids"]);
  EXPECT_EQ(spec["logprobs"], plain["logprobs"]);
  EXPECT_EQ(spec["speculation"]["method"], "draft:" + fixtures_dir() + "/stories260K-hf,k=3");
  EXPECT_GT(spec["speculation"]["accepted_tokens"].get<int>(), 0);
  const nlohmann::json named =
      generate_json(base + " --draft-model " + stories() + " --num-speculative-tokens 3");
  EXPECT_EQ(named["generated_ids"], plain["generated_ids"]);
  EXPECT_EQ(named["speculation"], spec["speculation"]);
  const CliResult r = run_dq4("generate -m " + stories() + " -p hi --draft-model " +
                              fixtures_dir() + "/tokenizer-gpt2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("tokenizer is not the target's"), std::string::npos) << r.err;
  const CliResult both = run_dq4("generate -m " + stories() + " -p hi --speculative ngram" +
                                 " --draft-model " + stories());
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("--speculative and --draft-model"), std::string::npos) << both.err;
}

TEST(GenerateCli, Errors) {
  CliResult r = run_dq4("generate -m " + stories() + " -p 'Once upon a time there was' --ctx 4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("more than the context of 4 tokens"), std::string::npos) << r.err;
  r = run_dq4("generate -m /nonexistent/model -p hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;
  r = run_dq4("generate -m " + stories() + " -p hi --quantize w4a8-g33");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--quantize"), std::string::npos) << r.err;
  r = run_dq4("generate -m " + stories() + " -p hi --temp -1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("temperature"), std::string::npos) << r.err;
  r = run_dq4("generate -m " + stories() + " -p hi --chat hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("exactly one of"), std::string::npos) << r.err;
  // An architecture dq4 does not run, and weights that do not match config.json.
  ScratchDir scratch;
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"architectures", {"PhiForCausalLM"}}, {"intermediate_size", 128}}) {
    std::ifstream in(fixtures_dir() + "/stories260K-hf/config.json");
    nlohmann::json config = nlohmann::json::parse(in);
    config[key] = value;
    const std::string dir = scratch.file(key);
    fs::create_directory(dir);
    for (const char* f : {"model.safetensors", "tokenizer.json"})
      fs::copy_file(fixtures_dir() + "/stories260K-hf/" + f, dir + "/" + f);
    write_file(dir + "/config.json", config.dump());
    r = run_dq4("generate -m " + shell_quote(dir) + " -p hi");
    EXPECT_EQ(r.exit_code, 1) << key;
    EXPECT_NE(r.err.find(key == "architectures" ? "PhiForCausalLM" : "gate_proj"),
              std::string::npos)
        << r.err;
  }
  for (const auto& [options, message] : std::vector<std::pair<std::string, std::string>>{
           {"-n 10 --min-tokens 11", "--min-tokens"},
           {"--stop-token-ids 512", "--stop-token-ids: id 512 is outside the vocabulary"},
           {"--stop-token-ids 3,x", "--stop-token-ids"},
           {"--logprobs 2", "--logprobs: needs --json"},
           {"--logprobs 21 --json", "--logprobs"},
           {"--ctx 5", "no room to generate"}}) {
    r = run_dq4("generate -m " + stories() + " -p 'Once upon a time' " + options);
    EXPECT_EQ(r.exit_code, 1) << options;
    EXPECT_NE(r.err.find(message), std::string::npos) << options << ": " << r.err;
  }
  r = run_dq4("generate -m " + stories() + " --chat hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("chat_template"), std::string::npos) << r.err;
}

// A checkpoint holding a tensor its architecture does not run loads with a warning naming it,
// and generates what the checkpoint without it does; export-gguf notes it left the tensor out.
TEST(GenerateCli, WarnsOfTensorsTheModelDoesNotUseAsExportGgufDoes) {
  ScratchDir scratch;
  const std::string dir = scratch.file("extra");
  fs::create_directory(dir);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    fs::copy_file(fixtures_dir() + "/stories260K-hf/" + f, dir + "/" + f);
  const std::string extra = "model.layers.0.post_feedforward_layernorm.weight";
  write_safetensors(dir + "/extra.safetensors", {{extra, "F32", {64}, std::vector<uint8_t>(256)}});
  // The index: every tensor of the header of model.safetensors (a little-endian length, then
  // JSON), and the new one.
  std::ifstream in(dir + "/model.safetensors", std::ios::binary);
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), 8);
  std::string header(length, '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  const nlohmann::json tensors = nlohmann::json::parse(header);
  nlohmann::json map;
  for (const auto& [name, entry] : tensors.items())
    if (name != "__metadata__") map[name] = "model.safetensors";
  map[extra] = "extra.safetensors";
  write_file(dir + "/model.safetensors.index.json",
             nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", map}}.dump());

  const std::string args = " -p 'Once upon a time' -n 16 --temp 0";
  const CliResult plain = run_dq4("generate -m " + stories() + args);
  const CliResult warned = run_dq4("generate -m " + shell_quote(dir) + args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_EQ(plain.err.find("warning"), std::string::npos) << plain.err;
  EXPECT_NE(warned.err.find(
                "warning: " + dir +
                " (LlamaForCausalLM): 1 checkpoint tensor is not used by dq4's model: " + extra),
            std::string::npos)
      << warned.err;
  EXPECT_EQ(warned.out, plain.out);
  const CliResult exported =
      run_dq4("export-gguf " + shell_quote(dir) + " -o " + shell_quote(scratch.file("x.gguf")));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(
      exported.out.find(
          "note: left out of the file: 1 checkpoint tensor is not used by dq4's model: " + extra),
      std::string::npos)
      << exported.out;
}

// stories260K with a chat template added: two turns, the second reusing the first's cache.
TEST(ChatCli, TurnsReuseTheCache) {
  ScratchDir scratch;
  const std::string dir = scratch.file("model");
  fs::create_directory(dir);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    fs::copy_file(fixtures_dir() + "/stories260K-hf/" + f, dir + "/" + f);
  const nlohmann::json config = {
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"chat_template",
       "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% if m['role'] == 'assistant' "
       "%}{{ eos_token }}{% endif %}{% endfor %}"}};
  write_file(dir + "/tokenizer_config.json", config.dump());
  const CliResult r = run_dq4("chat -m " + shell_quote(dir) + " -n 12 --temp 0",
                              "Once upon a time\nThe dog\n/exit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 2u) << r.out;
  // Turn 2's prompt holds turn 1 whole; only what follows it is computed.
  const size_t first = r.err.find("prompt tokens computed");
  const size_t second = r.err.find("prompt tokens computed", first + 1);
  ASSERT_NE(second, std::string::npos) << r.err;
  const size_t line = r.err.rfind('[', second);
  int computed = 0, total = 0;
  ASSERT_EQ(std::sscanf(r.err.c_str() + line, "[%d of %d", &computed, &total), 2) << r.err;
  EXPECT_LT(computed, total / 2) << r.err;
}

TEST(PerplexityCli, ReportsPerplexityAndItsError) {
  ScratchDir scratch;
  const std::string text = reference_run("from_bos")["generated_text"];
  write_file(scratch.file("story.txt"), text + "\n" + text);
  const CliResult r = run_dq4("perplexity -m " + stories() + " -f " +
                              shell_quote(scratch.file("story.txt")) + " --ctx 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // The model's own greedy story: far more predictable than chance (512 tokens).
  EXPECT_GT(j["perplexity"].get<double>(), 1.0);
  EXPECT_LT(j["perplexity"].get<double>(), 4.0);
  EXPECT_GT(j["standard_error"].get<double>(), 0.0);
  EXPECT_GE(j["windows"].get<int>(), 4);
  EXPECT_EQ(j["scored_tokens"].get<int>(), j["windows"].get<int>() * 63);
  const CliResult short_text = run_dq4("perplexity -m " + stories() + " -f " +
                                       shell_quote(scratch.file("story.txt")) + " --ctx 4096");
  EXPECT_EQ(short_text.exit_code, 1);
  EXPECT_NE(short_text.err.find("--ctx"), std::string::npos) << short_text.err;
}

}  // namespace
}  // namespace dq4::test
