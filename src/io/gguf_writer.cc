// GGUF v3: "GGUF", version, tensor count, key-value count, the key-values, the tensor infos,
// padding to the alignment, then the tensors' data (each at an aligned offset). Little-endian.

#include "dq4/io/gguf_writer.h"

#include <algorithm>
#include <cstring>

#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

constexpr uint64_t kAlignment = 32;

// gguf_type of the GGUF specification.
enum ValueType : uint32_t {
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
};

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

uint64_t aligned(uint64_t offset) { return (offset + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

size_t ggml_bytes(GgmlType type, int64_t elements) {
  const auto n = static_cast<size_t>(elements);
  switch (type) {
    case GgmlType::F32:
      return n * 4;
    case GgmlType::F16:
    case GgmlType::BF16:
      return n * 2;
    case GgmlType::Q4_0:
      return n / kQ4_0BlockSize * kQ4_0BlockBytes;
  }
  throw Error("gguf: unknown ggml type " + std::to_string(static_cast<uint32_t>(type)));
}

void GgufWriter::add_key(std::string_view key, uint32_t value_type) {
  if (std::find(keys_.begin(), keys_.end(), key) != keys_.end())
    throw Error("gguf: metadata key '" + std::string(key) + "' added twice");
  keys_.emplace_back(key);
  put_string(metadata_, key);
  put<uint32_t>(metadata_, value_type);
  ++metadata_count_;
}

void GgufWriter::add_string(std::string_view key, std::string_view value) {
  add_key(key, kString);
  put_string(metadata_, value);
}

void GgufWriter::add_u32(std::string_view key, uint32_t value) {
  add_key(key, kUint32);
  put(metadata_, value);
}

void GgufWriter::add_f32(std::string_view key, float value) {
  add_key(key, kFloat32);
  put(metadata_, value);
}

void GgufWriter::add_bool(std::string_view key, bool value) {
  add_key(key, kBool);
  put<uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::add_strings(std::string_view key, const std::vector<std::string>& values) {
  add_key(key, kArray);
  put<uint32_t>(metadata_, kString);
  put<uint64_t>(metadata_, values.size());
  for (const std::string& v : values) put_string(metadata_, v);
}

void GgufWriter::add_i32s(std::string_view key, const std::vector<int32_t>& values) {
  add_key(key, kArray);
  put<uint32_t>(metadata_, kInt32);
  put<uint64_t>(metadata_, values.size());
  for (int32_t v : values) put(metadata_, v);
}

void GgufWriter::add_f32s(std::string_view key, const std::vector<float>& values) {
  add_key(key, kArray);
  put<uint32_t>(metadata_, kFloat32);
  put<uint64_t>(metadata_, values.size());
  for (float v : values) put(metadata_, v);
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> shape,
                            Producer fill) {
  for (const Tensor& t : tensors_)
    if (t.name == name) throw Error("gguf: tensor '" + name + "' added twice");
  if (shape.empty()) throw Error("gguf: tensor '" + name + "' has no dimensions");
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d <= 0) throw Error("gguf: tensor '" + name + "' has a dimension " + std::to_string(d));
    elements *= d;
  }
  if (type == GgmlType::Q4_0 && shape.back() % kQ4_0BlockSize != 0)
    throw Error("gguf: tensor '" + name + "': Q4_0 needs rows of a multiple of 32 values, not " +
                std::to_string(shape.back()));
  Tensor t{std::move(name), type, std::move(shape), ggml_bytes(type, elements), 0, std::move(fill)};
  t.offset = data_bytes_;
  data_bytes_ = aligned(data_bytes_ + t.bytes);
  tensors_.push_back(std::move(t));
}

void GgufWriter::write(const std::string& path) const {
  std::string header = "GGUF";
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, metadata_count_);
  header += metadata_;
  for (const Tensor& t : tensors_) {
    put_string(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<uint64_t>(header, *d);
    put<uint32_t>(header, static_cast<uint32_t>(t.type));
    put<uint64_t>(header, t.offset);
  }
  header.resize(aligned(header.size()), '\0');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("gguf: cannot create " + path);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::vector<uint8_t> data;
  uint64_t written = 0;
  for (const Tensor& t : tensors_) {
    const std::vector<char> padding(t.offset - written, '\0');
    out.write(padding.data(), static_cast<std::streamsize>(padding.size()));
    data.assign(t.bytes, 0);
    t.fill(data.data(), data.size());
    out.write(reinterpret_cast<const char*>(data.data()),
              static_cast<std::streamsize>(data.size()));
    written = t.offset + t.bytes;
  }
  const std::vector<char> padding(data_bytes_ - written, '\0');
  out.write(padding.data(), static_cast<std::streamsize>(padding.size()));
  out.close();
  if (!out) throw Error("gguf: cannot write " + path);
}

}  // namespace dq4
