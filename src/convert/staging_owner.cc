#include "staging_owner.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "dq4/kernels/error.h"

namespace dq4::quant {
namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string boot_id() { return first_line("/proc/sys/kernel/random/boot_id"); }

// Field 22 of /proc/<pid>/stat, counted after the command name, which may hold spaces and ')'.
std::string start_time(long pid) {
  const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return "";
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

bool process_exists(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

}  // namespace

void write_owner_file(const std::string& dir) {
  const long pid = ::getpid();
  const std::string path = dir + "/" + kOwnerFile;
  std::ofstream out(path, std::ios::trunc);
  out << "host " << host_name() << "\nboot_id " << boot_id() << "\npid " << pid << "\nstart_time "
      << start_time(pid) << "\n";
  out.close();
  if (!out) throw Error("cannot write " + path);
}

bool owner_is_gone(const std::string& dir, long pid) {
  std::ifstream in(dir + "/" + kOwnerFile);
  std::map<std::string, std::string> owner;
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find(' ');
    if (space != std::string::npos) owner[line.substr(0, space)] = line.substr(space + 1);
  }
  const bool recorded = owner.count("host") && owner.count("boot_id") && owner.count("pid") &&
                        owner.count("start_time") && owner["pid"] == std::to_string(pid);
  if (recorded && owner["host"] != host_name()) return false;  // its processes are not visible
  if (!process_exists(pid)) return true;
  // A folder named for this very process but not recorded by it was left by an earlier holder of
  // the pid (or is being set up this instant by another thread: too rare to guard against).
  if (!recorded) return pid == ::getpid();
  return owner["boot_id"] != boot_id() || owner["start_time"] != start_time(pid);
}

}  // namespace dq4::quant
