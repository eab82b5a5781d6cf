#ifndef TAILSWEEP_CLI_RENDER_H_
#define TAILSWEEP_CLI_RENDER_H_

// How tables become text: pure functions from a table to the bytes a
// command prints, one per format, so every format is tested against a
// golden string. The coordinator computes the tables' contents
// (coordinator/aggregate.h); these only render.

#include <string>
#include <vector>

#include "core/tail_testbed.h"

namespace tailsweep::cli {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as wide as the header
};

// Columns left-aligned and padded to their widest cell, two spaces apart;
// one line per row, the header first.
std::string RenderText(const Table& table);

// RFC 4180: fields separated by commas, records by CRLF, a field holding a
// comma, a double quote, CR or LF is quoted with its quotes doubled.
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
