#ifndef TAILSWEEP_CORE_NUMBER_TEXT_H_
#define TAILSWEEP_CORE_NUMBER_TEXT_H_

// Numbers as text, the same way everywhere (files, tables, job configs).

#include <string>

namespace tailsweep {

// Shortest decimal text that parses back to exactly `value`.
std::string FormatDouble(double value);

// For tables people read: 4 significant digits (0.2177, 1.234e-05), "nan",
// "inf", "-inf". Files, exports and JSON keep FormatDouble's full value.
std::string FormatForPeople(double value);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_NUMBER_TEXT_H_
