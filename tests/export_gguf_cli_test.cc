// dq4 export-gguf end to end: a quantized synthetic model to a Q4_0 GGUF, the report, errors.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

TEST(ExportGgufCli, QuantizedModelBecomesQ4_0) {
  ScratchDir scratch;
  const std::string model = scratch.file("m"), q = scratch.file("q"), gguf = scratch.file("m.gguf");
  ASSERT_EQ(run_dq4("synth -o " + shell_quote(model) + " --preset tiny-qwen2 --intermediate 128")
                .exit_code,
            0);
  ASSERT_EQ(run_dq4("quantize " + shell_quote(model) + " -o " + shell_quote(q)).exit_code, 0);
  CliResult r = run_dq4("export-gguf " + shell_quote(q) + " -o " + shell_quote(gguf));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("architecture qwen2, Q4_0, 27 tensors (14 Q4_0)"), std::string::npos)
      << r.out;
  std::ifstream in(gguf, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4), "GGUF");

  r = run_dq4("export-gguf " + shell_quote(q) + " -o " + shell_quote(gguf));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("exists (use --force"), std::string::npos) << r.err;
  EXPECT_EQ(
      run_dq4("export-gguf " + shell_quote(q) + " -o " + shell_quote(gguf) + " --force").exit_code,
      0);
}

TEST(ExportGgufCli, ErrorsExitOne) {
  ScratchDir scratch;
  const CliResult help = run_dq4("export-gguf --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Q4_0"), std::string::npos);
  const std::pair<std::string, std::string> cases[] = {
      {"export-gguf " + shell_quote(scratch.path()), "missing option --output"},
      {"export-gguf " + shell_quote(scratch.file("none")) + " -o " +
           shell_quote(scratch.file("x.gguf")),
       "config.json"},
      {"export-gguf " + shell_quote(fixtures_dir() + "/stories260K-hf-w4a16-ct") + " -o " +
           shell_quote(scratch.file("x.gguf")),
       "channelwise scales"},
  };
  for (const auto& [command, message] : cases) {
    const CliResult r = run_dq4(command);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find(message), std::string::npos) << command << ": " << r.err;
    EXPECT_EQ(r.err.find("export-gguf: error: export-gguf:"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(scratch.file("x.gguf")));
}

}  // namespace
}  // namespace dq4::test
