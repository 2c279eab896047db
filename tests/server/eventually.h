#pragma once
// Polling for a condition another thread or process brings about, for the server tests.

#include <chrono>
#include <thread>

namespace dq4::test {

// Whether `done()` holds within 10 s (checked every 10 ms).
template <class F>
bool eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace dq4::test
