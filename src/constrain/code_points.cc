#include "code_points.h"

#include <algorithm>

namespace dq4::constrain {

long decode_utf8(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  size_t need;
  char32_t c;
  char32_t min;
  if (lead < 0x80) {
    ++pos;
    return lead;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2, c = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3, c = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4, c = lead & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (pos + need > text.size()) return -1;
  for (size_t i = 1; i < need; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return -1;
    c = (c << 6) | (byte(pos + i) & 0x3F);
  }
  if (c < min || c > kMaxCodePoint || (c >= 0xD800 && c <= 0xDFFF)) return -1;
  pos += need;
  return static_cast<long>(c);
}

bool valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (decode_utf8(text, pos) < 0) return false;
  }
  return true;
}

void write_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

CodePointSet CodePointSet::range(char32_t first, char32_t last) {
  CodePointSet set;
  set.add(first, last);
  return set;
}

void CodePointSet::add(char32_t first, char32_t last) {
  if (first > last) return;
  std::vector<std::pair<char32_t, char32_t>> merged;
  merged.reserve(ranges_.size() + 1);
  bool placed = false;
  for (const auto& r : ranges_) {
    if (r.second + 1 < first) {
      merged.push_back(r);
    } else if (last + 1 < r.first) {
      if (!placed) merged.emplace_back(first, last), placed = true;
      merged.push_back(r);
    } else {
      first = std::min(first, r.first);
      last = std::max(last, r.second);
    }
  }
  if (!placed) merged.emplace_back(first, last);
  ranges_ = std::move(merged);
}

void CodePointSet::add(const CodePointSet& other) {
  for (const auto& r : other.ranges_) add(r.first, r.second);
}

CodePointSet CodePointSet::complement() const {
  CodePointSet out;
  char32_t next = 0;
  for (const auto& r : ranges_) {
    if (r.first > next) out.add(next, r.first - 1);
    next = r.second + 1;
  }
  if (next <= kMaxCodePoint) out.add(next, kMaxCodePoint);
  CodePointSet surrogates = range(0xD800, 0xDFFF);
  return out.minus(surrogates);
}

CodePointSet CodePointSet::intersect(const CodePointSet& other) const {
  CodePointSet out;
  for (const auto& a : ranges_) {
    for (const auto& b : other.ranges_) {
      const char32_t first = std::max(a.first, b.first);
      const char32_t last = std::min(a.second, b.second);
      if (first <= last) out.add(first, last);
    }
  }
  return out;
}

CodePointSet CodePointSet::minus(const CodePointSet& other) const {
  CodePointSet out;
  for (const auto& a : ranges_) {
    char32_t first = a.first;
    bool open = true;
    for (const auto& b : other.ranges_) {
      if (b.second < first || b.first > a.second) continue;
      if (b.first > first) out.add(first, b.first - 1);
      if (b.second >= a.second) {
        open = false;
        break;
      }
      first = b.second + 1;
    }
    if (open) out.add(first, a.second);
  }
  return out;
}

bool CodePointSet::contains(char32_t c) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), c,
                             [](char32_t v, const auto& r) { return v < r.first; });
  return it != ranges_.begin() && std::prev(it)->second >= c;
}

}  // namespace dq4::constrain
