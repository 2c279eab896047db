#include "dq4/io/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dq4/kernels/error.h"

namespace dq4::io {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(what + ": cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(what + ": error reading " + path);
  return text.str();
}

}  // namespace dq4::io
