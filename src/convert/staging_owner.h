#pragma once
// Who is writing a staging directory. A process killed mid-write (SIGKILL, power loss) leaves its
// "<dir>.tmp-<pid>" behind; a later run removes it only once it can tell that its writer is gone.
// A pid alone cannot tell (pids are reused), so the writer records in the directory a file
// kOwnerFile naming its host, boot, pid and process start time:
//
//   host <hostname>
//   boot_id <contents of /proc/sys/kernel/random/boot_id>
//   pid <pid>
//   start_time <field 22 of /proc/<pid>/stat: clock ticks from boot to the process's start>

#include <string>

namespace dq4::quant {

inline constexpr const char* kOwnerFile = ".dq4-staging-owner";

// Writes kOwnerFile for this process into `dir`. Throws dq4::Error naming the file.
void write_owner_file(const std::string& dir);

// Whether the process that wrote staging directory `dir` (named for `pid`) is gone: no process
// `pid` exists, or the one that does started at another time or before the last boot. A directory
// written on another host, or one whose owner file is missing or unreadable while `pid` is alive,
// is not known to be gone.
bool owner_is_gone(const std::string& dir, long pid);

}  // namespace dq4::quant
