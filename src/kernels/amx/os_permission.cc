#include "os_permission.h"

#include <cerrno>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace dq4::amx {

#if defined(__linux__) && defined(__x86_64__)
std::string request_tile_permission() {
  constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
  constexpr unsigned long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) refused: ") +
           std::strerror(errno);
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 ||
      (granted & (1ul << kXfeatureXtiledata)) == 0)
    return "arch_prctl(ARCH_GET_XCOMP_PERM) does not list XTILEDATA after the request";
  return "";
}
#else
std::string request_tile_permission() { return "tile permission is only requested on Linux"; }
#endif

}  // namespace dq4::amx
