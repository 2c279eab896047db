#pragma once
// Where tests find the shared fixtures (../shared/fixtures, with their provenance): DQ4_FIXTURES.

#include <string>

namespace dq4::test {

// $DQ4_FIXTURES; a test failure (not a skip) when it is unset.
std::string fixtures_dir();
// fixtures_dir() / name.
std::string fixture_path(const std::string& name);

}  // namespace dq4::test
