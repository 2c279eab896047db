#include "promtool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dq4::test {

PromtoolCheck promtool_check_metrics(const std::string& metrics_text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("dq4_metrics_" + std::to_string(getpid()) + ".txt"))
                               .string();
  std::ofstream(path) << metrics_text;
  PromtoolCheck check;
  if (FILE* pipe = popen(("promtool check metrics < " + path + " 2>&1").c_str(), "r")) {
    char buffer[512];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) check.output.append(buffer, n);
    check.exit_code = WEXITSTATUS(pclose(pipe));
  }
  std::filesystem::remove(path);
  return check;
}

int expect_only_vllm_name_findings(const PromtoolCheck& check) {
  EXPECT_NE(check.exit_code, -1) << "popen failed";
  EXPECT_NE(check.exit_code, 127) << "promtool not found: run scripts/install-deps.sh";
  EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 3) << check.output;
  std::istringstream lines(check.output);
  int findings = 0;
  for (std::string line; std::getline(lines, line); ++findings)
    EXPECT_TRUE(line.rfind("vllm:", 0) == 0 &&
                line.find(" metric names should not contain ':'") != std::string::npos)
        << line;
  return findings;
}

}  // namespace dq4::test
