#pragma once
// Progress of long writes on stderr, and the process's peak memory for the final report.

#include <chrono>
#include <cstdint>
#include <string>

#include "dq4/convert/quantize.h"

namespace dq4::cli {

// A one-line bar redrawn in place, at most ten times a second, only when stderr is a terminal
// (logs and tests see just the final report).
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // clears the line
  void update(const WriteProgress& progress);
  // `done` of `total` things counted in `unit` ("layers", "windows").
  void update(int64_t done, int64_t total, const char* unit);
  // A callback for the library that updates this bar.
  ProgressCallback callback();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

// A callback for the library that prints each notice as a line on stderr.
NoticeCallback stderr_notice();

// The peak resident set size (VmHWM of /proc/self/status: anonymous plus file-backed mapped
// pages) in bytes, or 0 where that is unavailable.
uint64_t peak_rss_bytes();
// Starts peak_rss_bytes() over from the current RSS (Linux: /proc/self/clear_refs). False if the
// kernel refused.
bool reset_peak_rss();

// 1234567 -> "1.23 MB".
std::string megabytes(uint64_t bytes);

}  // namespace dq4::cli
