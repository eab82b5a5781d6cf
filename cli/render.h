#ifndef TAILSWEEP_CLI_RENDER_H_
#define TAILSWEEP_CLI_RENDER_H_

// How tables become text: pure functions from a table to the bytes a
// command prints, one per format, so every format is tested against a
// golden string. The coordinator computes the tables' contents
// (coordinator/aggregate.h); these only render.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/schema/tails_row.h"

namespace tailsweep::cli {

// Text from elsewhere (job errors, stderr tails, worker ids, sweep names)
// made safe for a terminal: C0 controls, DEL, C1 controls (U+0080-U+009F)
// and bytes that are not UTF-8 become \xHH (ESC shows as \x1b), the
// bidirectional overrides U+202A-U+202E and U+2066-U+2069 become \u202e and
// so on; everything else, other UTF-8 included, is kept. kKeep keeps line
// feeds and tabs (logs, multi-line fields); kEscape escapes them too (one
// line).
enum class Lines { kKeep, kEscape };
std::string EscapeControl(absl::string_view text, Lines lines = Lines::kEscape);

// A JSON document as nlohmann::json::dump writes it (C0 controls already
// \u-escaped; bytes that are not UTF-8 replaced), with DEL, C1 controls and
// the bidirectional overrides \u-escaped too: safe on a terminal, and the
// same JSON value.
std::string TerminalSafeJson(absl::string_view dumped);

// Every table renderer below escapes its cells (EscapeControl, line feeds
// and tabs kept).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as wide as the header
};

// Columns left-aligned and padded to their widest cell, two spaces apart;
// one line per row, the header first.
std::string RenderText(const Table& table);

// RFC 4180: fields separated by commas, records by CRLF, a field holding a
// comma, a double quote or LF is quoted with its quotes doubled (line feeds
// and tabs in a field are kept, other controls escaped).
std::string RenderCsv(const Table& table);

// A GitHub-flavoured Markdown table; '|' in a cell is escaped, line breaks
// become spaces.
std::string RenderMarkdown(const Table& table);

// The tail testbed's table, as `lab tails` and `tailsweep results` (for a
// tails sweep) print it: seam, n, index, ed_mean, ed_sd, w2_mean, w2_sd,
// ed_noise, w2_noise, numbers in shortest round-trip form.
Table TailsTable(const std::vector<TailsRow>& rows);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_RENDER_H_
