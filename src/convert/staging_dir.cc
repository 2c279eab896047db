#include "staging_dir.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "dq4/kernels/error.h"
#include "staging_owner.h"

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

// Removes the "<final_dir>.tmp-<pid>" folders whose writer is gone (staging_owner.h), saying so.
void remove_stale_staging(const std::string& final_dir, const Notice& notice) {
  const fs::path parent = fs::path(final_dir).parent_path();
  const std::string prefix = fs::path(final_dir).filename().string() + ".tmp-";
  std::vector<std::string> pids;
  std::error_code ec;
  for (fs::directory_iterator it(parent.empty() ? "." : parent, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string pid = name.substr(std::min(name.size(), prefix.size()));
    if (name.starts_with(prefix) && !pid.empty() && pid.size() <= 9 &&
        pid.find_first_not_of("0123456789") == std::string::npos && it->is_directory() &&
        !it->is_symlink())
      pids.push_back(pid);
  }
  for (const std::string& pid : pids) {
    const std::string dir = final_dir + ".tmp-" + pid;
    if (!owner_is_gone(dir, std::stol(pid))) continue;
    fs::remove_all(dir, ec);
    if (!notice) continue;
    if (ec)
      notice("cannot remove stale staging folder " + dir + " left by process " + pid + ": " +
             ec.message());
    else
      notice("removed stale staging folder " + dir + " left by process " + pid);
  }
}

}  // namespace

StagingDir::StagingDir(std::string final_dir, bool replace, const Notice& notice)
    : final_(fs::path(final_dir).lexically_normal().string()), replace_(replace) {
  if (final_.empty() || final_ == "." || final_ == "/")
    throw Error("output directory '" + final_dir + "' is not a directory that can be written");
  if (final_.back() == '/') final_.pop_back();  // lexically_normal keeps a trailing slash
  if (!replace_) refuse_existing(final_);
  staging_ = sibling(final_, "tmp");
  std::error_code ec;
  const fs::path parent = fs::path(final_).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  remove_stale_staging(final_, notice);
  if (!fs::create_directory(staging_, ec))
    throw Error("cannot create " + staging_ + ": " + (ec ? ec.message() : "it already exists"));
  write_owner_file(staging_);
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagingDir::commit() {
  std::error_code ec;
  fs::remove(fs::path(staging_) / kOwnerFile, ec);
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
