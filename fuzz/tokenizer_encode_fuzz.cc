// libFuzzer target: arbitrary bytes as text for the fixture tokenizers (the first byte picks
// llama3, llama2, qwen3 or mistral from $DQ4_FIXTURES, each loaded once, whether special tokens
// are added and whether they are skipped when decoding). Encoding must succeed or, for invalid
// UTF-8 only, throw dq4::Error; the ids must decode, and streaming decode must give the same
// text. llama3 (byte-level, no normalizer) must also give the input back.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/kernels/error.h"
#include "dq4/tokenizer/stream_decoder.h"
#include "dq4/tokenizer/tokenizer.h"

namespace {

const dq4::Tokenizer& fixture(int which) {
  static const char* const kNames[] = {"tokenizer-llama3", "tokenizer-llama2", "tokenizer-qwen3",
                                       "tokenizer-mistral"};
  static const dq4::Tokenizer* loaded[4] = {};
  if (loaded[which] == nullptr) {
    const char* dir = std::getenv("DQ4_FIXTURES");
    if (dir == nullptr) {
      std::fprintf(stderr, "tokenizer_encode_fuzz: set DQ4_FIXTURES\n");
      std::abort();
    }
    loaded[which] =
        new dq4::Tokenizer(dq4::Tokenizer::from_directory(std::string(dir) + "/" + kNames[which]));
  }
  return *loaded[which];
}

bool valid_utf8(std::string_view text) {
  // The library's own check is what is under test; this one is deliberately naive and slow.
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<uint8_t>(text[i + k]);
      if ((b >> 6) != 2) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 4;
  const dq4::Tokenizer& tokenizer = fixture(which);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<dq4::TokenId> ids;
  try {
    ids = tokenizer.encode(text, data[0] & 4);
  } catch (const dq4::Error&) {
    if (valid_utf8(text)) __builtin_trap();  // only invalid UTF-8 may fail
    return 0;
  }
  if (!valid_utf8(text)) __builtin_trap();
  // One decode setting per input (streaming decode is most of an input's cost).
  const bool skip = data[0] & 8;
  const std::string decoded = tokenizer.decode(ids, skip);
  dq4::StreamDecoder stream(tokenizer, skip);
  std::string streamed;
  for (const dq4::TokenId id : ids) streamed += stream.step(id);
  streamed += stream.finish();
  if (streamed != decoded) __builtin_trap();
  if (which == 0 && !skip && !(data[0] & 4) && decoded != text) __builtin_trap();
  return 0;
}
