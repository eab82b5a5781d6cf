#ifndef TAILSWEEP_CLI_OUTPUT_H_
#define TAILSWEEP_CLI_OUTPUT_H_

// What commands print: JSON documents, aligned text tables, and progress on
// stderr. Numbers are written in shortest round-trip form (full precision).

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tailsweep::cli {

// Writes `doc` to stdout, indented, with a trailing newline; safe on a
// terminal (TerminalSafeJson, cli/render.h).
void PrintJson(const nlohmann::json& doc);

// Writes a table to stdout: a header row, then rows; columns left-aligned
// and padded to their widest cell.
void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

// Progress of long work on stderr: on a terminal one line rewritten in
// place, elsewhere a line at most every few seconds and at the end.
// Thread-compatible (update from one thread).
class Progress {
 public:
  Progress(std::string label, int64_t total);
  void Update(int64_t done, const std::string& detail = "");
  // The line Update prints: "LABEL: done/total (p%) DETAIL, rate, elapsed,
  // eta" (for callers that draw it themselves).
  std::string Line(int64_t done, const std::string& detail = "") const;

 private:
  std::string label_;
  int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
};

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_OUTPUT_H_
