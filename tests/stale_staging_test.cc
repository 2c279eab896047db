// A run killed mid-write leaves "<out>.tmp-<pid>" behind. The next run removes such a folder once
// its writer is gone (no such process, or a process that reuses the pid), and says so; a folder
// whose writer may still be running, or that another host wrote, is kept.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dq4/convert/synth.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

// The pid of a child that has exited and been reaped.
long dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// starttime, field 22 of /proc/<pid>/stat (fields counted from the pid; the name may hold spaces).
std::string start_time(long pid) {
  const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;
  return field;
}

struct Owner {
  std::string host = this_host();
  std::string boot_id = first_line("/proc/sys/kernel/random/boot_id");
  long pid;
  std::string start;
};

// A half-written staging folder of `out` named for `pid`, with an owner file when `owner` is set.
std::string leave_staging(const std::string& out, long pid, const Owner* owner) {
  const std::string dir = out + ".tmp-" + std::to_string(pid);
  fs::create_directory(dir);
  write_file(dir + "/model.safetensors", "partial");
  if (owner) {
    write_file(dir + "/.dq4-staging-owner", "host " + owner->host + "\nboot_id " + owner->boot_id +
                                                "\npid " + std::to_string(owner->pid) +
                                                "\nstart_time " + owner->start + "\n");
  }
  return dir;
}

// Writes the tiny synthetic model to `out`; returns the notices.
std::vector<std::string> synth_into(const std::string& out) {
  SynthOptions o = synth_preset("tiny");
  o.output_dir = out;
  std::vector<std::string> notices;
  o.notice = [&](const std::string& line) { notices.push_back(line); };
  write_synthetic_model(o);
  EXPECT_TRUE(fs::exists(out + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(out + "/.dq4-staging-owner"));  // the marker stays out of the model
  return notices;
}

std::string removed(const std::string& dir, long pid) {
  return "removed stale staging folder " + dir + " left by process " + std::to_string(pid);
}

TEST(StaleStaging, FoldersOfGoneProcessesAreRemoved) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  const long without_owner = dead_pid();
  const Owner recorded{.pid = dead_pid(), .start = "1"};
  const std::string a = leave_staging(out, without_owner, nullptr);
  const std::string b = leave_staging(out, recorded.pid, &recorded);
  // An earlier process that had this test's pid.
  const std::string c = leave_staging(out, ::getpid(), nullptr);
  std::vector<std::string> notices = synth_into(out);
  std::sort(notices.begin(), notices.end());
  std::vector<std::string> expected{removed(a, without_owner), removed(b, recorded.pid),
                                    removed(c, ::getpid())};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(notices, expected);
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(fs::exists(b));
  EXPECT_FALSE(fs::exists(c));
}

TEST(StaleStaging, AReusedPidIsRecognised) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  const long live = ::getppid();
  const Owner started_elsewhen{.pid = live, .start = start_time(live) + "0"};
  std::string dir = leave_staging(out, live, &started_elsewhen);
  EXPECT_EQ(synth_into(out), std::vector<std::string>{removed(dir, live)});
  EXPECT_FALSE(fs::exists(dir));

  const std::string other = scratch.file("other");
  Owner before_reboot{.pid = live, .start = start_time(live)};
  before_reboot.boot_id = "00000000-0000-0000-0000-000000000000";
  dir = leave_staging(other, live, &before_reboot);
  EXPECT_EQ(synth_into(other), std::vector<std::string>{removed(dir, live)});
  EXPECT_FALSE(fs::exists(dir));
}

TEST(StaleStaging, FoldersThatMayStillBeWrittenAreKept) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  const long live = ::getppid();
  const Owner running{.pid = live, .start = start_time(live)};
  const Owner elsewhere{.host = "another-host.invalid", .pid = dead_pid(), .start = "1"};
  const std::vector<std::string> kept{
      leave_staging(out, live, &running),
      leave_staging(scratch.file("a"), live, nullptr),  // no owner file, pid alive
      leave_staging(scratch.file("b"), elsewhere.pid, &elsewhere),
  };
  // Names that are not staging folders of the output, even of a gone process.
  const long gone = dead_pid();
  const std::vector<std::string> unrelated{
      scratch.file("outer.tmp-" + std::to_string(gone)),
      scratch.file("out.old-" + std::to_string(gone)),
      scratch.file("out.tmp-" + std::to_string(gone) + "x"),
      scratch.file("out.tmp-"),
  };
  for (const std::string& dir : unrelated) fs::create_directory(dir);
  write_file(scratch.file("out.tmp-" + std::to_string(dead_pid())), "a file, not a folder");

  EXPECT_EQ(synth_into(out), std::vector<std::string>{});
  EXPECT_EQ(synth_into(scratch.file("a")), std::vector<std::string>{});
  EXPECT_EQ(synth_into(scratch.file("b")), std::vector<std::string>{});
  for (const std::string& dir : kept) EXPECT_TRUE(fs::exists(dir + "/model.safetensors")) << dir;
  for (const std::string& dir : unrelated) EXPECT_TRUE(fs::is_directory(dir)) << dir;
}

}  // namespace
}  // namespace dq4::test
