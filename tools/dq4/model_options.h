#pragma once
// The options of every command that runs a model (generate, chat, perplexity, bench model,
// serve): the model directory, how its layers load, the KV cache type and the thread count.

#include <memory>
#include <string>

#include "args.h"
#include "dq4/engine/speculation.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/model/model.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::cli {

// -m/--model DIR, the load options (--activations, --quantize-dense), --quantize,
// --kv-cache-dtype and --threads.
void declare_model_options(Args& args);

// --quantize none|w4a8-ch|w4a8-g<G> as ModelOptions::quantize_group.
std::optional<int64_t> quantize_option(const Args& args);
attention::KvType kv_type_option(const Args& args);

struct LoadedModel {
  std::unique_ptr<ThreadPool> pool;  // --threads (else the process pool)
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the directory has no tokenizer.json
  ThreadPool& threads() { return pool ? *pool : ThreadPool::global(); }
};

// How a draft model (speculative decoding) loads: as stored, with the target's --activations and
// --quantize-dense.
ModelOptions draft_model_options(const Args& args);

// "N checkpoint tensor(s) ... : a, b, ... and M more": the count of `unused` and the first few.
std::string unused_tensor_list(const std::vector<std::string>& unused);

// Loads the draft model `speculative` names, if it names one, for `target` (its tokenizer and
// vocabulary checked; --activations and --quantize-dense as for the target), with
// warn_unused_tensors().
void load_draft(SpeculativeConfig& speculative, LoadedModel& target, const Args& args);

// Prints a warning on stderr naming the checkpoint tensors `model` loaded from `dir` left unused,
// if any: such a tensor is often a part of the model its architecture does not run, and the
// outputs then differ from the model's.
void warn_unused_tensors(const std::string& dir, const Model& model);

// Loads the model of -m with a progress bar on stderr; `quiet` leaves out the summary line
// (load time, packed bytes, resident memory) that is otherwise printed on stderr.
LoadedModel load_model(const Args& args, bool need_tokenizer, bool quiet = false);

}  // namespace dq4::cli
