#include "cli_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>

namespace dq4::test {
namespace {

std::string read_all(FILE* f) {
  std::string text;
  std::array<char, 4096> buffer;
  size_t got;
  while ((got = fread(buffer.data(), 1, buffer.size(), f)) > 0) text.append(buffer.data(), got);
  return text;
}

}  // namespace

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

CliResult run_command(const std::string& command) {
  CliResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return r;
  }
  r.out = read_all(pipe);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

CliResult run_node(const std::string& script_and_args) {
  CliResult r = run_command("node " + script_and_args + " 2>&1");
  if (r.exit_code == 127) ADD_FAILURE() << "node is not on PATH: run scripts/install-deps.sh";
  return r;
}

CliResult run_dq4(const std::string& args, const std::string& stdin_text, const std::string& env) {
  // Per-process names: ctest may run several test binaries at once.
  const std::string stem = testing::TempDir() + "dq4_cli_" + std::to_string(getpid());
  const std::string in_file = stem + "_stdin", err_file = stem + "_stderr";
  std::ofstream(in_file, std::ios::binary) << stdin_text;
  const std::string command = (env.empty() ? "" : env + " ") + DQ4_CLI_PATH + " " + args + " <" +
                              shell_quote(in_file) + " 2>" + shell_quote(err_file);
  CliResult r = run_command(command);
  if (FILE* f = fopen(err_file.c_str(), "r")) {
    r.err = read_all(f);
    fclose(f);
  }
  std::remove(in_file.c_str());
  std::remove(err_file.c_str());
  return r;
}

}  // namespace dq4::test
