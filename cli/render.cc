#include "cli/render.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/number_text.h"
#include "core/schema/utf8.h"

namespace tailsweep::cli {

namespace {

void AppendHex(unsigned char c, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->append({'\\', 'x', kHex[c >> 4], kHex[c & 15]});
}

bool BidiControl(uint32_t cp) {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string EscapeControl(absl::string_view text, Lines lines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      const bool keep = c >= 0x20 && c != 0x7f;
      const bool line = c == '\n' || c == '\t';
      if (keep || (line && lines == Lines::kKeep)) {
        out.push_back(static_cast<char>(c));
      } else {
        AppendHex(c, &out);
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t n = Utf8SequenceAt(text, i, &cp);
    if (n == 0) {  // not UTF-8
      AppendHex(c, &out);
      ++i;
      continue;
    }
    if (cp <= 0x9f) {  // C1 controls
      for (size_t k = 0; k < n; ++k) {
        AppendHex(static_cast<unsigned char>(text[i + k]), &out);
      }
    } else if (BidiControl(cp)) {
      absl::StrAppend(&out, "\\u", absl::Hex(cp, absl::kZeroPad4));
    } else {
      out.append(text.data() + i, n);
    }
    i += n;
  }
  return out;
}

std::string TerminalSafeJson(absl::string_view dumped) {
  std::string out;
  out.reserve(dumped.size());
  for (size_t i = 0; i < dumped.size();) {
    const unsigned char c = static_cast<unsigned char>(dumped[i]);
    uint32_t cp = c;
    size_t n = 1;
    if (c >= 0x80) n = Utf8SequenceAt(dumped, i, &cp);
    if (n == 0) {  // not UTF-8 (dump() replaces such bytes): U+FFFD
      out += "\\ufffd";
      ++i;
      continue;
    }
    // These occur only inside strings, where \uXXXX means the same.
    if (cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || BidiControl(cp)) {
      absl::StrAppend(&out, "\\u", absl::Hex(cp, absl::kZeroPad4));
    } else {
      out.append(dumped.data() + i, n);
    }
    i += n;
  }
  return out;
}

namespace {

std::string Aligned(const Table& table) {
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

}  // namespace

std::string RenderText(const Table& table) {
  Table escaped = table;
  for (std::string& cell : escaped.header) {
    cell = EscapeControl(cell, Lines::kKeep);
  }
  for (auto& row : escaped.rows) {
    for (std::string& cell : row) cell = EscapeControl(cell, Lines::kKeep);
  }
  return Aligned(escaped);
}

namespace {

std::string CsvRecord(const std::vector<std::string>& fields) {
  std::vector<std::string> quoted;
  for (const std::string& f : fields) {
    quoted.push_back(CsvField(EscapeControl(f, Lines::kKeep)));
  }
  return absl::StrCat(absl::StrJoin(quoted, ","), "\r\n");
}

std::string MarkdownCell(const std::string& cell) {
  return EscapeControl(
      absl::StrReplaceAll(cell, {{"|", "\\|"}, {"\r\n", " "}, {"\n", " "}}));
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
