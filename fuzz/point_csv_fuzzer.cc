// Fuzz target: the point CSV reader on arbitrary bytes.

#include <cstddef>
#include <cstdint>

#include "core/point_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tailsweep::PointSet> points =
      tailsweep::ParsePointsCsv(text, "fuzz.csv");
  if (points.ok() && points->values.size() !=
                         static_cast<size_t>(points->rows * points->dims)) {
    __builtin_trap();  // the shape must match the values
  }
  return 0;
}
