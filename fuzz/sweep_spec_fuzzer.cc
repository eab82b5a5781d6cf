// Fuzz target: the sweep-spec parser and grid expansion on arbitrary text.
// Either may refuse the input; neither may crash, hang or grow without bound.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/schema/sweep_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tailsweep::SweepSpec> spec =
      tailsweep::ParseSweepSpec(text, "fuzz.yaml");
  if (spec.ok()) tailsweep::ExpandSweep(*spec).IgnoreError();
  return 0;
}
