#pragma once
// Tests of random inputs draw fewer of them in the sanitized build: it looks for memory errors and
// undefined behaviour on the same code paths at a fraction of the speed, while the statistics (how
// many generations validate, how close a distribution comes) are the release build's to carry.

namespace dq4::test {

#ifdef DQ4_SANITIZED_BUILD
inline constexpr int kSanitizedShare = 5;
#else
inline constexpr int kSanitizedShare = 1;
#endif

// `n` random cases, a fifth of them in the sanitized build.
constexpr int cases_to_draw(int n) { return n / kSanitizedShare; }

}  // namespace dq4::test
