// Opening a checkpoint directory, single-file or sharded through model.safetensors.index.json.

#include "dq4/io/checkpoint.h"

#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>

#include "dq4/io/text_file.h"
#include "dq4/kernels/error.h"
#include "strict_json.h"

namespace dq4 {
namespace {

namespace fs = std::filesystem;

// Shard names come from the index; keep them inside the checkpoint directory.
bool is_plain_relative(const fs::path& p) {
  if (p.empty() || p.is_absolute()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

Checkpoint Checkpoint::open_dir(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error("checkpoint: " + dir + " is not a directory");
  Checkpoint c;
  c.dir_ = dir;
  const fs::path index_path = root / "model.safetensors.index.json";
  const fs::path single_path = root / "model.safetensors";

  if (!fs::exists(index_path, ec)) {
    if (!fs::exists(single_path, ec))
      throw Error("checkpoint: " + dir +
                  " holds neither model.safetensors nor model.safetensors.index.json");
    c.files_.push_back(SafetensorsFile::open(single_path.string()));
    const auto& tensors = c.files_.back().tensors();
    for (size_t i = 0; i < tensors.size(); ++i) c.add(tensors[i].name, 0, i);
    c.read_ = std::make_shared<std::vector<std::atomic<bool>>>(c.tensors_.size());
    return c;
  }

  const std::string index_name = index_path.string();
  const nlohmann::json index = io::parse_strict_json(
      io::read_text_file(index_path.string(), "checkpoint"), "checkpoint " + index_name);
  if (!index.is_object()) throw Error("checkpoint " + index_name + ": not a JSON object");
  if (!index.contains("weight_map"))
    throw Error("checkpoint " + index_name + ": missing field weight_map");
  const nlohmann::json& weight_map = index["weight_map"];
  if (!weight_map.is_object())
    throw Error("checkpoint " + index_name + ": weight_map is not an object");

  std::map<std::string, std::vector<std::string>> by_shard;  // shard file -> its tensors
  for (const auto& [name, shard] : weight_map.items()) {
    const std::string where = "checkpoint " + index_name + ": weight_map[\"" + name + "\"]";
    if (!shard.is_string()) throw Error(where + " is not a string");
    if (!is_plain_relative(fs::path(shard.get<std::string>())))
      throw Error(where + " = \"" + shard.get<std::string>() + "\" is not a file inside " + dir);
    by_shard[shard.get<std::string>()].push_back(name);
  }

  for (const auto& [shard, names] : by_shard) {
    const fs::path shard_path = root / shard;
    if (!fs::exists(shard_path, ec))
      throw Error("checkpoint " + index_name + ": shard " + shard + " (holding tensor \"" +
                  names.front() + "\") does not exist: " + shard_path.string());
    c.files_.push_back(SafetensorsFile::open(shard_path.string()));
    const SafetensorsFile& file = c.files_.back();
    for (const std::string& name : names) {
      const TensorView* t = file.find(name);
      if (t == nullptr)
        throw Error("checkpoint " + index_name + ": tensor \"" + name + "\" is listed in shard " +
                    shard + " but " + shard_path.string() + " does not hold it");
      c.add(name, c.files_.size() - 1, static_cast<size_t>(t - file.tensors().data()));
    }
  }
  c.read_ = std::make_shared<std::vector<std::atomic<bool>>>(c.tensors_.size());
  return c;
}

void Checkpoint::add(const std::string& name, size_t file, size_t index) {
  tensors_.emplace(name, Location{file, index, tensors_.size()});
}

const TensorView* Checkpoint::lookup(std::string_view name, bool mark_read) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) return nullptr;
  if (mark_read) (*read_)[it->second.order].store(true, std::memory_order_relaxed);
  return &files_[it->second.file].tensors()[it->second.index];
}

const TensorView* Checkpoint::find(std::string_view name) const { return lookup(name, true); }

const TensorView& Checkpoint::tensor(std::string_view name) const {
  if (const TensorView* t = find(name)) return *t;
  throw Error("checkpoint " + dir_ + ": no tensor named \"" + std::string(name) + "\"");
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, location] : tensors_) out.push_back(name);
  return out;
}

std::vector<std::string> Checkpoint::unread() const {
  std::vector<std::string> out;
  for (const auto& [name, location] : tensors_)
    if (!(*read_)[location.order].load(std::memory_order_relaxed)) out.push_back(name);
  return out;
}

bool Checkpoint::has_prefix(std::string_view prefix) const {
  const auto it = tensors_.lower_bound(prefix);
  return it != tensors_.end() && std::string_view(it->first).starts_with(prefix);
}

void Checkpoint::release_pages(std::string_view name) const {
  const TensorView* t = lookup(name, false);  // a release is not a read
  if (t == nullptr || t->bytes == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(t->data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(t->data) + t->bytes) / page * page;
  // Only whole pages of this tensor: neighbours sharing a page stay resident. Checkpoints are
  // private read-only file mappings, so dropped pages read back from the file.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace dq4
