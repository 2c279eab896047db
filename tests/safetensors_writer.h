#pragma once
// Test-only helpers for the io tests: a minimal safetensors writer (valid files and deliberately
// broken ones) and scratch directories (the fixtures directory: fixtures.h).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dq4::test {

struct TestTensor {
  std::string name;
  std::string dtype;  // as the file spells it, so unknown dtypes can be written too
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// The header of a valid file holding `tensors` back to back in the given order, padded with
// spaces so the data region starts 8-byte aligned (as the reference writer does).
std::string safetensors_header(const std::vector<TestTensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// The 8-byte little-endian length of `header`, the header, then `data`, exactly as given.
std::string safetensors_bytes(const std::string& header, const std::vector<uint8_t>& data);

void write_file(const std::string& path, const std::string& bytes);
void write_safetensors(const std::string& path, const std::vector<TestTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A new empty directory under the system temp dir, removed by the destructor.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole file (empty when it cannot be read).
std::string read_file(const std::string& path);

}  // namespace dq4::test
