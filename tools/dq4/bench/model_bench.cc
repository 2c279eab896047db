#include "bench/model_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "args.h"
#include "bench/references.h"
#include "dq4/convert/synth.h"
#include "dq4/engine/session.h"
#include "dq4/engine/speculation.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a8.h"
#include "dq4/layers/linear.h"
#include "dq4/model/model.h"
#include "load_options.h"
#include "model_options.h"
#include "progress.h"

namespace dq4::cli::bench {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string phase;  // "prompt" or "decode"
  std::string head;   // what the head runs
  int64_t tokens = 0;
  int threads = 0;
  std::string speculate = {};  // decode with speculation: its proposer ("replay:k=4,accept=0.6")
  // The repeat with the median ceiling ratio: its speed and its own ceiling.
  double tokens_per_s = 0;
  double ceiling_tokens_per_s = 0;
  double ratio_min = 0, ratio_max = 0;  // over the repeats
  // Int-ops (prompt) or bytes read (decode) per token: the ceiling is the machine's int8 peak or
  // read bandwidth divided by it.
  double work_per_token = 0;
  double reference = 0;  // that peak (G int-op/s) or bandwidth (GB/s), probed beside the repeat
  // Decode: the share of a step's time the head takes (the head timed on its own, HeadTimer).
  double head_share = 0;
  double peak_rss_mb = 0;
  // Speculative decode: tokens/s over the plain decode's in the same repeat (median over the
  // repeats), drafts accepted / drafted, and tokens per forward.
  double speedup = 0, acceptance = 0, tokens_per_step = 0;
  // Packed weights + embeddings + the largest KV cache of the model's cases: what the model must
  // hold; peak_rss_mb / this is the memory overhead.
  double model_mb = 0;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int32_t& t : out) t = pick(rng);
  return out;
}

// The head alone on one row, as a decode step runs it (the step's logits are one row): what
// the step spends in the head, timed apart from the step.
class HeadTimer {
 public:
  explicit HeadTimer(const Model& model)
      : head_(model.head()),
        row_(static_cast<size_t>(head_.in_features())),
        logits_(static_cast<size_t>(head_.out_features())) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;  // about what the final norm hands the head
    for (float& v : row_) v = normal(rng);
  }
  double seconds(ThreadPool& pool) {
    const double t0 = now_seconds();
    head_.forward(row_.data(), 1, head_.in_features(), logits_.data(), head_.out_features(), &pool);
    return now_seconds() - t0;
  }

 private:
  const Linear& head_;
  std::vector<float> row_, logits_;
};

struct Settings {
  std::vector<int64_t> prompt_lengths;
  std::vector<SpeculativeConfig> speculate;
  int64_t decode_tokens = 128;
  // Decode starts after a prompt of this many tokens, the context its attention reads.
  int64_t decode_after = 16;
  int repeats = 3;
  attention::KvType kv_type = attention::KvType::f32;
};

// The ceilings are probed beside each repeat, not once for the run: a shared host's speed drifts
// within seconds, and a ratio against a probe taken a minute away measures the drift.
// Decode reads this much of the probe's buffer after every token (the buffer, 8x the chunk,
// rotates: each chunk is read from memory, as the weights are), timed apart from the token.
constexpr size_t kProbeChunk = size_t{32} << 20;
constexpr size_t kProbeBytes = 8 * kProbeChunk;
// Prompt repeats are flanked by int8 peak probes of this many runs.
constexpr int kPeakRunsAround = 3;

struct Repeat {
  double tokens_per_s = 0, reference = 0, head_seconds = 0;
  double ceiling(double work_per_token) const { return reference * 1e9 / work_per_token; }
  double ratio(double work_per_token) const { return tokens_per_s / ceiling(work_per_token); }
};

// The case from its repeats: the one with the median ratio, and the ratios' range.
Case summarize_repeats(Case k, std::vector<Repeat> repeats) {
  std::sort(repeats.begin(), repeats.end(), [&](const Repeat& a, const Repeat& b) {
    return a.ratio(k.work_per_token) < b.ratio(k.work_per_token);
  });
  const Repeat& median = repeats[repeats.size() / 2];
  k.tokens_per_s = median.tokens_per_s;
  k.reference = median.reference;
  k.ceiling_tokens_per_s = median.ceiling(k.work_per_token);
  k.head_share = median.head_seconds * median.tokens_per_s / static_cast<double>(k.tokens);
  k.ratio_min = repeats.front().ratio(k.work_per_token);
  k.ratio_max = repeats.back().ratio(k.work_per_token);
  return k;
}

// What every case's process holds besides the model: the read probe's buffer, resident from the
// start (so that it is not part of a case's page faults) and taken out of the peak RSS.
struct Probes {
  ReadBandwidthProbe read{kProbeBytes};
  DotPeak peak;

  double peak_gops(ThreadPool& pool, int threads) const {
    const std::vector<DotPeakRate> r = dot_peak(peak, {threads}, kPeakRunsAround, &pool);
    return r.empty() ? std::numeric_limits<double>::quiet_NaN() : r[0].gops.median;
  }
  double peak_rss_mb() const {
    const uint64_t peak = peak_rss_bytes();
    return static_cast<double>(peak - std::min<uint64_t>(peak, read.bytes())) / 1e6;
  }
};

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Greedy speculative decoding of `count` tokens after `prompt` on a session: each step feeds the
// last token and the proposer's drafts (as many as the engine's pacing allows), keeps the drafts
// while each equals the argmax of the row before it, and takes the rejected ones back out of the
// cache. The engine's verification, with no scheduler around it: what the rows cost, apart from
// serving.
struct SpeculativeRun {
  double seconds = 0;
  int64_t steps = 0, drafted = 0, accepted = 0;
  std::vector<int32_t> generated;
};
// `between` runs after every step, untimed (the plain decode's read probe, which leaves the caches
// as cold for the next step).
SpeculativeRun speculative_decode(Session& session, std::span<const int32_t> prompt, int64_t count,
                                  const SpeculativeConfig& config, Proposer& proposer,
                                  const std::function<void()>& between) {
  DraftPacing pacing;
  SpeculativeRun run;
  session.truncate(0);
  std::vector<int32_t> tokens(prompt.begin(), prompt.end());
  tokens.push_back(argmax(session.feed(prompt)));
  std::vector<int32_t> step(static_cast<size_t>(config.num_speculative_tokens) + 1);
  while (static_cast<int64_t>(tokens.size() - prompt.size()) < count) {
    const double t0 = now_seconds();
    step[0] = tokens.back();
    const int64_t room = count - static_cast<int64_t>(tokens.size() - prompt.size());
    const std::span<int32_t> drafts = std::span(step).subspan(
        1, static_cast<size_t>(pacing.drafts(std::min(config.num_speculative_tokens, room))));
    const auto n =
        drafts.empty() ? size_t{0} : static_cast<size_t>(proposer.propose(tokens, drafts));
    const std::span<const float> rows = session.feed_all(std::span(step).first(n + 1));
    const size_t vocab = rows.size() / (n + 1);
    size_t j = 0;
    for (;; ++j) {
      const int32_t pick = argmax(rows.subspan(j * vocab, vocab));
      if (j == n || pick != drafts[j]) {
        tokens.insert(tokens.end(), drafts.begin(), drafts.begin() + static_cast<ptrdiff_t>(j));
        tokens.push_back(pick);
        break;
      }
    }
    session.truncate(static_cast<int64_t>(session.tokens().size()) - static_cast<int64_t>(n - j));
    run.seconds += now_seconds() - t0;
    ++run.steps;
    run.drafted += static_cast<int64_t>(n);
    run.accepted += static_cast<int64_t>(j);
    pacing.record(static_cast<int64_t>(n), static_cast<int64_t>(j));
    between();
  }
  run.generated.assign(tokens.begin() + static_cast<ptrdiff_t>(prompt.size()), tokens.end());
  run.generated.resize(static_cast<size_t>(count));
  return run;
}

// Tokens per forward of a prompt: the engine's default token budget per step.
constexpr int64_t kPrefillChunk = 512;

// Times the prompt and decode cases at `threads` threads, `repeats` times each, every repeat
// with its own ceiling probe.
void run_cases(Model& model, int threads, const Settings& s, const std::string& head,
               Probes& probes, std::vector<Case>& cases, bool prompts) {
  ThreadPool pool(threads);
  const ModelConfig& c = model.config();
  const TokenCost cost = model.cost_per_token(s.kv_type);
  if (prompts)
    for (int64_t n : s.prompt_lengths) {
      const std::vector<int32_t> tokens = random_tokens(n, c.vocab_size, 1);
      std::vector<Repeat> repeats;
      // One session for the case: a server keeps its KV cache and workspaces, so the page faults
      // of their first use are left to an untimed warm-up run.
      Session session(model, n, s.kv_type, kPrefillChunk, &pool);
      session.feed(tokens);
      double before = probes.peak_gops(pool, threads);
      for (int r = 0; r < s.repeats; ++r) {
        session.truncate(0);
        const double t0 = now_seconds();
        session.feed(tokens);
        const double elapsed = now_seconds() - t0;
        const double after = probes.peak_gops(pool, threads);
        repeats.push_back({static_cast<double>(n) / elapsed, (before + after) / 2, 0});
        before = after;
      }
      Case k{"prompt", head, n, threads};
      // The head runs on the prompt's last token only.
      k.work_per_token = static_cast<double>(cost.linear_ops - cost.head_ops) +
                         static_cast<double>(cost.head_ops) / static_cast<double>(n);
      k = summarize_repeats(k, repeats);
      k.peak_rss_mb = probes.peak_rss_mb();
      cases.push_back(k);
    }
  const std::vector<int32_t> prompt = random_tokens(s.decode_after, c.vocab_size, 2);
  std::vector<Repeat> repeats;
  // The speculative cases (with the prompts' pass only), each run right after the plain decode of
  // the same repeat: a shared host's speed drifts, a ratio of neighbours does not.
  const size_t n_spec = prompts ? s.speculate.size() : 0;
  std::vector<std::vector<Repeat>> spec_repeats(n_spec);
  std::vector<std::vector<double>> speedups(n_spec);
  std::vector<SpeculativeRun> spec_runs(n_spec);
  std::vector<int32_t> plain_tokens;
  Session session(model, s.decode_after + s.decode_tokens, s.kv_type, kPrefillChunk, &pool);
  HeadTimer head_timer(model);
  for (int r = 0; r < s.repeats; ++r) {
    session.truncate(0);
    plain_tokens.clear();
    std::span<const float> logits = session.feed(prompt);
    double decode_seconds = 0, probe_seconds = 0, head_seconds = 0;
    for (int64_t i = 0; i < s.decode_tokens; ++i) {
      const double t0 = now_seconds();
      const int32_t next =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      logits = session.feed(std::span(&next, 1));
      plain_tokens.push_back(next);
      decode_seconds += now_seconds() - t0;
      probe_seconds += probes.read.read_next(pool, threads, kProbeChunk);
      // After the probe, which leaves the cache as cold as the step's other weights leave it.
      head_seconds += head_timer.seconds(pool);
    }
    const double probed = static_cast<double>(kProbeChunk) * static_cast<double>(s.decode_tokens);
    repeats.push_back({static_cast<double>(s.decode_tokens) / decode_seconds,
                       probed / probe_seconds * 1e-9, head_seconds});
    for (size_t i = 0; i < n_spec; ++i) {
      SpeculativeConfig config = s.speculate[i];
      auto reference = std::make_shared<std::vector<TokenId>>(prompt);
      reference->insert(reference->end(), plain_tokens.begin(), plain_tokens.end());
      config.replay_tokens = reference;
      // A draft model's proposer runs on the case's threads, its cache sized for the run.
      const std::unique_ptr<Proposer> proposer =
          config.draft ? make_draft_model_proposer(*config.draft, c.vocab_size,
                                                   s.decode_after + s.decode_tokens, &pool)
                       : make_proposer(config);
      spec_runs[i] = speculative_decode(session, prompt, s.decode_tokens, config, *proposer,
                                        [&] { probes.read.read_next(pool, threads, kProbeChunk); });
      if (spec_runs[i].generated != plain_tokens)
        throw Error("bench model: speculative decoding (" + config.name() +
                    ") changed the greedy output");
      const double tps = static_cast<double>(s.decode_tokens) / spec_runs[i].seconds;
      spec_repeats[i].push_back({tps, repeats.back().reference, 0});
      speedups[i].push_back(tps / repeats.back().tokens_per_s);
    }
  }
  Case k{"decode", head, s.decode_tokens, threads};
  // Attention reads the keys and values of the context, which grows over the decode.
  const int64_t mean_context = s.decode_after + s.decode_tokens / 2;
  k.work_per_token = static_cast<double>(cost.weight_bytes) +
                     static_cast<double>(cost.kv_bytes) * static_cast<double>(mean_context);
  k = summarize_repeats(k, repeats);
  k.peak_rss_mb = probes.peak_rss_mb();
  cases.push_back(k);
  for (size_t i = 0; i < n_spec; ++i) {
    Case sk = k;
    sk.speculate = s.speculate[i].name();
    sk = summarize_repeats(sk, spec_repeats[i]);
    std::sort(speedups[i].begin(), speedups[i].end());
    sk.speedup = speedups[i][speedups[i].size() / 2];
    const SpeculativeRun& run = spec_runs[i];
    sk.acceptance = run.drafted == 0
                        ? 0.0
                        : static_cast<double>(run.accepted) / static_cast<double>(run.drafted);
    sk.tokens_per_step =
        static_cast<double>(s.decode_tokens) / static_cast<double>(std::max<int64_t>(run.steps, 1));
    cases.push_back(sk);
  }
}

// A synthetic model directory written for this run and removed after it.
struct SynthDir {
  std::string path;
  explicit SynthDir(const std::string& preset) {
    SynthOptions o = synth_preset(preset);
    path = (fs::temp_directory_path() / ("dq4-bench-" + preset + "-" + std::to_string(getpid())))
               .string();
    o.output_dir = path;
    o.replace_existing = true;
    ProgressBar bar("writing synthetic " + preset);
    o.progress = bar.callback();
    write_synthetic_model(o);
  }
  ~SynthDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string format_speedup(const Case& k) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "%.2fx plain, acceptance %.2f, %.2f tokens/step", k.speedup,
                k.acceptance, k.tokens_per_step);
  return buffer;
}

}  // namespace

int run_model_bench(int argc, char** argv, int first) {
  Args args("bench model",
            "Prompt processing (128 and 512 tokens) and decode (128 tokens after a 16-token\n"
            "prompt; --decode-after for a longer context) of a whole model at\n"
            "1 and 2 threads, each as tokens/s and as a fraction of its ceiling probed beside it\n"
            "(three repeats, the median shown): decode against read bandwidth / bytes read per\n"
            "token, prompt against the int8 dot-product peak / int-ops per token. Then decode "
            "again with the head quantized\n"
            "to W4A8 G32 (--quantize-dense) to show the head's share of decode time.");
  declare_model_options(args);
  args.option("synth", "PRESET",
              "benchmark a synthetic model (dq4 synth --preset) written for the run");
  args.option("threads-list", "LIST", "thread counts", "1,2");
  args.option("quick", "", "prompt 128, decode 32, one run each (seconds, for the demo)");
  args.option("decode-tokens", "N", "decode this many tokens (default 128; --quick: 32)");
  args.option("decode-after", "N",
              "decode after a prompt of N tokens: the context its attention reads, whose keys and "
              "values count in the decode ceiling (default 16)");
  args.option("repeats", "N", "runs of each case (default 3; --quick: 1)");
  args.option("json", "", "print one JSON array (an object per case)");
  args.option("speculate", "SPEC",
              "also decode speculatively, greedy, beside each plain decode: "
              "replay:k=K,accept=A (drafts from the plain run's own tokens, a share A right) or "
              "ngram[:k=K,min=N,max=M] or a draft model, draft:DIR[,k=K] or DIR (repeatable)");
  args.repeatable("speculate");
  if (!args.parse(argc, argv, first)) return 0;
  const bool json = args.flag("json");
  std::unique_ptr<SynthDir> synth;
  std::string dir = args.value("model");
  if (!args.value("synth").empty()) {
    if (!dir.empty()) throw Error("give -m DIR or --synth PRESET, not both");
    synth = std::make_unique<SynthDir>(args.value("synth"));
    dir = synth->path;
  }
  if (dir.empty()) throw Error("missing -m DIR or --synth PRESET");
  Settings s;
  s.kv_type = kv_type_option(args);
  if (args.given("speculate"))
    for (const std::string& spec : args.values("speculate"))
      s.speculate.push_back(parse_speculate_spec(spec));
  if (args.flag("quick")) {
    s.prompt_lengths = {128};
    s.decode_tokens = 32;
    s.repeats = 1;
  } else {
    s.prompt_lengths = {128, 512};
  }
  if (args.given("decode-tokens")) s.decode_tokens = args.integer("decode-tokens");
  if (args.given("decode-after")) s.decode_after = args.integer("decode-after");
  if (args.given("repeats")) s.repeats = static_cast<int>(args.integer("repeats"));
  if (s.decode_tokens < 1 || s.decode_tokens > 1 << 20)
    throw Error("option --decode-tokens: expected 1..1048576");
  if (s.decode_after < 1 || s.decode_after > 1 << 20)
    throw Error("option --decode-after: expected 1..1048576");
  if (s.repeats < 1 || s.repeats > 1000) throw Error("option --repeats: expected 1..1000");
  std::vector<int> threads;
  for (int64_t t : parse_integer_list("threads-list", args.value("threads-list"))) {
    if (t <= 0 || t > 1024) throw Error("option --threads-list: expected 1..1024");
    threads.push_back(static_cast<int>(t));
  }

  ModelOptions options;
  options.linear = linear_options(args);
  options.quantize_group = quantize_option(args);
  if (synth && !options.quantize_group) options.quantize_group = 32;  // the synthetic model is BF16
  Probes probes{ReadBandwidthProbe(kProbeBytes), dot_peak_for(w4a8::family().default_kernel())};
  std::vector<Case> cases;
  size_t packed = 0, embedding = 0;
  double load_seconds = 0;
  const auto bench_head = [&](bool quantized_head, bool prompts) {
    // Each model's own peak, not the probe's or the model's before it.
    if (!reset_peak_rss())
      std::fprintf(stderr, "warning: peak RSS includes what ran before this model\n");
    ModelOptions o = options;
    if (quantized_head) o.linear.quantize_dense_group = 32;
    std::unique_ptr<Model> model;
    {
      ProgressBar bar("loading");
      o.progress = [&bar](int64_t done, int64_t total) { bar.update(done, total, "layers"); };
      model = Model::load(dir, o);
    }
    if (prompts)
      for (SpeculativeConfig& c : s.speculate)
        if (c.method == SpeculativeConfig::Method::draft_model && !c.draft)
          load_draft_model(c, Tokenizer::from_directory(dir), model->vocab_size(),
                           draft_model_options(args));
    const std::vector<std::string> lines = model->describe();
    const std::string head = lines.back();
    if (!quantized_head) {
      packed = model->load_report().packed_bytes;
      embedding = model->load_report().embedding_bytes;
      load_seconds = model->load_report().seconds;
      for (const std::string& l : lines) std::fprintf(stderr, "  %s\n", l.c_str());
    }
    const size_t first = cases.size();
    for (int t : threads) run_cases(*model, t, s, head, probes, cases, prompts);
    int64_t context = s.decode_after + s.decode_tokens;
    if (prompts)
      for (int64_t n : s.prompt_lengths) context = std::max(context, n);
    const double model_bytes = static_cast<double>(model->load_report().packed_bytes) +
                               static_cast<double>(model->load_report().embedding_bytes) +
                               static_cast<double>(model->cost_per_token(s.kv_type).kv_bytes) *
                                   static_cast<double>(context);
    for (size_t i = first; i < cases.size(); ++i) cases[i].model_mb = model_bytes / 1e6;
  };
  bench_head(false, true);
  bench_head(true, false);

  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Case& k : cases) {
      nlohmann::json row = {{"phase", k.phase},
                            {"tokens", k.tokens},
                            {"threads", k.threads},
                            {"head", k.head},
                            {"tokens_per_s", k.tokens_per_s},
                            {"ceiling_tokens_per_s", k.ceiling_tokens_per_s},
                            {"ceiling_ratio", k.tokens_per_s / k.ceiling_tokens_per_s},
                            {"ceiling_ratio_min", k.ratio_min},
                            {"ceiling_ratio_max", k.ratio_max},
                            {"repeats", s.repeats},
                            {"head_share", k.head_share},
                            {"peak_rss_mb", k.peak_rss_mb},
                            {"model_mb", k.model_mb},
                            {"rss_ratio", k.peak_rss_mb / k.model_mb},
                            {k.phase == "decode" ? "read_gbps" : "int8_peak_gops", k.reference},
                            {"packed_mb", static_cast<double>(packed) / 1e6},
                            {"embedding_mb", static_cast<double>(embedding) / 1e6},
                            {"load_s", load_seconds}};
      if (k.phase == "decode") row["decode_after"] = s.decode_after;
      if (!k.speculate.empty()) {
        row["speculate"] = k.speculate;
        row["speedup"] = k.speedup;
        row["acceptance"] = k.acceptance;
        row["tokens_per_step"] = k.tokens_per_step;
      }
      out.push_back(row);
    }
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  std::printf("model %s: packed weights %s, embeddings %s, loaded in %.2f s\n", dir.c_str(),
              megabytes(packed).c_str(), megabytes(embedding).c_str(), load_seconds);
  std::printf("%-7s %6s %7s %10s %10s %7s %13s %10s %8s %9s  %s\n", "phase", "tokens", "threads",
              "tokens/s", "ceiling", "ratio", "ratio range", "head share", "RSS MB", "RSS/model",
              "head");
  for (const Case& k : cases)
    std::printf(
        "%-7s %6lld %7d %10.2f %10.2f %7.3f %6.3f-%6.3f %10s %8.0f %9.3f  %s\n", k.phase.c_str(),
        static_cast<long long>(k.tokens), k.threads, k.tokens_per_s, k.ceiling_tokens_per_s,
        k.tokens_per_s / k.ceiling_tokens_per_s, k.ratio_min, k.ratio_max,
        k.phase == "decode"
            ? (std::to_string(static_cast<int>(k.head_share * 100 + 0.5)) + "%").c_str()
            : "-",
        k.peak_rss_mb, k.peak_rss_mb / k.model_mb,
        k.speculate.empty() ? k.head.c_str()
                            : ("speculate " + k.speculate + ": " + format_speedup(k)).c_str());
  std::printf(
      "decode after a prompt of %lld tokens; ceilings probed beside each of the %d repeats (the "
      "one with the median ratio shown): decode against the read bandwidth of %zu MiB read after "
      "every token (%s), prompt against the int8 peak (%s, %d runs) before and after the "
      "repeat\n",
      static_cast<long long>(s.decode_after), s.repeats, kProbeChunk >> 20, "widest loads",
      dot_peak_name(probes.peak), kPeakRunsAround);
  return 0;
}

}  // namespace dq4::cli::bench
