#pragma once
// Writing a model directory so that it appears complete or not at all: everything goes into a
// sibling "<dir>.tmp-<pid>" that is renamed into place at the end and removed on failure. One
// left behind by a process killed mid-write is removed by the next run (staging_owner.h).

#include <functional>
#include <string>

namespace dq4::quant {

using Notice = std::function<void(const std::string&)>;

class StagingDir {
 public:
  // Refuses an existing `final_dir` unless `replace`, removes the stale staging directories of
  // final_dir (telling `notice`, when set, about each), then creates the staging directory (and
  // the parents of final_dir). Throws dq4::Error naming the directory.
  StagingDir(std::string final_dir, bool replace, const Notice& notice);
  ~StagingDir();  // removes the staging directory unless committed
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::string& path() const { return staging_; }
  // Renames the staging directory to final_dir. An existing final_dir (allowed by `replace`) is
  // renamed away first and deleted only once the new one is in place.
  void commit();

 private:
  std::string final_, staging_;
  bool replace_;
  bool committed_ = false;
};

}  // namespace dq4::quant
