// Streaming safetensors writer: header first, then the data through a large buffer.

#include "dq4/io/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

constexpr size_t kBufferBytes = size_t{8} << 20;  // small tensors gathered into 8 MiB writes

[[noreturn]] void fail_io(const std::string& what, const std::string& path) {
  throw Error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

uint64_t TensorSpec::bytes() const {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string safetensors_header_json(const std::vector<TensorSpec>& tensors) {
  // Written by hand to keep the reference writer's field order (dtype, shape, data_offsets).
  std::string json = R"({"__metadata__":{"format":"pt"})";
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    json += "," + nlohmann::json(t.name).dump() + R"(:{"dtype":")";
    json += dtype_name(t.dtype);
    json += R"(","shape":[)";
    for (size_t i = 0; i < t.shape.size(); ++i) json += (i ? "," : "") + std::to_string(t.shape[i]);
    json += R"(],"data_offsets":[)" + std::to_string(offset) + ",";
    offset += t.bytes();
    json += std::to_string(offset) + "]}";
  }
  return json + "}";
}

namespace {

// The position of a dtype in the safetensors library's Dtype enum, which its writer sorts by
// (descending): the enum lists dtypes by element size, so this order keeps data aligned.
int library_dtype_rank(Dtype dtype) {
  switch (dtype) {
    case Dtype::BOOL:
      return 0;
    case Dtype::U8:
      return 1;
    case Dtype::I8:
      return 2;
    case Dtype::F8_E5M2:
      return 3;
    case Dtype::F8_E4M3:
      return 4;
    case Dtype::I16:
      return 5;
    case Dtype::U16:
      return 6;
    case Dtype::F16:
      return 7;
    case Dtype::BF16:
      return 8;
    case Dtype::I32:
      return 9;
    case Dtype::U32:
      return 10;
    case Dtype::F32:
      return 11;
    case Dtype::F64:
      return 12;
    case Dtype::I64:
      return 13;
    case Dtype::U64:
      return 14;
  }
  throw Error("safetensors_order: unknown dtype");
}

}  // namespace

bool safetensors_order(const TensorSpec& a, const TensorSpec& b) {
  const int a_rank = library_dtype_rank(a.dtype), b_rank = library_dtype_rank(b.dtype);
  return a_rank != b_rank ? a_rank > b_rank : a.name < b.name;
}

SafetensorsWriter::SafetensorsWriter(std::string path, std::vector<TensorSpec> tensors)
    : path_(std::move(path)) {
  for (const TensorSpec& t : tensors) {
    const std::string where = "safetensors " + path_ + ": tensor \"" + t.name + "\"";
    for (int64_t d : t.shape)
      if (d < 0) throw Error(where + " has a negative dimension");
    if (t.bytes() != 0 && data_bytes_ % dtype_size(t.dtype) != 0)  // empty tensors have no data
      throw Error(where + " would start at data offset " + std::to_string(data_bytes_) +
                  ", not aligned to its element size (write larger elements first)");
    data_bytes_ += t.bytes();
  }
  std::string header = safetensors_header_json(tensors);
  header.append((8 - header.size() % 8) % 8, ' ');
  header_bytes_ = 8 + header.size();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_io("create", path_);
  buffer_.reserve(kBufferBytes);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i));
  buffer_.insert(buffer_.end(), length, length + 8);
  buffer_.insert(buffer_.end(), header.begin(), header.end());
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsWriter::write_fully(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, std::min<size_t>(bytes, size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_io("write", path_);
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void SafetensorsWriter::flush_buffer() {
  write_fully(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void SafetensorsWriter::append(const void* data, size_t bytes) {
  if (fd_ < 0) throw Error("safetensors " + path_ + ": append after finish");
  if (appended_ + bytes > data_bytes_)
    throw Error("safetensors " + path_ + ": " + std::to_string(appended_ + bytes) +
                " data bytes appended, more than the " + std::to_string(data_bytes_) +
                " the header declares");
  appended_ += bytes;
  if (buffer_.size() + bytes <= kBufferBytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    buffer_.insert(buffer_.end(), p, p + bytes);
    return;
  }
  flush_buffer();
  if (bytes < kBufferBytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    buffer_.insert(buffer_.end(), p, p + bytes);
  } else {
    write_fully(data, bytes);  // large pieces go straight to the file
  }
}

void SafetensorsWriter::finish() {
  if (fd_ < 0) throw Error("safetensors " + path_ + ": finished twice");
  if (appended_ != data_bytes_)
    throw Error("safetensors " + path_ + ": only " + std::to_string(appended_) + " of " +
                std::to_string(data_bytes_) + " data bytes were written");
  flush_buffer();
  // On disk before the directory is renamed into place: a crash must not leave a complete-looking
  // checkpoint with missing data.
  if (::fdatasync(fd_) != 0) fail_io("sync", path_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail_io("close", path_);
}

}  // namespace dq4
