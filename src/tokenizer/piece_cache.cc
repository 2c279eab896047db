#include "piece_cache.h"

#include <functional>

namespace dq4::tokenizer {
namespace {

// Slots are a power of two, at most half used to keep probe sequences short; the table doubles
// from kInitialSlots up to kMaxSlots.
constexpr size_t kInitialSlots = size_t{1} << 12;
constexpr size_t kMaxSlots = size_t{1} << 19;
constexpr size_t kMaxTextBytes = size_t{64} << 20;

}  // namespace

PieceCache::PieceCache() : slots_(kInitialSlots) {}

uint64_t PieceCache::hash_of(std::string_view piece) {
  const uint64_t h = std::hash<std::string_view>()(piece);
  return h == 0 ? 1 : h;
}

const PieceCache::Slot& PieceCache::find(std::string_view piece, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.hash == 0) return slot;
    if (slot.hash == hash && slot.text_length == piece.size() &&
        std::string_view(text_).substr(slot.text_offset, slot.text_length) == piece)
      return slot;
  }
}

bool PieceCache::lookup(std::string_view piece, std::vector<TokenId>& out) const {
  const uint64_t hash = hash_of(piece);
  std::lock_guard<std::mutex> lock(mutex_);
  const Slot& slot = find(piece, hash);
  if (slot.hash == 0) return false;
  out.insert(out.end(), ids_.begin() + slot.ids_offset,
             ids_.begin() + slot.ids_offset + slot.ids_length);
  return true;
}

void PieceCache::insert(std::string_view piece, std::span<const TokenId> ids) {
  const uint64_t hash = hash_of(piece);
  std::lock_guard<std::mutex> lock(mutex_);
  if (2 * (used_ + 1) > slots_.size()) {
    if (slots_.size() >= kMaxSlots) return;  // full: keep what is there
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.hash == 0) continue;
      size_t i = s.hash & mask;
      while (slots_[i].hash != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  if (text_.size() + piece.size() > kMaxTextBytes) return;
  Slot& slot = const_cast<Slot&>(find(piece, hash));
  if (slot.hash != 0) return;  // another thread got there first
  slot = Slot{hash, static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(piece.size()),
              static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(ids.size())};
  text_.append(piece);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ++used_;
}

}  // namespace dq4::tokenizer
