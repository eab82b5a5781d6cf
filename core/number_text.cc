#include "core/number_text.h"

#include <charconv>

namespace tailsweep {

std::string FormatDouble(double value) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, ptr);
}

}  // namespace tailsweep
