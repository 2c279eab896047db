#include "metrics.h"

#include <cmath>
#include <cstdio>

namespace dq4::server {
namespace {

// Prometheus label values escape backslash, double quote and newline.
std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string format_number(double x) {
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  if (std::isnan(x)) return "NaN";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", x);
  return buffer;
}

class Writer {
 public:
  explicit Writer(const std::string& model_name)
      : labels_("model_name=\"" + escape_label(model_name) + "\"") {}

  void header(const char* name, const char* type, const char* help) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, double value, const std::string& extra_labels = "") {
    out_ += name + "{" + labels_ + extra_labels + "} " + format_number(value) + "\n";
  }
  void gauge(const char* name, const char* help, double value) {
    header(name, "gauge", help);
    sample(name, value);
  }
  void counter(const char* name, const char* help, double value) {
    header(name, "counter", help);
    sample(name, value);
  }
  void histogram(const char* name, const char* help, const Histogram& h) {
    header(name, "histogram", help);
    const std::string n = name;
    for (size_t i = 0; i < h.upper_bounds.size() && i < h.cumulative.size(); ++i)
      sample(n + "_bucket", double(h.cumulative[i]),
             ",le=\"" + format_number(h.upper_bounds[i]) + "\"");
    sample(n + "_bucket", double(h.count), ",le=\"+Inf\"");
    sample(n + "_sum", h.sum);
    sample(n + "_count", double(h.count));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string labels_;
  std::string out_;
};

}  // namespace

std::string render_metrics(const EngineStats& s, const HttpCounters& http,
                           const std::string& model_name) {
  Writer w(model_name);
  w.gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
          double(s.running));
  w.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
          double(s.waiting));
  w.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kv_usage);
  w.gauge("dq4_kv_cache_blocks", "Blocks in the KV cache pool.", double(s.kv_blocks_total));
  w.gauge("dq4_kv_cache_blocks_used", "KV cache blocks held by sequences.",
          double(s.kv_blocks_used));
  w.counter("vllm:prefix_cache_queries_total",
            "Prefix cache queries, in terms of number of queried tokens.",
            double(s.prefix_cache_queries));
  w.counter("vllm:prefix_cache_hits_total",
            "Prefix cache hits, in terms of number of cached tokens.", double(s.prefix_cache_hits));
  w.counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.",
            double(s.preemptions));
  w.counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
            double(s.prompt_tokens));
  w.counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
            double(s.generation_tokens));
  // Speculative decoding's counters, when the server speculates (vLLM's names).
  const SpeculationStats& spec = s.speculation;
  if (!spec.accepted_per_position.empty()) {
    w.counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.",
              double(spec.drafts));
    w.counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.",
              double(spec.draft_tokens));
    w.counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.",
              double(spec.accepted_tokens));
    w.header("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
             "Accepted tokens per draft position.");
    for (size_t i = 0; i < spec.accepted_per_position.size(); ++i)
      w.sample("vllm:spec_decode_num_accepted_tokens_per_pos_total",
               double(spec.accepted_per_position[i]), ",position=\"" + std::to_string(i) + "\"");
  }
  w.header("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  w.sample("vllm:request_success_total", double(s.requests_finished_stop),
           ",finished_reason=\"stop\"");
  w.sample("vllm:request_success_total", double(s.requests_finished_length),
           ",finished_reason=\"length\"");
  w.sample("vllm:request_success_total", double(s.requests_finished_abort),
           ",finished_reason=\"abort\"");
  w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              s.time_to_first_token);
  w.histogram("vllm:time_per_output_token_seconds",
              "Histogram of time per output token in seconds.", s.time_per_output_token);
  w.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              s.inter_token_latency);
  w.histogram("vllm:e2e_request_latency_seconds",
              "Histogram of end to end request latency in seconds.", s.e2e_request_latency);
  w.histogram("vllm:request_queue_time_seconds",
              "Histogram of time spent in WAITING phase for request.", s.queue_time);
  w.gauge("dq4_http_active_requests", "HTTP requests not yet answered completely.",
          double(http.active_exchanges));
  w.gauge("dq4_http_open_connections", "Open HTTP connections.", double(http.open_connections));
  return w.take();
}

}  // namespace dq4::server
