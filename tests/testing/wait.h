#ifndef TAILSWEEP_TESTS_TESTING_WAIT_H_
#define TAILSWEEP_TESTS_TESTING_WAIT_H_

// How the tests that run real processes wait: for the event itself (a row in
// the database, a line in a log, a file, a process gone), polled, never for a
// guessed number of seconds. The deadline only ends a test whose event never
// comes; it is the same everywhere and generous, because CI runs on a loaded
// 2-core machine where a step that takes 50 ms here can take 5 s there.
// A test that must show that something does *not* happen waits first for an
// event after which it cannot (the process that would do it has exited, the
// holder has logged that it stopped), then checks once.

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/testing/run_command.h"

namespace tailsweep::testing {

// Longest wait for one event. TAILSWEEP_TEST_DEADLINE_S overrides it (a
// developer bisecting a hang may want 30).
inline std::chrono::milliseconds EventDeadline() {
  if (const char* s = std::getenv("TAILSWEEP_TEST_DEADLINE_S")) {
    const int seconds = std::atoi(s);
    if (seconds > 0) return std::chrono::seconds(seconds);
  }
  return std::chrono::seconds(300);
}

// Polls `done()` every `every` until it returns true (then true) or
// `deadline` passes (then false, after one last look).
template <typename Done>
bool WaitUntil(
    Done done, std::chrono::milliseconds deadline = EventDeadline(),
    std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return done();
}

// Waits until the file at `path` contains `text` (a log line, say).
inline bool WaitForText(const std::string& path, const std::string& text,
                        std::chrono::milliseconds deadline = EventDeadline()) {
  return WaitUntil(
      [&] { return ReadFile(path).find(text) != std::string::npos; }, deadline);
}

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_WAIT_H_
