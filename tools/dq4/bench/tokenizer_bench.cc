#include "bench/tokenizer_bench.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "dq4/kernels/error.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::cli::bench {
namespace {

namespace fs = std::filesystem;

struct Corpus {
  std::string name, description, text;
};

struct Result {
  size_t tokens = 0;
  double mb_per_s = 0;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The files under `dirs` whose names end in one of `extensions`, sorted, concatenated, then
// repeated up to `target` bytes. Returns how many files went in.
size_t gather(const std::vector<fs::path>& dirs, const std::vector<std::string>& extensions,
              size_t target, std::string& text) {
  std::vector<fs::path> files;
  for (const fs::path& dir : dirs) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string ext = entry.path().extension().string();
      if (std::find(extensions.begin(), extensions.end(), ext) != extensions.end())
        files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::string once;
  for (const fs::path& f : files) once += read_file(f);
  if (once.empty()) return 0;
  while (text.size() < target) text += once;
  text.resize(target);
  // Cut back to a whole UTF-8 character.
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();
  if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  return files.size();
}

Result time_dq4(const Tokenizer& tokenizer, const std::string& text) {
  using Clock = std::chrono::steady_clock;
  Result r;
  r.tokens = tokenizer.encode(text).size();  // warm-up (fills the pre-token cache, as HF's)
  int runs = 0;
  const auto start = Clock::now();
  double seconds = 0;
  do {
    tokenizer.encode(text);
    ++runs;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (seconds < 1.0 || runs < 3);
  r.mb_per_s = static_cast<double>(text.size()) * runs / seconds / 1e6;
  return r;
}

// Hugging Face tokenizers through tests/js/tokenizer_reference.js --bench; nullopt (with the
// reason in `why`) when node or the npm package is not there.
std::optional<Result> time_hf(const std::string& script, const std::string& tokenizer_json,
                              const std::string& text, std::string& why) {
  if (!fs::exists(script)) {
    why = script + " not found (run from the repository root or pass --repo)";
    return std::nullopt;
  }
  const std::string stem =
      (fs::temp_directory_path() / ("dq4_tok_bench_" + std::to_string(getpid()))).string();
  std::ofstream(stem + ".txt", std::ios::binary) << text;
  const std::string command = "node '" + script + "' --bench '" + tokenizer_json + "' '" + stem +
                              ".txt' > '" + stem + ".json'";
  const int status = std::system(command.c_str());
  const std::string output = read_file(stem + ".json");
  fs::remove(stem + ".txt");
  fs::remove(stem + ".json");
  if (status != 0) {
    why = WIFEXITED(status) && WEXITSTATUS(status) == 127
              ? "node not found (scripts/install-deps.sh installs it)"
              : "'" + command + "' failed (is tests/js/node_modules installed?)";
    return std::nullopt;
  }
  const auto json = nlohmann::json::parse(output, nullptr, false);
  if (!json.is_object() || !json.contains("seconds_per_encode")) {
    why = "unexpected output from " + script + ": " + output;
    return std::nullopt;
  }
  Result r;
  r.tokens = json["tokens"].get<size_t>();
  r.mb_per_s = json["bytes"].get<double>() / json["seconds_per_encode"].get<double>() / 1e6;
  return r;
}

}  // namespace

int run_tokenizer_bench(int argc, char** argv, int first) {
  Args args("bench tokenizer",
            "Encode throughput (MB/s, 1 MB = 10^6 bytes of UTF-8 input, one thread) of dq4's\n"
            "tokenizer and of Hugging Face tokenizers (npm `tokenizers`, run by node on\n"
            "tests/js/tokenizer_reference.js) on the same text, each timed for >= 1 s after a\n"
            "warm-up encode. Corpora, built without downloads: English = the Markdown files of\n"
            "the docs directory and of the fixtures (their READMEs); code = the repository's\n"
            "C++ sources (src, tools, tests, fuzz, bench); each concatenated in\n"
            "path order and repeated to --mib.");
  args.option("tokenizer", "DIR", "directory holding tokenizer.json")
      .short_name('t', "tokenizer")
      .option("repo", "DIR", "the dq4 repository (sources, tests/js)", ".")
      .option("docs", "DIR", "Markdown documentation (default: $DQ4_FIXTURES/../docs)")
      .option("mib", "N", "size of each corpus in MiB", "4")
      .option("json", "", "print JSON instead of a table");
  if (!args.parse(argc, argv, first)) return 0;
  const std::string dir = args.value("tokenizer");
  if (dir.empty()) throw Error("bench tokenizer needs --tokenizer DIR (see --help)");
  const int64_t mib = args.integer("mib");
  if (mib < 1 || mib > 1024) throw Error("option --mib needs 1..1024, got " + std::to_string(mib));
  const size_t target = static_cast<size_t>(mib) << 20;
  const fs::path repo = args.value("repo");
  const char* fixtures = std::getenv("DQ4_FIXTURES");
  const fs::path fixtures_dir = fixtures ? fixtures : (repo / "../shared/fixtures").string();
  const fs::path docs =
      args.value("docs").empty() ? fixtures_dir / "../docs" : fs::path(args.value("docs"));

  std::vector<Corpus> corpora(2);
  corpora[0].name = "english";
  const size_t docs_files = gather({docs, fixtures_dir}, {".md"}, target, corpora[0].text);
  corpora[0].description = std::to_string(docs_files) + " Markdown files of " + docs.string() +
                           " and " + fixtures_dir.string();
  corpora[1].name = "code";
  const size_t code_files =
      gather({repo / "src", repo / "tools", repo / "tests", repo / "fuzz", repo / "bench"},
             {".cc", ".h"}, target, corpora[1].text);
  corpora[1].description = std::to_string(code_files) + " C++ files under " + repo.string();
  for (const Corpus& c : corpora)
    if (c.text.empty())
      throw Error("bench tokenizer: no text found for the " + c.name + " corpus (" + c.description +
                  "); see --repo and --docs");

  const Tokenizer tokenizer = Tokenizer::from_directory(dir);
  const std::string script = (repo / "tests/js/tokenizer_reference.js").string();
  nlohmann::json report = {{"tokenizer", dir}, {"corpora", nlohmann::json::array()}};
  for (const Corpus& c : corpora) {
    const Result ours = time_dq4(tokenizer, c.text);
    std::string why;
    const std::optional<Result> hf = time_hf(script, dir + "/tokenizer.json", c.text, why);
    nlohmann::json row = {{"corpus", c.name},
                          {"text", c.description},
                          {"bytes", c.text.size()},
                          {"tokens", ours.tokens},
                          {"dq4_mb_per_s", ours.mb_per_s}};
    if (hf) {
      row["hf_mb_per_s"] = hf->mb_per_s;
      row["hf_tokens"] = hf->tokens;
      row["speedup"] = ours.mb_per_s / hf->mb_per_s;
    } else {
      row["hf_unavailable"] = why;
    }
    report["corpora"].push_back(row);
  }
  if (args.flag("json")) {
    std::printf("%s\n", report.dump(2).c_str());
    return 0;
  }
  std::printf("tokenizer: %s (encode, add_special_tokens=false, one thread)\n", dir.c_str());
  for (const auto& row : report["corpora"])
    std::printf("%-8s %s\n", row["corpus"].get<std::string>().c_str(),
                row["text"].get<std::string>().c_str());
  std::printf("\n%-8s %10s %10s %12s %12s %8s\n", "corpus", "MB", "tokens", "dq4 MB/s", "HF MB/s",
              "dq4/HF");
  for (const auto& row : report["corpora"]) {
    std::printf("%-8s %10.2f %10zu %12.2f", row["corpus"].get<std::string>().c_str(),
                row["bytes"].get<double>() / 1e6, row["tokens"].get<size_t>(),
                row["dq4_mb_per_s"].get<double>());
    if (row.contains("hf_mb_per_s")) {
      std::printf(" %12.2f %7.2fx%s\n", row["hf_mb_per_s"].get<double>(),
                  row["speedup"].get<double>(),
                  row["hf_tokens"] == row["tokens"] ? "" : "  (token counts differ!)");
    } else {
      std::printf("  HF n/a: %s\n", row["hf_unavailable"].get<std::string>().c_str());
    }
  }
  return 0;
}

}  // namespace dq4::cli::bench
