#pragma once
// Random text for the differential tokenizer tests: mixed scripts (Latin with composed and
// decomposed accents, Cyrillic, Greek, CJK, Hangul syllables and jamo, Arabic, Hebrew, Indic,
// Thai), emoji with skin tones, ZWJ sequences and flags, whitespace runs (tabs, CR/LF, NBSP,
// U+3000, U+2028, U+0085), digit runs in several scripts, code and punctuation, special-token
// text, and odd code points (U+FFFD, private use, lone combining marks, noncharacters). Only
// long-assigned blocks, so that the Unicode versions of PCRE2, ICU and Rust agree.

#include <random>
#include <string>
#include <vector>

namespace dq4::test {

class TextGenerator {
 public:
  // `special_texts`: texts to splice in as written special tokens (and near misses of them).
  TextGenerator(uint32_t seed, std::vector<std::string> special_texts);
  std::string next();

 private:
  std::string segment();
  std::string random_chars(char32_t first, char32_t last, int min_count, int max_count);
  int uniform(int low, int high);  // inclusive
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(uniform(0, static_cast<int>(items.size()) - 1))];
  }

  std::mt19937 rng_;
  std::vector<std::string> special_texts_;
};

}  // namespace dq4::test
