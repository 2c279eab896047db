#pragma once
// Runs the real dq4 binary (DQ4_CLI_PATH, set by CMake) for the end-to-end tests.

#include <string>

namespace dq4::test {

struct CliResult {
  int exit_code = -1;  // -1 when the process did not exit normally
  std::string out;     // stdout
  std::string err;     // stderr
};

// Runs "dq4 <args>" through the shell (so args may quote and redirect), with `stdin_text` as its
// standard input. `env` is prepended as "VAR=value ..." assignments.
CliResult run_dq4(const std::string& args, const std::string& stdin_text = "",
                  const std::string& env = "");

// Runs `command` through the shell: its exit code and standard output (stderr goes where the
// command sends it; `2>&1` joins it to the output).
CliResult run_command(const std::string& command);

// Runs a node script ("path/script.mjs args..."), stderr joined to the output; a failed test
// when node is not on PATH.
CliResult run_node(const std::string& script_and_args);

// `text` quoted for the shell.
std::string shell_quote(const std::string& text);

}  // namespace dq4::test
