#pragma once
// GET /metrics: the engine's statistics in the Prometheus text format (version 0.0.4), under
// vLLM's metric names so that dashboards and autoscalers written for vLLM read them unchanged.
// Those names hold a colon ("vllm:..."), which promtool's linter flags (colons are meant for
// recording rules); dq4's own metrics ("dq4_...") avoid it.

#include <string>

#include "dq4/engine/engine.h"

namespace dq4::server {

// What the HTTP side counts itself.
struct HttpCounters {
  int64_t open_connections = 0;
  int64_t active_exchanges = 0;  // requests not yet answered completely
};

std::string render_metrics(const EngineStats& stats, const HttpCounters& http,
                           const std::string& model_name);

}  // namespace dq4::server
