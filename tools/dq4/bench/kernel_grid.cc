#include "bench/kernel_grid.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "bench/attention_cases.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::cli::bench {
namespace {

// The matrices a model runs (q+k+v and gate+up fused, as Linear loads them): Llama-3.2-1B
// q+k+v, o, gate+up, down; Llama-3.1-8B q+k+v, o, gate+up, down; the 1B model's lm_head.
constexpr const char* kModelShapes1B = "3072x2048,2048x2048,16384x2048,2048x8192";
constexpr const char* kFullShapes =
    "3072x2048,2048x2048,16384x2048,2048x8192,6144x4096,4096x4096,28672x4096,4096x14336,"
    "128256x2048";
constexpr const char* kFullMs = "1,2,4,8,16,32,64,128,256,512";
constexpr const char* kFullGroups = "0,32,128";
constexpr const char* kFullMinTime = "0.1";

// --quick: the 1B model's layers at decode-, batch- and prefill-sized M.
constexpr const char* kQuickShapes = kModelShapes1B;
constexpr const char* kQuickMs = "1,4,16,64,256";
constexpr const char* kQuickGroups = "0,32";
constexpr const char* kQuickMinTime = "0.05";

// The option's value, else `fallback`.
std::string value_or(const Args& args, const std::string& name, const char* fallback) {
  const std::string v = args.value(name);
  return v.empty() ? fallback : v;
}

std::string kind_names() {
  std::string out;
  for (const char* kind : kKernelKinds) out += std::string(out.empty() ? "" : ",") + kind;
  return out;
}

}  // namespace

void declare_kernel_bench_options(Args& args) {
  std::string quick = "a subset in well under two minutes: shapes ";
  quick.append(kQuickShapes)
      .append(", M ")
      .append(kQuickMs)
      .append(", min-time ")
      .append(kQuickMinTime);
  args.option("quick", "", quick)
      .option("kind", "LIST", "kernel kinds to measure (default: all of " + kind_names() + ")")
      .option("json", "",
              "print one JSON array (an object per case) on stdout instead of the table")
      .option(
          "shapes", "NxK,...",
          "weight shapes, N output channels x K inputs (default: the fused layers of Llama-3.2-1B "
          "and Llama-3.1-8B, and the 1B lm_head)")
      .option("m", "LIST", std::string("activation rows (default: ") + kFullMs + ")")
      .option("group", "LIST",
              std::string("group sizes along K, 0 = channelwise (default: ") + kFullGroups + ")")
      .option("threads", "LIST",
              "thread counts, each at most the pool size set by DQ4_THREADS (default: 1,2)")
      .option("isa", "NAME",
              "kernel to measure, in DQ4_ISA's form: reference, avx2, avx512_vnni, avx512_bf16, "
              "dense:avx512_bf16, ... (a kind lacking the name keeps its own; default: the one "
              "dq4 chooses)")
      .option("min-time", "SECONDS",
              std::string("time spent per case and operand, at least 3 calls (default: ") +
                  kFullMinTime + ")")
      .option("no-baseline", "", "skip the OpenBLAS f32 baseline")
      .option("plot", "FILE.svg",
              "also draw the roofline: GFLOP/s against M with the read-bandwidth and compute-peak "
              "limits of the same run, one panel per thread count")
      .option("cold-mib", "MIB",
              "MiB the copies of each cold operand and the bandwidth probe cover (default: 4x the "
              "last-level cache)");
}

std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> out;
  for (const std::string& item : split_commas(text)) {
    const size_t x = item.find('x');
    const std::string n_text = x == std::string::npos ? "" : item.substr(0, x);
    const std::string k_text = x == std::string::npos ? "" : item.substr(x + 1);
    char* end_n = nullptr;
    char* end_k = nullptr;
    const long long n = std::strtoll(n_text.c_str(), &end_n, 10);
    const long long k = std::strtoll(k_text.c_str(), &end_k, 10);
    if (n_text.empty() || k_text.empty() || *end_n != '\0' || *end_k != '\0' || n <= 0 || k <= 0)
      throw Error("option --shapes needs comma-separated NxK with positive N and K, got '" + item +
                  "'");
    out.push_back({n, k});
  }
  return out;
}

bool KernelGrid::has_kind(const std::string& kind) const {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

bool KernelGrid::has_matmul_kind() const {
  return std::any_of(kinds.begin(), kinds.end(),
                     [](const std::string& k) { return k != "attention"; });
}

int64_t KernelGrid::cases() const {
  int64_t per_shape = 0;
  for (const std::string& kind : kinds)
    if (kind != "attention")
      per_shape +=
          static_cast<int64_t>(ms.size() * threads.size() *
                               (kind == "w4a8" || kind == "w4a16" ? groups.size() : size_t{1}));
  const int64_t attention_cases =
      has_kind("attention") ? attention_case_count() * static_cast<int64_t>(threads.size()) : 0;
  return static_cast<int64_t>(shapes.size()) * per_shape + attention_cases;
}

KernelGrid kernel_grid(const Args& args) {
  KernelGrid grid;
  const std::vector<std::string> kinds =
      args.value("kind").empty() ? std::vector<std::string>{} : split_commas(args.value("kind"));
  for (const char* kind : kKernelKinds)
    if (kinds.empty() || std::find(kinds.begin(), kinds.end(), kind) != kinds.end())
      grid.kinds.push_back(kind);
  for (const std::string& kind : kinds)
    if (!grid.has_kind(kind))
      throw Error("option --kind: unknown kind '" + kind + "' (kinds: " + kind_names() + ")");
  grid.quick = args.flag("quick");
  grid.json = args.flag("json");
  grid.baseline = !args.flag("no-baseline");
  grid.plot = args.value("plot");
  if (!grid.plot.empty()) {  // fail now rather than after the whole run
    std::FILE* f = std::fopen(grid.plot.c_str(), "w");
    if (f == nullptr) throw Error("option --plot: cannot open '" + grid.plot + "' for writing");
    std::fclose(f);
  }
  grid.shapes = parse_shapes(value_or(args, "shapes", grid.quick ? kQuickShapes : kFullShapes));
  grid.ms = parse_integer_list("m", value_or(args, "m", grid.quick ? kQuickMs : kFullMs));
  grid.groups =
      parse_integer_list("group", value_or(args, "group", grid.quick ? kQuickGroups : kFullGroups));
  grid.min_time_s = args.value("min-time").empty()
                        ? std::atof(grid.quick ? kQuickMinTime : kFullMinTime)
                        : args.number("min-time");

  for (int64_t m : grid.ms)
    if (m < 1 || m > 65536)
      throw Error("option --m: rows must be in [1, 65536], got " + std::to_string(m));
  for (int64_t g : grid.groups)
    if (g < 0 || g % 32 != 0)
      throw Error("option --group: group sizes must be 0 (channelwise) or a multiple of 32, got " +
                  std::to_string(g));
  for (const Shape& s : grid.shapes)
    for (int64_t g : grid.groups)
      if (g > s.k)
        throw Error("option --group: group " + std::to_string(g) +
                    " is longer than K = " + std::to_string(s.k));
  if (!(grid.min_time_s >= 0 && grid.min_time_s <= 3600))
    throw Error("option --min-time must be in [0, 3600] seconds, got " + args.value("min-time"));

  if (!args.value("cold-mib").empty()) {
    grid.cold_mib = args.integer("cold-mib");
    if (grid.cold_mib < 1 || grid.cold_mib > (int64_t{1} << 20))
      throw Error("option --cold-mib must be in [1, 1048576], got " + args.value("cold-mib"));
  }

  const int pool = ThreadPool::global().size();
  if (args.value("threads").empty()) {
    grid.threads = {1};
    if (pool >= 2) grid.threads.push_back(2);
  } else {
    for (int64_t t : parse_integer_list("threads", args.value("threads"))) {
      if (t < 1 || t > pool)
        throw Error("option --threads: " + std::to_string(t) + " is outside [1, " +
                    std::to_string(pool) +
                    "], the thread pool's size (set DQ4_THREADS for a larger pool)");
      grid.threads.push_back(static_cast<int>(t));
    }
  }

  if (args.value("isa").empty()) {
    grid.kernel = &w4a8::family().default_kernel();
    grid.dense_kernel = &dense::family().default_kernel();
    grid.w4a16_kernel = &w4a16::family().default_kernel();
    grid.attention_kernel = &attention::family().default_kernel();
  } else {
    try {
      grid.kernel = &w4a8::family().select(args.value("isa"));
      grid.dense_kernel = &dense::family().select(args.value("isa"));
      grid.w4a16_kernel = &w4a16::family().select(args.value("isa"));
      grid.attention_kernel = &attention::family().select(args.value("isa"));
    } catch (const Error& e) {
      throw Error(std::string("option --isa: ") + e.what());
    }
  }
  return grid;
}

}  // namespace dq4::cli::bench
