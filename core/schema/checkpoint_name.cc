#include "core/schema/checkpoint_name.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace tailsweep {

std::string CheckpointFileName(int64_t step) {
  return absl::StrFormat("step-%08d.pt", step);
}

absl::StatusOr<int64_t> CheckpointStepOf(absl::string_view name) {
  absl::string_view digits = name;
  const bool shaped = absl::ConsumePrefix(&digits, "step-") &&
                      absl::ConsumeSuffix(&digits, ".pt") &&
                      digits.size() >= 8 && digits.size() <= 18;
  bool all_digits = shaped;
  for (char c : digits) all_digits = all_digits && absl::ascii_isdigit(c);
  int64_t step = 0;
  if (!all_digits || !absl::SimpleAtoi(digits, &step) || step < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint name '", name,
        "': expected step-NNNNNNNN.pt (8 to 18 digits, step >= 1)"));
  }
  return step;
}

absl::StatusOr<CheckpointFile> NewestCheckpointIn(const std::string& dir) {
  CheckpointFile newest;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    absl::StatusOr<int64_t> step =
        CheckpointStepOf(entry.path().filename().string());
    if (step.ok() && *step > newest.step) {
      newest = {*step, entry.path().string()};
    }
  }
  if (newest.step == 0) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in ", dir));
  }
  return newest;
}

}  // namespace tailsweep
