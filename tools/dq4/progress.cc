#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace dq4::cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void ProgressBar::update(int64_t done, int64_t total, const char* unit) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done != total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld %s\033[K", label_.c_str(),
               std::string(filled, '#').c_str(), std::string(kWidth - filled, ' ').c_str(),
               static_cast<long long>(done), static_cast<long long>(total), unit);
}

void ProgressBar::update(const WriteProgress& p) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = p.tensors_done == p.tensors_total;
  if (drawn_ && !last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const double fraction = p.bytes_total ? static_cast<double>(p.bytes_done) / p.bytes_total : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld tensors, %s / %s\033[K", label_.c_str(),
               std::string(filled, '#').c_str(), std::string(kWidth - filled, ' ').c_str(),
               static_cast<long long>(p.tensors_done), static_cast<long long>(p.tensors_total),
               megabytes(p.bytes_done).c_str(), megabytes(p.bytes_total).c_str());
  std::fflush(stderr);
}

ProgressCallback ProgressBar::callback() {
  return [this](const WriteProgress& p) { update(p); };
}

NoticeCallback stderr_notice() {
  return [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "... kB"
  return 0;
}

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

std::string megabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

}  // namespace dq4::cli
