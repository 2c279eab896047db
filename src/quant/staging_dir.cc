#include "staging_dir.h"

#include <unistd.h>

#include <filesystem>

#include "dq4/error.h"

namespace dq4::quant {
namespace {

namespace fs = std::filesystem;

std::string sibling(const std::string& dir, const std::string& tag) {
  return fs::path(dir).lexically_normal().string() + "." + tag + "-" + std::to_string(::getpid());
}

void refuse_existing(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec)))
    throw Error("output directory " + dir + " already exists (pass --force to replace it)");
}

}  // namespace

StagingDir::StagingDir(std::string final_dir, bool replace)
    : final_(fs::path(final_dir).lexically_normal().string()), replace_(replace) {
  if (final_.empty() || final_ == "." || final_ == "/")
    throw Error("output directory '" + final_dir + "' is not a directory that can be written");
  if (final_.back() == '/') final_.pop_back();  // lexically_normal keeps a trailing slash
  if (!replace_) refuse_existing(final_);
  staging_ = sibling(final_, "tmp");
  std::error_code ec;
  const fs::path parent = fs::path(final_).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  fs::remove_all(staging_, ec);  // a leftover of an earlier process with this pid
  if (!fs::create_directory(staging_, ec))
    throw Error("cannot create " + staging_ + ": " + ec.message());
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagingDir::commit() {
  std::error_code ec;
  std::string old;
  if (fs::exists(fs::symlink_status(final_, ec))) {
    if (!replace_) refuse_existing(final_);  // appeared while we were writing
    old = sibling(final_, "old");
    fs::rename(final_, old, ec);
    if (ec) throw Error("cannot move the old " + final_ + " away: " + ec.message());
  }
  fs::rename(staging_, final_, ec);
  if (ec) {
    const std::string why = ec.message();
    if (!old.empty()) fs::rename(old, final_, ec);
    throw Error("cannot rename " + staging_ + " to " + final_ + ": " + why);
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace dq4::quant
