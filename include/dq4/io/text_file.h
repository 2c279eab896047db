#pragma once
// Whole small files (configs, indexes) read into memory.

#include <string>

namespace dq4::io {

// The bytes of `path`. Throws dq4::Error "<what>: cannot read <path>" when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace dq4::io
