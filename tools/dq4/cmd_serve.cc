// dq4 serve: the OpenAI-compatible HTTP server over the engine, for one model directory.

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dq4/engine/engine.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"
#include "dq4/server/listener.h"
#include "dq4/server/server.h"
#include "dq4/tokenizer/chat_template.h"
#include "dq4/tokenizer/tokenizer.h"
#include "model_options.h"
#include "progress.h"
#include "step_gate.h"

namespace dq4::cli {
namespace {

std::optional<ChatTemplate> load_chat_template(const std::string& dir, const std::string& file) {
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error("option --chat-template: cannot read " + file);
    std::stringstream source;
    source << in.rdbuf();
    ChatTemplate t = ChatTemplate::from_source(source.str());
    t.special_tokens() = ChatTemplate::read_special_tokens(dir);
    return t;
  }
  try {
    return ChatTemplate::from_tokenizer_config(dir);
  } catch (const Error& e) {
    std::fprintf(stderr, "dq4 serve: no chat template (%s): chat requests get 400\n", e.what());
    return std::nullopt;
  }
}

int64_t positive_int(const Args& args, const std::string& name, int64_t max) {
  const int64_t v = args.integer(name);
  if (v < 1 || v > max)
    throw Error("option --" + name + ": expected 1 to " + std::to_string(max) + ", got " +
                std::to_string(v));
  return v;
}

double positive_seconds(const Args& args, const std::string& name) {
  const double v = args.number(name);
  if (!(v > 0 && v <= 1e6))
    throw Error("option --" + name + ": expected a number of seconds > 0 (at most 1e6), got '" +
                args.value(name) + "'");
  return v;
}

// --api-key, else $DQ4_API_KEY (so that the key need not be on a command line others can read).
// Given but empty (e.g. --api-key "$UNSET") is refused: it would silently serve without a key.
std::string api_key(const Args& args) {
  const char* env = std::getenv("DQ4_API_KEY");
  const bool from_option = args.given("api-key");
  if (!from_option && env == nullptr) return "";
  const std::string key = from_option ? args.value("api-key") : env;
  const std::string source = from_option ? "option --api-key" : "DQ4_API_KEY";
  if (key.empty())
    throw Error(source + " is empty: that would serve without authentication (to do so, give no " +
                "key at all)");
  try {
    check_api_key(key);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return key;
}

}  // namespace

int run_serve(int argc, char** argv, int first) {
  // `dq4 serve DIR` as vLLM spells it: the leading positional is -m DIR.
  std::vector<char*> argv_model(argv, argv + argc);
  std::string model_flag = "--model";
  if (first < argc && argv[first][0] != '-')
    argv_model.insert(argv_model.begin() + first, model_flag.data());
  argc = static_cast<int>(argv_model.size());
  argv = argv_model.data();

  Args args("serve [DIR]",
            "Serves a model directory over HTTP with OpenAI's API: /v1/completions,\n"
            "/v1/chat/completions (streamed or not), /v1/models, /tokenize, /detokenize,\n"
            "/health and /metrics (Prometheus). Runs until SIGINT or SIGTERM, then finishes\n"
            "the requests in flight (up to --shutdown-timeout) and exits 0; a second SIGINT or\n"
            "SIGTERM meanwhile exits at once (status 128 + the signal's number).");
  args.option("host", "ADDR", "address to listen on", "127.0.0.1")
      .option("port", "N", "port to listen on (0: any free port, printed)", "8000")
      .option("api-key", "KEY",
              "require 'Authorization: Bearer KEY' (not on /health, /metrics); default: the "
              "DQ4_API_KEY environment variable; an empty key is refused")
      .option("served-model-name", "NAME", "the model name clients use (default: DIR as given)")
      .option("chat-template", "FILE", "Jinja chat template to use instead of the model's")
      .option("tool-call-parser", "NAME",
              "tool calls' format: hermes, llama3_json or mistral (default: the chat "
              "template's)")
      .option("reasoning-parser", "NAME",
              "qwen3 or deepseek_r1: <think> reasoning goes to reasoning_content")
      .option("max-model-len", "N", "prompt + generated tokens at most (0: the model's)", "0")
      .option("max-num-seqs", "N", "sequences in one engine step at most", "256")
      .option("max-num-batched-tokens", "N", "tokens in one engine step at most", "512")
      .option("kv-cache-memory", "SIZE", "KV cache pool size, e.g. 2GiB", "1GiB")
      .option("num-kv-blocks", "N", "KV cache pool in blocks (overrides --kv-cache-memory)", "0")
      .option("block-size", "N", "tokens per KV cache block", "16")
      .option("no-prefix-caching", "", "do not reuse the KV blocks of shared prompt prefixes")
      .option("speculative-config", "JSON",
              "speculative decoding, vLLM's shape: '{\"method\": \"ngram\", "
              "\"num_speculative_tokens\": 4, \"prompt_lookup_max\": 4, "
              "\"prompt_lookup_min\": 2}' or a draft model, '{\"model\": DIR, "
              "\"num_speculative_tokens\": 4}' (outputs unchanged, fewer steps); with "
              "\"acceptance_method\": \"rejection_sampler\" (vLLM's default; dq4's is "
              "\"match\") drafts are accepted by rejection sampling: the same distribution, "
              "not the same tokens as without speculation")
      .option("draft-model", "DIR",
              "the same as --speculative-config '{\"model\": DIR, \"num_speculative_tokens\": 4}'")
      .option("max-waiting-requests", "N", "queued requests at most; beyond: 503", "1024")
      .option("max-body-size", "SIZE", "request bodies at most; larger: 413", "8MiB")
      .option("http-threads", "N", "threads for network I/O", "2")
      .option("max-connections", "N",
              "open connections at most; at the cap a new one closes the one idle the longest",
              "4096")
      .option("timeout-keep-alive", "SECONDS", "an idle connection closes after this long", "60")
      .option("timeout-headers", "SECONDS",
              "a request's headers (then its body) must arrive within this long", "60")
      .option("shutdown-timeout", "SECONDS", "how long in-flight requests may finish", "30")
      .option("step-gate-fd", "FD",
              "for tests: one engine step per byte read from FD, freely after its end");
  declare_model_options(args);
  if (!args.parse(argc, argv, first)) return 0;

  const std::string dir = args.value("model");
  ServerOptions server_options;
  server_options.host = args.value("host");
  server_options.port = static_cast<int>(args.integer("port"));
  if (server_options.port < 0 || server_options.port > 65535)
    throw Error("option --port: expected 0 to 65535");
  server_options.api_key = api_key(args);
  server_options.served_model_name =
      args.value("served-model-name").empty() ? dir : args.value("served-model-name");
  server_options.max_body_bytes = args.byte_size("max-body-size");
  server_options.tool_call_parser = args.value("tool-call-parser");
  server_options.reasoning_parser = args.value("reasoning-parser");
  for (const std::string name : {"tool-call-parser", "reasoning-parser"}) {
    ServerOptions one;  // checked one at a time: the error names its option
    (name == "tool-call-parser" ? one.tool_call_parser : one.reasoning_parser) = args.value(name);
    try {
      check_parsers(one);
    } catch (const Error& e) {
      throw Error("option --" + name + ": " + e.what());
    }
  }
  server_options.http_threads = static_cast<int>(positive_int(args, "http-threads", 64));
  server_options.max_connections = positive_int(args, "max-connections", 1 << 20);
  server_options.keep_alive_timeout_seconds = positive_seconds(args, "timeout-keep-alive");
  server_options.header_timeout_seconds = positive_seconds(args, "timeout-headers");
  server_options.shutdown_timeout_seconds = args.number("shutdown-timeout");
  if (!(server_options.shutdown_timeout_seconds >= 0))
    throw Error("option --shutdown-timeout: expected a number of seconds >= 0");

  EngineOptions engine_options;
  engine_options.max_num_seqs = args.integer("max-num-seqs");
  engine_options.max_num_batched_tokens = args.integer("max-num-batched-tokens");
  engine_options.kv_cache_memory = args.byte_size("kv-cache-memory");
  engine_options.kv_blocks = args.integer("num-kv-blocks");
  engine_options.block_size = args.integer("block-size");
  engine_options.kv_type = kv_type_option(args);
  engine_options.enable_prefix_caching = !args.flag("no-prefix-caching");
  engine_options.max_waiting = args.integer("max-waiting-requests");
  engine_options.max_model_len = args.integer("max-model-len");
  if (args.given("speculative-config") && args.given("draft-model"))
    throw Error("options --speculative-config and --draft-model: give one of them");
  if (args.given("speculative-config"))
    engine_options.speculative = parse_speculative_config(args.value("speculative-config"));
  if (args.given("draft-model"))
    engine_options.speculative = parse_speculate_spec("draft:" + args.value("draft-model"));
  engine_options.validate();
  std::optional<PipeStepGate> step_gate;
  if (!args.value("step-gate-fd").empty()) {
    const int64_t fd = args.integer("step-gate-fd");
    if (fd < 0 || fd > INT_MAX)
      throw Error("option --step-gate-fd: expected a file descriptor, got " + std::to_string(fd));
    step_gate.emplace(static_cast<int>(fd));
    engine_options.before_step = [gate = &*step_gate] { gate->wait(); };
  }

  // Bound before the model loads: a port already taken fails now, not after the load.
  Listener listener(server_options.host, server_options.port);
  LoadedModel loaded = load_model(args, /*need_tokenizer=*/true);
  const Tokenizer& tokenizer = *loaded.tokenizer;
  if (engine_options.speculative) load_draft(*engine_options.speculative, loaded, args);
  const std::optional<ChatTemplate> chat_template =
      load_chat_template(dir, args.value("chat-template"));

  const auto engine_start = std::chrono::steady_clock::now();
  Engine engine(*loaded.model, tokenizer, engine_options, &loaded.threads());
  const EngineOptions& resolved = engine.options();
  std::fprintf(
      stderr, "KV cache: %lld blocks of %lld tokens (%s), mapped in %.2f s\n",
      static_cast<long long>(resolved.kv_blocks), static_cast<long long>(resolved.block_size),
      megabytes(static_cast<uint64_t>(resolved.kv_blocks) *
                KvCache::bytes_per_block(
                    loaded.model->kv_shape(1, resolved.block_size, resolved.kv_type)))
          .c_str(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - engine_start).count());
  engine.start();
  Server server(engine, tokenizer, chat_template ? &*chat_template : nullptr, server_options,
                std::move(listener));
  std::fprintf(stderr, "dq4 serve: %s as '%s' on http://%s:%d (max model len %lld)\n", dir.c_str(),
               server_options.served_model_name.c_str(), server_options.host.c_str(), server.port(),
               static_cast<long long>(engine.max_model_len()));
  std::fflush(stderr);
  server.run_until_signal();
  std::fprintf(stderr, "dq4 serve: stopped\n");
  return 0;
}

}  // namespace dq4::cli
