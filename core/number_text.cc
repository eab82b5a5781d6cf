#include "core/number_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tailsweep {

std::string FormatDouble(double value) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, ptr);
}

std::string FormatForPeople(double value) {
  if (!std::isfinite(value)) return FormatDouble(value);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", value);
  return buf;
}

}  // namespace tailsweep
