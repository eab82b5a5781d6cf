#include "core/point_csv.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/number_text.h"

namespace tailsweep {
namespace {

bool ParseNumber(absl::string_view field, double* out) {
  const char* begin = field.data();
  const char* end = field.data() + field.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  return ec == std::errc() && ptr == end && begin != end;
}

}  // namespace

absl::StatusOr<PointSet> ParsePointsCsv(absl::string_view text,
                                        absl::string_view source) {
  PointSet out;
  int64_t line_number = 0;
  bool first_line = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    std::vector<double> row(fields.size());
    int64_t bad_field = -1;
    for (size_t k = 0; k < fields.size(); ++k) {
      fields[k] = absl::StripAsciiWhitespace(fields[k]);
      if (!ParseNumber(fields[k], &row[k]) && bad_field < 0) bad_field = k;
    }
    if (first_line && bad_field >= 0) {
      // A header line: keep its names.
      for (absl::string_view f : fields) out.columns.emplace_back(f);
      out.dims = static_cast<int64_t>(fields.size());
      first_line = false;
      continue;
    }
    first_line = false;
    const std::string where = absl::StrCat(source, ":", line_number);
    if (out.dims == 0) out.dims = static_cast<int64_t>(fields.size());
    if (static_cast<int64_t>(fields.size()) != out.dims) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected ", out.dims, " columns, found ",
                       fields.size(), " (every row needs the same count)"));
    }
    if (bad_field >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": column ", bad_field + 1, ": '",
                       fields[bad_field], "' is not a number"));
    }
    for (size_t k = 0; k < row.size(); ++k) {
      if (!std::isfinite(row[k])) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": column ", k + 1, ": '", fields[k],
                         "' is not finite; only finite numbers are allowed"));
      }
    }
    out.values.insert(out.values.end(), row.begin(), row.end());
    ++out.rows;
  }
  if (out.rows == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no data rows (need at least one point)"));
  }
  return out;
}

absl::StatusOr<PointSet> ReadPointsCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open for reading"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat(path, ": read error"));
  }
  return ParsePointsCsv(buffer.str(), path);
}

absl::Status WritePointsCsv(const std::string& path, const PointSet& points) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::InternalError(
          absl::StrCat(temp, ": cannot open for writing"));
    }
    if (!points.columns.empty()) {
      out << absl::StrJoin(points.columns, ",") << '\n';
    }
    std::string line;
    for (int64_t i = 0; i < points.rows; ++i) {
      line.clear();
      for (int64_t k = 0; k < points.dims; ++k) {
        if (k > 0) line += ',';
        line += FormatDouble(points.values[i * points.dims + k]);
      }
      line += '\n';
      out << line;
    }
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat(temp, ": write failed"));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", temp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace tailsweep
