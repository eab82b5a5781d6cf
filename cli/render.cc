#include "cli/render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/number_text.h"

namespace tailsweep::cli {

std::string RenderText(const Table& table) {
  std::vector<size_t> width(table.header.size());
  for (size_t c = 0; c < width.size(); ++c) width[c] = table.header[c].size();
  for (const auto& row : table.rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c) {
      out += row[c];
      if (c + 1 < row.size() && c < width.size()) {
        out += std::string(width[c] - row[c].size() + 2, ' ');
      }
    }
    out += "\n";
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

namespace {

std::string CsvField(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  return absl::StrCat("\"", absl::StrReplaceAll(field, {{"\"", "\"\""}}), "\"");
}

std::string CsvRecord(const std::vector<std::string>& fields) {
  std::vector<std::string> quoted;
  for (const std::string& f : fields) quoted.push_back(CsvField(f));
  return absl::StrCat(absl::StrJoin(quoted, ","), "\r\n");
}

std::string MarkdownCell(const std::string& cell) {
  return absl::StrReplaceAll(cell, {{"|", "\\|"}, {"\r\n", " "}, {"\n", " "}});
}

std::string MarkdownRow(const std::vector<std::string>& cells) {
  std::vector<std::string> escaped;
  for (const std::string& c : cells) escaped.push_back(MarkdownCell(c));
  return absl::StrCat("| ", absl::StrJoin(escaped, " | "), " |\n");
}

}  // namespace

std::string RenderCsv(const Table& table) {
  std::string out = CsvRecord(table.header);
  for (const auto& row : table.rows) out += CsvRecord(row);
  return out;
}

std::string RenderMarkdown(const Table& table) {
  std::string out = MarkdownRow(table.header);
  out += "|";
  for (size_t i = 0; i < table.header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : table.rows) out += MarkdownRow(row);
  return out;
}

Table TailsTable(const std::vector<TailsRow>& rows) {
  Table t;
  t.header = {"seam",    "n",     "index",    "ed_mean", "ed_sd",
              "w2_mean", "w2_sd", "ed_noise", "w2_noise"};
  for (const TailsRow& r : rows) {
    t.rows.push_back({FormatDouble(r.seam), absl::StrCat(r.n),
                      FormatDouble(r.index), FormatDouble(r.ed_mean),
                      FormatDouble(r.ed_sd), FormatDouble(r.w2_mean),
                      FormatDouble(r.w2_sd), FormatDouble(r.ed_noise),
                      FormatDouble(r.w2_noise)});
  }
  return t;
}

}  // namespace tailsweep::cli
