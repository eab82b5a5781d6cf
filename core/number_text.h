#ifndef TAILSWEEP_CORE_NUMBER_TEXT_H_
#define TAILSWEEP_CORE_NUMBER_TEXT_H_

// Numbers as text, the same way everywhere (files, tables, job configs).

#include <string>

namespace tailsweep {

// Shortest decimal text that parses back to exactly `value`.
std::string FormatDouble(double value);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_NUMBER_TEXT_H_
