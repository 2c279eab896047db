#pragma once
// The fixture tokenizers ($DQ4_FIXTURES/tokenizer-*/ and stories260K-hf/) for the tokenizer
// tests, each loaded once per process.

#include <string>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"

namespace dq4::test {

// The fixture folders holding a tokenizer.json and reference_tokenizations.json.
const std::vector<std::string>& fixture_tokenizer_names();

// $DQ4_FIXTURES/<name>; a test failure (not a skip) when DQ4_FIXTURES is unset.
std::string fixture_tokenizer_dir(const std::string& name);

// The loaded tokenizer of fixture `name` (throws dq4::Error when it is missing).
const Tokenizer& fixture_tokenizer(const std::string& name);

// The bytes of a file; a test failure when it cannot be read.
std::string read_test_file(const std::string& path);

}  // namespace dq4::test
