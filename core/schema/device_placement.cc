#include "core/schema/device_placement.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tailsweep {

absl::StatusOr<int> ParseGpus(absl::string_view value) {
  int gpus = 0;
  if (!absl::SimpleAtoi(value, &gpus) || gpus < 1 || gpus > kMaxGpusPerJob) {
    return absl::InvalidArgumentError(
        absl::StrCat("key '", kGpusKey, "': '", value,
                     "' is not a whole number from 1 to ", kMaxGpusPerJob));
  }
  return gpus;
}

absl::StatusOr<int> JobGpus(
    const std::vector<std::pair<std::string, std::string>>& params) {
  for (const auto& [key, value] : params) {
    if (key == kGpusKey) return ParseGpus(value);
  }
  return 1;
}

std::optional<std::vector<int>> PlaceJob(std::vector<int>& free, int gpus) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(free.size()); ++i) {
    if (free[i] > 0) order.push_back(i);
  }
  if (static_cast<int>(order.size()) < gpus) return std::nullopt;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return free[a] > free[b]; });
  order.resize(gpus);
  std::sort(order.begin(), order.end());
  for (int unit : order) --free[unit];
  return order;
}

}  // namespace tailsweep
