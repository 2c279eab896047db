// End-to-end tests of the dq4 command-line tool: run the real binary, check exit codes and output.

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace {

using dq4::test::CliResult;

CliResult run(const std::string& args) { return dq4::test::run_dq4(args); }

CliResult run(const std::string& env, const std::string& args) {
  return dq4::test::run_dq4(args, "", env);
}

TEST(Cli, HelpListsTheCommands) {
  const CliResult r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("info"), std::string::npos);
  EXPECT_NE(r.out.find("bench"), std::string::npos);
}

TEST(Cli, UnknownCommandFails) {
  const CliResult r = run("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
}

TEST(Cli, NoCommandFails) { EXPECT_EQ(run("").exit_code, 2); }

TEST(Cli, InfoPrintsFeaturesAndTheChosenKernel) {
  const CliResult r = run("info");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cpu features:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("w4a8 kernel chosen:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reference"), std::string::npos) << r.out;
}

TEST(Cli, InfoHonoursDq4Isa) {
  const CliResult r = run("DQ4_ISA=reference", "info");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("w4a8 kernel chosen: reference (qai8dx_qsi4_f32_scalar_1x16) (forced by "
                       "DQ4_ISA)"),
            std::string::npos)
      << r.out;
}

TEST(Cli, Dq4IsaFamilyEntryForcesOnlyThatFamily) {
  const CliResult r = run("DQ4_ISA=dense:reference", "info");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dense kernel chosen: reference"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("w4a8 kernel chosen: reference"), std::string::npos) << r.out;
}

TEST(Cli, UnknownDq4IsaIsAClearError) {
  const CliResult r = run("DQ4_ISA=sse9", "info");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("DQ4_ISA='sse9' names no kernel"), std::string::npos) << r.err;
}

#if defined(__x86_64__)
// `dq4 info` says whether AMX is usable and why not; DQ4_ISA=amx runs it where it is and is an
// error naming that reason where it is not; the tile model is always there by name.
TEST(Cli, InfoSaysWhyAmxIsOffAndDq4IsaAmxFollowsIt) {
  const CliResult info = run("info");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const size_t at = info.out.find("\namx: ");
  ASSERT_NE(at, std::string::npos) << info.out;
  const size_t begin = at + 6;
  const std::string status = info.out.substr(begin, info.out.find('\n', begin) - begin);
  const CliResult forced = run("DQ4_ISA=amx", "info");
  if (status == "usable") {
    EXPECT_EQ(forced.exit_code, 0) << forced.err;
    EXPECT_NE(forced.out.find("w4a8 kernel chosen: amx "), std::string::npos) << forced.out;
  } else {
    EXPECT_EQ(forced.exit_code, 1) << forced.out;
    EXPECT_NE(forced.err.find("kernel 'amx' needs"), std::string::npos) << forced.err;
    EXPECT_NE(forced.err.find("; AMX: " + status), std::string::npos) << forced.err;
  }
  const CliResult model = run("DQ4_ISA=amx_model", "info");
  EXPECT_EQ(model.exit_code, 0) << model.err;
  EXPECT_NE(model.out.find("w4a8 kernel chosen: amx_model "), std::string::npos) << model.out;
}
#endif

TEST(Cli, UnknownOptionIsAClearError) {
  const CliResult r = run("info --bogus");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown option --bogus"), std::string::npos) << r.err;
}

TEST(Cli, EverySubcommandHasHelp) {
  for (const char* command : {"info --help", "bench --help", "bench kernels --help"}) {
    const CliResult r = run(command);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find("usage: dq4"), std::string::npos) << command << ": " << r.out;
  }
}

}  // namespace

namespace {

const char* kTinyBench =
    "bench kernels --kind w4a8 --shapes 128x256,67x172 --m 1,5 --group 0,32 --threads 1 "
    "--min-time 0.002 --cold-mib 8";

TEST(CliBench, JsonHasOneObjectPerCaseWithTheRequiredFields) {
  const CliResult r = run(std::string(kTinyBench) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json cases = nlohmann::json::parse(r.out);  // stdout is exactly one JSON array
  ASSERT_TRUE(cases.is_array());
  ASSERT_EQ(cases.size(), 8u);  // 2 shapes x 2 M x 2 groups x 1 thread count
  for (const auto& c : cases) {
    for (const char* field :
         {"isa", "variant", "n", "k", "m", "group", "threads", "gflops", "weight_gbps",
          "roofline_ratio", "roofline_bound", "bw_ratio", "peak_ratio", "speedup_vs_f32"})
      EXPECT_TRUE(c.contains(field)) << field << " missing in " << c.dump();
    EXPECT_GT(c["gflops"].get<double>(), 0.0) << c.dump();
    // The variant spells the types, then the kernel's ISA.
    EXPECT_EQ(c["variant"].get<std::string>().rfind("qai8dx_qsi4_f32_", 0), 0u) << c.dump();
    EXPECT_GT(c["roofline_ratio"].get<double>(), 0.0) << c.dump();
    EXPECT_TRUE(c["roofline_bound"] == "memory" || c["roofline_bound"] == "compute") << c.dump();
    EXPECT_EQ(c["bw_ratio"].is_null(), c["m"].get<int>() > 4) << c.dump();
    EXPECT_TRUE(c["peak_ratio"].is_null()) << "M < 64 has no peak ratio: " << c.dump();
    EXPECT_GT(c["speedup_vs_f32"].get<double>(), 0.0) << c.dump();
  }
}

TEST(CliBench, W4A16RowsAreComparedWithTheF32FmaPeak) {
  const CliResult r =
      run("bench kernels --kind w4a16 --shapes 128x256 --m 1,64 --group 0,32 --threads 1 "
          "--min-time 0.002 --cold-mib 8 --no-baseline --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json cases = nlohmann::json::parse(r.out);
  ASSERT_EQ(cases.size(), 4u);  // 2 M x 2 groups
  for (const auto& c : cases) {
    EXPECT_EQ(c["kind"], "w4a16") << c.dump();
    EXPECT_TRUE(c["int8_peak_gops"].is_null()) << c.dump();
    EXPECT_EQ(c["bw_ratio"].is_null(), c["m"].get<int>() > 4) << c.dump();
    EXPECT_EQ(c["quant_share"].is_null(), c["m"].get<int>() != 1) << c.dump();
#if defined(__x86_64__)
    EXPECT_GT(c["fma_peak_gflops"].get<double>(), 0.0) << c.dump();
    EXPECT_EQ(c["peak_ratio"].is_null(), c["m"].get<int>() < 64) << c.dump();
#endif
  }
}

TEST(CliBench, DenseRowsHaveTheSameFieldsWithoutGroups) {
  const CliResult r =
      run("bench kernels --kind dense-bf16,dense-f32 --shapes 128x256 --m 1,64 --threads 1 "
          "--min-time 0.002 --cold-mib 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json cases = nlohmann::json::parse(r.out);
  ASSERT_EQ(cases.size(), 4u);  // 2 kinds x 2 M
  for (const auto& c : cases) {
    EXPECT_TRUE(c["kind"] == "dense-bf16" || c["kind"] == "dense-f32") << c.dump();
    EXPECT_TRUE(c["group"].is_null()) << c.dump();
    EXPECT_TRUE(c["quant_share"].is_null()) << c.dump();
    EXPECT_EQ(c["bw_ratio"].is_null(), c["m"].get<int>() > 4) << c.dump();
    EXPECT_GT(c["speedup_vs_f32"].get<double>(), 0.0) << c.dump();
#if defined(__x86_64__)
    EXPECT_GT(c["fma_peak_gflops"].get<double>(), 0.0) << c.dump();
    EXPECT_EQ(c["peak_ratio"].is_null(), c["m"].get<int>() < 64) << c.dump();
#endif
  }
  EXPECT_LT(cases[0]["weight_bytes"].get<double>() * 1.9, cases[2]["weight_bytes"].get<double>())
      << "bf16 weights stay 2 bytes (f32: 4)";
}

TEST(CliBench, PlotWritesAnSvgRooflineWithAPointPerCase) {
  const std::string path = ::testing::TempDir() + "dq4_cli_roofline.svg";
  std::remove(path.c_str());
  const CliResult r = run(std::string(kTinyBench) + " --no-baseline --threads 1 --plot " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream file(path);
  const std::string svg((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 100);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t points = 0;
  for (size_t at = svg.find("<circle cx"); at != std::string::npos;
       at = svg.find("<circle cx", at + 1))
    ++points;
  EXPECT_EQ(points, 8u + 2u) << "8 cases and 2 legend marks (channelwise, G = 32)";
  EXPECT_NE(svg.find("GB/s x intensity"), std::string::npos) << "the bandwidth limit is drawn";
  std::remove(path.c_str());
  const CliResult bad = run(std::string(kTinyBench) + " --no-baseline --plot /nonexistent/x.svg");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("/nonexistent/x.svg"), std::string::npos) << bad.err;
}

TEST(CliBench, TableRunsOnTheReferenceKernel) {
  const CliResult r = run(std::string(kTinyBench) + " --isa reference --no-baseline");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("reference"), std::string::npos) << r.out;
}

TEST(CliBench, ModelCasesCarryTheirOwnCeilingProbes) {
  const CliResult r = run("bench model --synth tiny --quick --threads-list 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json cases = nlohmann::json::parse(r.out);
  ASSERT_EQ(cases.size(), 3u);  // prompt 128 and decode 32, then decode with the head quantized
  for (const auto& c : cases) {
    const bool decode = c["phase"] == "decode";
    EXPECT_EQ(c["tokens"], decode ? 32 : 128) << c.dump();
    EXPECT_GT(c["tokens_per_s"].get<double>(), 0.0) << c.dump();
    // The ratio is the shown repeat's speed over its own probe's ceiling, within the range.
    const double ratio = c["ceiling_ratio"].get<double>();
    EXPECT_DOUBLE_EQ(ratio,
                     c["tokens_per_s"].get<double>() / c["ceiling_tokens_per_s"].get<double>());
    EXPECT_LE(c["ceiling_ratio_min"].get<double>(), ratio) << c.dump();
    EXPECT_GE(c["ceiling_ratio_max"].get<double>(), ratio) << c.dump();
    if (decode) {
      EXPECT_GT(c["read_gbps"].get<double>(), 0.0) << c.dump();
      EXPECT_FALSE(c.contains("int8_peak_gops")) << c.dump();
    } else {
      EXPECT_FALSE(c.contains("read_gbps")) << c.dump();
    }
    // The probe's 256 MiB buffer is not the model's: a tiny model's peak RSS stays far below.
    EXPECT_GT(c["peak_rss_mb"].get<double>(), 0.0) << c.dump();
    EXPECT_LT(c["peak_rss_mb"].get<double>(), 200.0) << c.dump();
  }
  EXPECT_NE(cases[2]["head"].get<std::string>().find("W4A8"), std::string::npos) << cases[2];
}

// --decode-after sets the context the decode starts from, and its keys and values count in the
// ceiling: the same decode after a longer prompt reads more per token, so its ceiling is lower.
TEST(CliBench, ModelDecodeAfterALongerPrompt) {
  const auto decode_ceiling_work = [](const std::string& extra) {
    const CliResult r =
        run("bench model --synth tiny --quick --threads-list 1 --json --repeats 1" + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json cases = nlohmann::json::parse(r.out);
    const nlohmann::json& decode = cases.at(1);
    EXPECT_EQ(decode["phase"], "decode") << decode.dump();
    // Bytes per token: the probed bandwidth over the ceiling in tokens/s.
    return std::make_pair(
        decode["decode_after"].get<int64_t>(),
        decode["read_gbps"].get<double>() * 1e9 / decode["ceiling_tokens_per_s"].get<double>());
  };
  const auto [short_after, short_bytes] = decode_ceiling_work("");
  const auto [long_after, long_bytes] = decode_ceiling_work(" --decode-after 200");
  EXPECT_EQ(short_after, 16);
  EXPECT_EQ(long_after, 200);
  EXPECT_GT(long_bytes, short_bytes);
  const CliResult bad = run("bench model --synth tiny --quick --decode-after 0");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--decode-after"), std::string::npos) << bad.err;
}

TEST(CliBench, BadOptionsAreClearErrors) {
  CliResult r = run("bench kernels --shapes 12x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("12x"), std::string::npos) << r.err;
  r = run("bench kernels --group 48");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("multiple of 32, got 48"), std::string::npos) << r.err;
  r = run("bench kernels --isa sse9");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("sse9"), std::string::npos) << r.err;
  r = run("bench kernels --kind dense-f16");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown kind 'dense-f16'"), std::string::npos) << r.err;
  r = run("bench nonsense");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nonsense"), std::string::npos) << r.err;
}

}  // namespace
