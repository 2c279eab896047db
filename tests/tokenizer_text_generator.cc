#include "tokenizer_text_generator.h"

#include "../src/tokenizer/utf8.h"

namespace dq4::test {
namespace {

std::string utf8(char32_t c) {
  std::string out;
  tokenizer::append_utf8(out, c);
  return out;
}

const std::vector<std::string> kWords = {
    "the",   "The",     "of",       "and",     "Hello",  "world",  "tokenizer",    "isn't",
    "we'll", "THEY'RE", "I'm",      "you'd",   "it's",   "'s",     "'LL",          "don't",
    "café",  "naïve",   "Ångström", "façade",  "straße", "œuvre",  "quantization", "W4A8",
    "int4",  "GPU",     "llama",    "ChatGPT", "e.g.",   "x86_64", "aarch64",      "HTTP/1.1",
    "UTF-8", "über",    "São",      "Paulo",   "Zürich", "résumé"};

const std::vector<std::string> kCode = {"for (int i = 0; i < n; ++i) {",
                                        "x->y",
                                        "a == b",
                                        "#include <vector>",
                                        "std::string",
                                        "def f(x):\n    return x ** 2\n",
                                        "<div class=\"a\">",
                                        "{'key': [1, 2]}",
                                        "$HOME/.bashrc",
                                        "```python\n",
                                        "// comment",
                                        "/* block */",
                                        "...",
                                        "!!!",
                                        "?!",
                                        "\u2014",
                                        "\u2013",
                                        "\u00ab\u00bb",
                                        "\u201cquoted\u201d",
                                        "\\n",
                                        "0x1F",
                                        "a_b_c",
                                        "__init__",
                                        "i++;",
                                        "&&",
                                        "||",
                                        "=>",
                                        "::",
                                        "<<",
                                        ">>=",
                                        "@decorator",
                                        "#!/bin/sh",
                                        "%d%%",
                                        "[[",
                                        "]]",
                                        "~/",
                                        "^_^",
                                        "(:"};

const std::vector<std::string> kEmoji = {
    "\U0001F600",
    "\U0001F44D\U0001F3FD",
    "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
    "\U0001F1EF\U0001F1F5",
    "\u2764\uFE0F",
    "1\uFE0F\u20E3",
    "\U0001F3F3\uFE0F\u200D\U0001F308",
    "\U0001F9D1\U0001F3FF\u200D\U0001F4BB",
    "\u263A",
    "\U0001F525\U0001F525",
    "\U0001F680"};

const std::vector<std::string> kSpaces = {
    " ",      "  ",     "   ", "\t", "\n",     "\r\n",   "\r",   "\n\n", "\u00A0", "\u3000",
    "\u2028", "\u0085", "\v",  "\f", "\u2003", "\u200B", " \t ", "    ", "\t\t"};

const std::vector<std::string> kOdd = {"\uFFFD",
                                       "\uE000",
                                       "\uF8FF",
                                       "\U000F0001",
                                       "\u0301",
                                       "\u0308\u0301",
                                       "\uFEFF",
                                       "\u200D",
                                       "\uFFFF",
                                       "\u0001",
                                       "\u007F",
                                       "\u0090",
                                       "\uFB01",
                                       "\u2167",
                                       "\u00BD",
                                       "\u00B2",
                                       "\U0001D400\U0001D401",
                                       "\U00010000",
                                       "\u017F",
                                       "\u212A",
                                       "\u0130",
                                       "\u1E9E",
                                       "\u3099",
                                       "\uFF76\uFF9E",
                                       "\u00AD"};

}  // namespace

TextGenerator::TextGenerator(uint32_t seed, std::vector<std::string> special_texts)
    : rng_(seed), special_texts_(std::move(special_texts)) {
  for (const char* s : {"<|eot_id|>", "</s>", "<s>", "<unk>", "<|endoftext|>", "<|im_start|>",
                        "<think>", "<0x41>", "<|begin_of_text|>", "<|eot_id", "<s", "</s >"})
    special_texts_.push_back(s);
}

int TextGenerator::uniform(int low, int high) {
  return std::uniform_int_distribution<int>(low, high)(rng_);
}

std::string TextGenerator::random_chars(char32_t first, char32_t last, int min_count,
                                        int max_count) {
  std::string out;
  const int n = uniform(min_count, max_count);
  for (int i = 0; i < n; ++i)
    out += utf8(first + static_cast<char32_t>(uniform(0, static_cast<int>(last - first))));
  return out;
}

std::string TextGenerator::segment() {
  switch (uniform(0, 21)) {
    case 0:
    case 1:
    case 2:
      return pick(kWords);
    case 3:
      return random_chars('a', 'z', 1, 10);
    case 4: {  // decomposed accents: base letters with combining marks
      std::string out;
      for (int i = uniform(1, 4); i > 0; --i)
        out += random_chars('a', 'z', 1, 2) + random_chars(0x300, 0x36F, 1, 2);
      return out;
    }
    case 5:
      return random_chars(0x410, 0x44F, 2, 9);  // Cyrillic
    case 6:
      return random_chars(0x391, 0x3C9, 2, 7);  // Greek
    case 7:
      return random_chars(0x4E00, 0x9FA5, 1, 6);  // CJK
    case 8:
      return random_chars(0x3041, 0x3096, 1, 5) + random_chars(0x30A1, 0x30FA, 0, 4);
    case 9:
      return random_chars(0xAC00, 0xD7A3, 1, 5);  // Hangul syllables
    case 10:                                      // conjoining jamo, which NFC composes
      return random_chars(0x1100, 0x1112, 1, 1) + random_chars(0x1161, 0x1175, 1, 1) +
             random_chars(0x11A8, 0x11C2, 0, 1);
    case 11:
      return random_chars(0x621, 0x64A, 2, 7) + random_chars(0x64B, 0x652, 0, 2);
    case 12:
      return random_chars(0x5D0, 0x5EA, 2, 6) + random_chars(0x905, 0x939, 0, 3) +
             random_chars(0x93E, 0x94C, 0, 1) + random_chars(0xE01, 0xE2E, 0, 3) +
             random_chars(0x1780, 0x17B3, 0, 2);
    case 13:
      return pick(kEmoji);
    case 14:
    case 15: {
      std::string out;
      for (int i = uniform(1, 4); i > 0; --i) out += pick(kSpaces);
      return out;
    }
    case 16:
      return random_chars('0', '9', 1, 12);
    case 17:
      return random_chars(0x660, 0x669, 1, 4) + random_chars(0xFF10, 0xFF19, 0, 3) +
             (uniform(0, 1) ? "3.14" : "1,000,000");
    case 18:
    case 19:
      return pick(kCode);
    case 20:
      return pick(special_texts_);
    default:
      return pick(kOdd);
  }
}

std::string TextGenerator::next() {
  std::string text;
  const int segments = uniform(0, 10);
  for (int i = 0; i < segments; ++i) {
    text += segment();
    const int separator = uniform(0, 5);
    if (separator <= 2)
      text += " ";
    else if (separator == 3)
      text += pick(kSpaces);
  }
  return text;
}

}  // namespace dq4::test
