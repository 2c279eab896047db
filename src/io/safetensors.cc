// Safetensors header validation, following the format's rules and its reference reader
// (huggingface/safetensors): bounded header length, JSON object of tensor entries plus an
// optional "__metadata__" string map, and tensor byte ranges that tile the data region exactly.

#include "dq4/io/safetensors.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "dq4/kernels/error.h"
#include "mapped_file.h"
#include "strict_json.h"

namespace dq4 {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("safetensors " + path + ": " + what);
}

// A JSON value for a message: scalars as written (ASCII, cut short), containers by kind.
std::string describe(const json& v) {
  if (!v.is_primitive()) return v.type_name();
  const std::string text = v.dump(-1, ' ', /*ensure_ascii=*/true);
  return text.size() <= 80 ? text : text.substr(0, 80) + "...";
}

struct Entry {
  TensorView view;
  uint64_t begin = 0, end = 0;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& path, uint64_t data_size) : path_(path), data_size_(data_size) {}

  [[noreturn]] void fail(const std::string& what) const { dq4::fail(path_, what); }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail("tensor \"" + tensor + "\": " + what);
  }

  std::map<std::string, std::string> metadata(const json& value) const {
    if (!value.is_object()) fail("__metadata__ is " + describe(value) + ", not an object");
    std::map<std::string, std::string> out;
    for (const auto& [key, v] : value.items()) {
      if (!v.is_string())
        fail("__metadata__ key \"" + key + "\" is " + describe(v) + ", not a string");
      out.emplace(key, v.get<std::string>());
    }
    return out;
  }

  // One unsigned integer field element; `what` is e.g. "shape[1]".
  uint64_t non_negative(const std::string& tensor, const json& v, const std::string& what) const {
    if (!v.is_number_unsigned())
      fail(tensor, what + " is " + describe(v) + ", not a non-negative integer");
    return v.get<uint64_t>();
  }

  Entry entry(const std::string& name, const json& value) const {
    if (!value.is_object()) fail(name, "entry is " + describe(value) + ", not an object");
    for (const auto& [key, v] : value.items())
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        fail(name, "unknown field \"" + key + "\"");
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!value.contains(field)) fail(name, "missing field " + std::string(field));

    Entry e;
    e.view.name = name;
    e.view.file = path_;
    const json& dtype = value["dtype"];
    if (!dtype.is_string()) fail(name, "dtype is " + describe(dtype) + ", not a string");
    const auto known = dtype_from_name(dtype.get_ref<const std::string&>());
    if (!known) fail(name, "dtype " + describe(dtype) + " is not supported");
    e.view.dtype = *known;

    const json& shape = value["shape"];
    if (!shape.is_array()) fail(name, "shape is " + describe(shape) + ", not an array");
    uint64_t numel = 1;
    bool overflow = false, empty = false;
    for (size_t i = 0; i < shape.size(); ++i) {
      const uint64_t d = non_negative(name, shape[i], "shape[" + std::to_string(i) + "]");
      if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(name, "shape[" + std::to_string(i) + "] = " + std::to_string(d) + " is too large");
      e.view.shape.push_back(static_cast<int64_t>(d));
      overflow |= __builtin_mul_overflow(numel, d, &numel);
      empty |= d == 0;
    }
    if (empty) numel = 0, overflow = false;  // [2^40, 2^40, 0] holds no bytes

    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2)
      fail(name, "data_offsets is " + describe(offsets) + ", not [begin, end]");
    e.begin = non_negative(name, offsets[0], "data_offsets[0]");
    e.end = non_negative(name, offsets[1], "data_offsets[1]");
    const std::string range =
        "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin > e.end) fail(name, range + " has begin > end");
    if (e.end > data_size_)
      fail(name, range + " ends past the data region of " + std::to_string(data_size_) + " bytes");

    uint64_t bytes = 0;
    overflow |= __builtin_mul_overflow(numel, uint64_t{dtype_size(e.view.dtype)}, &bytes);
    const std::string size_of =
        "shape " + e.view.shape_string() + " of " + dtype.get<std::string>();
    if (overflow) fail(name, size_of + " overflows 64 bits of bytes");
    if (bytes != e.end - e.begin)
      fail(name, size_of + " is " + std::to_string(bytes) + " bytes but " + range + " span " +
                     std::to_string(e.end - e.begin));
    e.view.bytes = static_cast<size_t>(bytes);
    return e;
  }

  // Sorted by offset, the ranges must start at 0, touch one another and end at the data size.
  void check_tiling(std::vector<Entry>& entries) const {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.begin, a.end, a.view.name) < std::tie(b.begin, b.end, b.view.name);
    });
    uint64_t at = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
      if (e.begin < at)
        fail(e.view.name, "data_offsets [" + std::to_string(e.begin) + ", " +
                              std::to_string(e.end) + "] overlap tensor \"" + previous->view.name +
                              "\" (which ends at " + std::to_string(at) + ")");
      if (e.begin > at)
        fail(e.view.name, "data_offsets begin " + std::to_string(e.begin) + " leaves a gap of " +
                              std::to_string(e.begin - at) + " unused bytes at offset " +
                              std::to_string(at));
      at = e.end;
      previous = &e;
    }
    if (at != data_size_)
      fail("data region has " + std::to_string(data_size_ - at) + " unused bytes after offset " +
           std::to_string(at) + " (no tensor covers them)");
  }

 private:
  const std::string& path_;
  uint64_t data_size_;
};

}  // namespace

SafetensorsFile SafetensorsFile::parse(std::span<const uint8_t> bytes, const std::string& path) {
  if (bytes.size() < 8)
    fail(path, "file is " + std::to_string(bytes.size()) +
                   " bytes, too short for the 8-byte header length");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[i];
  if (header_size > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_size) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  if (header_size > bytes.size() - 8)
    fail(path, "header length " + std::to_string(header_size) + " runs past the end of the file (" +
                   std::to_string(bytes.size()) + " bytes)");
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, header_size);
  if (header.empty() || header.front() != '{') fail(path, "header does not start with '{'");
  const json root = io::parse_strict_json(header, "safetensors " + path + ": header");
  if (!root.is_object()) fail(path, "header is not a JSON object");

  const std::span<const uint8_t> data = bytes.subspan(8 + header_size);
  HeaderParser parser(path, data.size());
  SafetensorsFile file;
  file.path_ = path;
  std::vector<Entry> entries;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__")
      file.metadata_ = parser.metadata(value);
    else
      entries.push_back(parser.entry(key, value));
  }
  parser.check_tiling(entries);

  file.tensors_.reserve(entries.size());
  for (Entry& e : entries) {
    e.view.data = data.data() + e.begin;
    file.by_name_.emplace(e.view.name, file.tensors_.size());
    file.tensors_.push_back(std::move(e.view));
  }
  return file;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<const io::MappedFile> mapped;
  try {
    mapped = io::MappedFile::open(path);
  } catch (const Error& e) {
    throw Error(std::string("safetensors: ") + e.what());
  }
  SafetensorsFile file = parse(mapped->bytes(), path);
  file.storage_ = std::move(mapped);
  return file;
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& SafetensorsFile::tensor(std::string_view name) const {
  if (const TensorView* t = find(name)) return *t;
  throw Error("safetensors " + path_ + ": no tensor named \"" + std::string(name) + "\"");
}

}  // namespace dq4
