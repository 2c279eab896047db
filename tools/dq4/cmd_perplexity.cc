// dq4 perplexity: a model's perplexity over a text file.

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "dq4/engine/perplexity.h"
#include "dq4/kernels/error.h"
#include "model_options.h"
#include "progress.h"

namespace dq4::cli {

int run_perplexity(int argc, char** argv, int first) {
  Args args("perplexity",
            "Perplexity of a model over a text file, in non-overlapping windows of --ctx tokens\n"
            "(BOS first when the model has one), with its standard error.");
  declare_model_options(args);
  args.option("file", "FILE", "the text (UTF-8)").short_name('f', "file");
  args.option("ctx", "N", "window size in tokens", "512");
  args.option("json", "", "print one JSON object");
  if (!args.parse(argc, argv, first)) return 0;
  const std::string path = args.value("file");
  if (path.empty()) throw Error("missing option --file (-f FILE)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();

  LoadedModel loaded = load_model(args, /*need_tokenizer=*/true, args.flag("json"));
  const std::vector<int32_t> tokens = loaded.tokenizer->encode(text.str(), false);
  const int64_t ctx = args.integer("ctx");
  if (ctx > loaded.model->max_context())
    throw Error("option --ctx: " + std::to_string(ctx) + " is longer than the model's context of " +
                std::to_string(loaded.model->max_context()));
  const int32_t bos = loaded.tokenizer->bos_id().value_or(loaded.model->config().bos_token_id);
  PerplexityResult r;
  {
    ProgressBar bar("perplexity");
    r = perplexity(*loaded.model, tokens, ctx, bos, &loaded.threads(),
                   [&bar](int64_t done, int64_t total) { bar.update(done, total, "windows"); });
  }
  if (args.flag("json")) {
    const nlohmann::json out = {{"perplexity", r.perplexity},
                                {"standard_error", r.standard_error},
                                {"mean_nll", r.mean_nll},
                                {"windows", r.windows},
                                {"scored_tokens", r.scored_tokens},
                                {"ctx", ctx},
                                {"seconds", r.seconds}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("perplexity %.4f +/- %.4f over %lld tokens (%lld windows of %lld), %.1f s\n",
                r.perplexity, r.standard_error, static_cast<long long>(r.scored_tokens),
                static_cast<long long>(r.windows), static_cast<long long>(ctx), r.seconds);
  }
  return 0;
}

}  // namespace dq4::cli
