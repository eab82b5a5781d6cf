#include "cli/output.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/render.h"

namespace tailsweep::cli {

void PrintJson(const nlohmann::json& doc) {
  std::cout << TerminalSafeJson(doc.dump(
                   2, ' ', false, nlohmann::json::error_handler_t::replace))
            << "\n";
}

void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::cout << RenderText({header, rows});
}

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

void Progress::Update(int64_t done, const std::string& detail) {
  const auto now = std::chrono::steady_clock::now();
  const bool finished = done >= total_;
  if (!tty_ && !finished && now - last_print_ < std::chrono::seconds(5)) return;
  last_print_ = now;
  const std::string line = Line(done, detail);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), finished ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

std::string Progress::Line(int64_t done, const std::string& detail) const {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = done > 0 ? elapsed * (total_ - done) / done : 0;
  const double rate = elapsed > 0 ? done / elapsed : 0;
  return absl::StrFormat(
      "%s: %d/%d (%.0f%%) %s%s%.3g/s, elapsed %.1fs, eta %.1fs", label_, done,
      total_, total_ > 0 ? 100.0 * done / total_ : 100.0, detail,
      detail.empty() ? "" : ", ", rate, elapsed, eta);
}

}  // namespace tailsweep::cli
