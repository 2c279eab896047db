#pragma once
// promtool (Debian's prometheus package; scripts/install-deps.sh installs it) on a /metrics text.
// It parses the text (exit 1 on any format error) and then lints it (exit 3 with findings).

#include <string>

namespace dq4::test {

struct PromtoolCheck {
  int exit_code = -1;  // 127: promtool is not installed
  std::string output;  // one finding per line
};

PromtoolCheck promtool_check_metrics(const std::string& metrics_text);

// Checks that promtool ran, parsed the text, and found nothing but the colon of vLLM's metric
// names (vLLM's own /metrics has the same finding); returns the number of findings.
int expect_only_vllm_name_findings(const PromtoolCheck& check);

}  // namespace dq4::test
