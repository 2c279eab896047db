#include "gguf_reader.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "dq4/kernels/half.h"

namespace dq4::test {
namespace {

class Cursor {
 public:
  explicit Cursor(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    if (pos_ + sizeof(T) > bytes_.size()) throw std::runtime_error("gguf: truncated");
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string() {
    const auto n = get<uint64_t>();
    if (pos_ + n > bytes_.size()) throw std::runtime_error("gguf: truncated string");
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t pos() const { return pos_; }

 private:
  const std::string& bytes_;
  uint64_t pos_ = 0;
};

GgufValue read_value(Cursor& c, uint32_t type) {
  switch (type) {
    case 4:
      return c.get<uint32_t>();
    case 5:
      return c.get<int32_t>();
    case 6:
      return c.get<float>();
    case 7:
      return c.get<uint8_t>() != 0;
    case 8:
      return c.string();
    case 9: {
      const auto element = c.get<uint32_t>();
      const auto n = c.get<uint64_t>();
      if (element == 8) {
        std::vector<std::string> v;
        for (uint64_t i = 0; i < n; ++i) v.push_back(c.string());
        return v;
      }
      if (element == 5) {
        std::vector<int32_t> v;
        for (uint64_t i = 0; i < n; ++i) v.push_back(c.get<int32_t>());
        return v;
      }
      if (element == 6) {
        std::vector<float> v;
        for (uint64_t i = 0; i < n; ++i) v.push_back(c.get<float>());
        return v;
      }
      throw std::runtime_error("gguf: array of type " + std::to_string(element));
    }
    default:
      throw std::runtime_error("gguf: value type " + std::to_string(type));
  }
}

}  // namespace

GgufFile GgufFile::read(const std::string& path) {
  GgufFile f;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  f.bytes = s.str();
  Cursor c(f.bytes);
  if (c.get<uint32_t>() != 0x46554747u) throw std::runtime_error("gguf: bad magic");  // "GGUF"
  f.version = c.get<uint32_t>();
  const auto tensor_count = c.get<uint64_t>();
  const auto kv_count = c.get<uint64_t>();
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = c.string();
    const auto type = c.get<uint32_t>();
    if (f.metadata.count(key)) throw std::runtime_error("gguf: duplicate key " + key);
    f.metadata[key] = read_value(c, type);
  }
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    t.name = c.string();
    const auto dims = c.get<uint32_t>();
    for (uint32_t d = 0; d < dims; ++d) t.ne.push_back(static_cast<int64_t>(c.get<uint64_t>()));
    t.type = c.get<uint32_t>();
    t.offset = c.get<uint64_t>();
    f.tensors.push_back(t);
  }
  f.data_start = (c.pos() + 31) / 32 * 32;
  return f;
}

const GgufTensorInfo* GgufFile::find(const std::string& name) const {
  for (const GgufTensorInfo& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<float> GgufFile::values(const std::string& name) const {
  const GgufTensorInfo* t = find(name);
  if (t == nullptr) throw std::runtime_error("gguf: no tensor " + name);
  int64_t n = 1;
  for (int64_t d : t->ne) n *= d;
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data() + data_start + t->offset);
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    switch (t->type) {
      case 0:
        std::memcpy(&out[i], data + 4 * i, 4);
        break;
      case 1:
        std::memcpy(&h, data + 2 * i, 2);
        out[i] = f16_to_f32(h);
        break;
      case 30:
        std::memcpy(&h, data + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
      case 2: {  // Q4_0: 18-byte blocks of 32
        const uint8_t* block = data + (i / 32) * 18;
        std::memcpy(&h, block, 2);
        const int j = static_cast<int>(i % 32);
        const int nibble = j < 16 ? (block[2 + j] & 0x0f) : (block[2 + j - 16] >> 4);
        out[i] = static_cast<float>(nibble - 8) * f16_to_f32(h);
        break;
      }
      default:
        throw std::runtime_error("gguf: tensor type " + std::to_string(t->type));
    }
  }
  return out;
}

}  // namespace dq4::test
