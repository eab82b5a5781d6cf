#ifndef TAILSWEEP_CORE_NUMBER_TEXT_H_
#define TAILSWEEP_CORE_NUMBER_TEXT_H_

// Numbers and CSV fields as text, the same way everywhere (files, tables,
// job configs, exports, the HTTP API).

#include <string>

#include "absl/strings/string_view.h"

namespace tailsweep {

// Shortest decimal text that parses back to exactly `value`.
std::string FormatDouble(double value);

// For tables people read: 4 significant digits (0.2177, 1.234e-05), "nan",
// "inf", "-inf". Files, exports and JSON keep FormatDouble's full value.
std::string FormatForPeople(double value);

// A CSV field (RFC 4180): as it is, or in double quotes (quotes doubled)
// when it holds a comma, a quote or a line break.
std::string CsvField(absl::string_view text);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_NUMBER_TEXT_H_
