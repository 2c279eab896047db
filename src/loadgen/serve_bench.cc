#include "dq4/loadgen/serve_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "dq4/kernels/error.h"
#include "http_client.h"

namespace dq4 {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Timing {
  bool ok = false;
  std::string error;
  double ttft = 0, e2e = 0;
  std::vector<double> itl;
  int64_t output_tokens = 0, prompt_tokens = 0;
};

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string auth_header(const ServeBenchOptions& o) {
  return o.api_key.empty() ? "" : "Authorization: Bearer " + o.api_key + "\r\n";
}

// The text a streamed chunk adds (completions' text or chat's delta.content).
std::string chunk_text(const json& chunk) {
  if (!chunk.contains("choices") || !chunk["choices"].is_array()) return "";
  std::string text;
  for (const json& c : chunk["choices"]) {
    if (c.contains("text") && c["text"].is_string()) text += c["text"].get<std::string>();
    if (c.contains("delta") && c["delta"].is_object() && c["delta"].contains("content") &&
        c["delta"]["content"].is_string())
      text += c["delta"]["content"].get<std::string>();
  }
  return text;
}

class Runner {
 public:
  Runner(const ServeBenchOptions& options, std::string model)
      : o_(options), base_(server::parse_base_url(options.url)), model_(std::move(model)) {
    std::mt19937_64 rng(options.seed);
    for (int64_t i = 0; i < options.num_prompts + 1; ++i) bodies_.push_back(body(i, rng));
  }

  // One streamed request over `client` (reconnected when the server closed it).
  Timing run(std::optional<server::HttpClient>& client, int64_t index, Clock::time_point start) {
    Timing t;
    try {
      if (!client) client.emplace(base_.host, base_.port, o_.timeout_seconds);
      const std::string path = base_.path + (o_.chat ? "/v1/chat/completions" : "/v1/completions");
      client->send("POST", path, bodies_[size_t(index)], auth_header(o_));
      const server::HttpReply head = client->read_head();
      if (head.status != 200) {
        std::string body;
        while (auto piece = client->read_chunk()) body += *piece;
        throw Error("HTTP " + std::to_string(head.status) + ": " + body.substr(0, 300));
      }
      std::string pending;
      Clock::time_point last{};
      int64_t text_events = 0;
      bool done = false;
      while (auto piece = client->read_chunk()) {
        pending += *piece;
        for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
          const std::string event = pending.substr(0, end);
          pending.erase(0, end + 2);
          if (event.rfind("data: ", 0) != 0) continue;
          const std::string data = event.substr(6);
          if (data == "[DONE]") {
            done = true;
            continue;
          }
          const json chunk = json::parse(data);
          if (chunk.contains("usage") && chunk["usage"].is_object()) {
            t.output_tokens = chunk["usage"].value("completion_tokens", int64_t{0});
            t.prompt_tokens = chunk["usage"].value("prompt_tokens", int64_t{0});
          }
          if (chunk_text(chunk).empty()) continue;
          const Clock::time_point now = Clock::now();
          if (text_events++ == 0)
            t.ttft = seconds_between(start, now);
          else
            t.itl.push_back(seconds_between(last, now));
          last = now;
        }
      }
      if (!done) throw Error("the stream ended without data: [DONE]");
      if (t.output_tokens == 0) t.output_tokens = text_events;
      t.e2e = seconds_between(start, Clock::now());
      t.ok = text_events > 0;
      if (!t.ok) t.error = "no text came back";
      if (head.headers.count("connection") && head.headers.at("connection") == "close")
        client.reset();
    } catch (const std::exception& e) {
      t.error = e.what();
      client.reset();
    }
    return t;
  }

  size_t count() const { return bodies_.size() - 1; }  // bodies_[0]: the warm-up

 private:
  std::string body(int64_t i, std::mt19937_64& rng) const {
    json b = {{"model", model_},
              {"max_tokens", o_.output_len},
              {"stream", true},
              {"stream_options", {{"include_usage", true}}},
              {"temperature", 0}};
    if (o_.ignore_eos) b["ignore_eos"] = true;
    json prompt;
    if (!o_.prompts.empty()) {
      prompt = o_.prompts[size_t(i) % o_.prompts.size()];
    } else {
      std::uniform_int_distribution<int64_t> id(o_.min_token_id, o_.max_token_id - 1);
      prompt = json::array();
      for (int64_t k = 0; k < o_.input_len; ++k) prompt.push_back(id(rng));
    }
    if (o_.chat)
      b["messages"] = json::array({{{"role", "user"}, {"content", prompt}}});
    else
      b["prompt"] = prompt;
    return b.dump();
  }

  const ServeBenchOptions& o_;
  server::BaseUrl base_;
  std::string model_;
  std::vector<std::string> bodies_;
};

std::string first_model(const ServeBenchOptions& o) {
  const server::BaseUrl base = server::parse_base_url(o.url);
  server::HttpClient client(base.host, base.port, 30);
  client.send("GET", base.path + "/v1/models", "", auth_header(o));
  const server::HttpReply reply = client.read_reply();
  if (reply.status != 200)
    throw Error(o.url + "/v1/models: HTTP " + std::to_string(reply.status) + ": " + reply.body);
  const json models = json::parse(reply.body, nullptr, false);
  if (!models.is_object() || !models.contains("data") || !models["data"].is_array() ||
      models["data"].empty() || !models["data"][0].contains("id"))
    throw Error(o.url + "/v1/models: no model listed");
  return models["data"][0]["id"].get<std::string>();
}

LatencySummary summarize(std::vector<double> v) {
  LatencySummary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  auto at = [&](double q) {  // linear interpolation, as numpy.percentile
    const double pos = q * double(v.size() - 1);
    const size_t lo = size_t(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
  };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  return s;
}

}  // namespace

ServeBenchResult run_serve_bench(const ServeBenchOptions& o) {
  if (o.num_prompts < 1) throw Error("--num-prompts must be at least 1");
  if (o.output_len < 1) throw Error("--output-len must be at least 1");
  if (o.prompts.empty() &&
      (o.input_len < 1 || o.min_token_id < 0 || o.max_token_id <= o.min_token_id))
    throw Error("random prompts need --input-len >= 1 and a non-empty token id range");
  if (o.concurrency < 1 || o.concurrency > 1024) throw Error("--concurrency must be 1 to 1024");
  if (!(o.request_rate >= 0)) throw Error("--request-rate must be >= 0");
  Runner runner(o, o.model.empty() ? first_model(o) : o.model);

  {
    std::optional<server::HttpClient> client;
    const Timing warm = runner.run(client, 0, Clock::now());
    if (!warm.ok) throw Error("the warm-up request failed: " + warm.error);
  }

  // Arrival times: all at once (bounded by the concurrency), or Poisson at request_rate.
  std::vector<double> arrival(runner.count(), 0.0);
  if (o.request_rate > 0) {
    std::mt19937_64 rng(o.seed + 1);
    std::exponential_distribution<double> gap(o.request_rate);
    double t = 0;
    for (double& a : arrival) a = (t += gap(rng));
  }
  std::vector<Timing> timings(runner.count());
  std::atomic<size_t> next{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < o.concurrency; ++w)
    workers.emplace_back([&] {
      std::optional<server::HttpClient> client;
      for (size_t i; (i = next++) < timings.size();) {
        const Clock::time_point due = start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(arrival[i]));
        std::this_thread::sleep_until(due);
        // Latency counts from sending, as vllm bench serve counts it: the time a request waits
        // for a free slot of --concurrency is the client's queue, not the server's latency.
        timings[i] = runner.run(client, int64_t(i) + 1, Clock::now());
      }
    });
  for (std::thread& t : workers) t.join();

  ServeBenchResult r;
  r.concurrency = o.concurrency;
  r.request_rate = o.request_rate;
  r.duration_seconds = seconds_between(start, Clock::now());
  std::vector<double> ttft, tpot, itl, e2e;
  for (const Timing& t : timings) {
    if (!t.ok) {
      if (r.first_error.empty()) r.first_error = t.error;
      r.failed++;
      continue;
    }
    r.completed++;
    r.output_tokens += t.output_tokens;
    r.input_tokens += t.prompt_tokens;
    ttft.push_back(t.ttft);
    e2e.push_back(t.e2e);
    if (t.output_tokens > 1) tpot.push_back((t.e2e - t.ttft) / double(t.output_tokens - 1));
    itl.insert(itl.end(), t.itl.begin(), t.itl.end());
  }
  r.output_tokens_per_second = double(r.output_tokens) / r.duration_seconds;
  r.requests_per_second = double(r.completed) / r.duration_seconds;
  r.ttft = summarize(ttft);
  r.tpot = summarize(tpot);
  r.itl = summarize(itl);
  r.e2e = summarize(e2e);
  return r;
}

}  // namespace dq4
