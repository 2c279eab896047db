#include "fixtures.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace dq4::test {

std::string fixtures_dir() {
  const char* dir = std::getenv("DQ4_FIXTURES");
  if (dir == nullptr) ADD_FAILURE() << "DQ4_FIXTURES is not set (point it at shared/fixtures)";
  return dir ? dir : "DQ4_FIXTURES-is-not-set";
}

std::string fixture_path(const std::string& name) { return fixtures_dir() + "/" + name; }

}  // namespace dq4::test
