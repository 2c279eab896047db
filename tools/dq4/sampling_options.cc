#include "sampling_options.h"

#include "dq4/kernels/error.h"

namespace dq4::cli {

void declare_sampling_options(Args& args) {
  args.option("n-predict", "N", "tokens to generate at most", "256").short_name('n', "n-predict");
  args.option("temp", "T", "temperature; 0 = greedy", "0.8");
  args.option("top-k", "K", "keep the K most likely tokens; 0 = all", "40");
  args.option("top-p", "P", "nucleus sampling threshold", "0.95");
  args.option("min-p", "P", "drop tokens below P x the top probability", "0.05");
  args.option("repeat-penalty", "R", "repetition penalty over prompt and output; 1 = off", "1");
  args.option("presence-penalty", "X", "OpenAI presence penalty", "0");
  args.option("frequency-penalty", "X", "OpenAI frequency penalty", "0");
  args.option("seed", "S", "random seed (same seed, same output); default: random");
  args.option("stop", "TEXT", "stop before this text (repeatable)");
  args.repeatable("stop");
  args.option("ignore-eos", "", "do not stop at the model's end-of-sequence tokens");
}

SamplingParams sampling_params(const Args& args) {
  SamplingParams p;
  p.temperature = static_cast<float>(args.number("temp"));
  p.top_k = static_cast<int>(args.integer("top-k"));
  p.top_p = static_cast<float>(args.number("top-p"));
  p.min_p = static_cast<float>(args.number("min-p"));
  p.repetition_penalty = static_cast<float>(args.number("repeat-penalty"));
  p.presence_penalty = static_cast<float>(args.number("presence-penalty"));
  p.frequency_penalty = static_cast<float>(args.number("frequency-penalty"));
  if (!args.value("seed").empty()) {
    const int64_t seed = args.integer("seed");
    if (seed < 0) throw Error("option --seed: expected a non-negative integer");
    p.seed = static_cast<uint64_t>(seed);
  }
  p.validate();
  return p;
}

StopConditions stop_conditions(const Args& args, const Model& model) {
  StopConditions s;
  s.max_tokens = args.integer("n-predict");
  if (s.max_tokens <= 0) throw Error("option -n/--n-predict: must be positive");
  s.stop_strings = args.values("stop");
  for (const std::string& stop : s.stop_strings)
    if (stop.empty()) throw Error("option --stop: empty text");
  if (!args.flag("ignore-eos")) s.stop_ids = model.eos_ids();
  return s;
}

}  // namespace dq4::cli
