#ifndef TAILSWEEP_TESTS_TESTING_TINY_SPEC_H_
#define TAILSWEEP_TESTS_TESTING_TINY_SPEC_H_

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tailsweep {

// A train sweep of a tiny model (a step takes a few ms): `grid` as YAML
// lines ("  kernel: [softmax, log]\n"), and `fixed` keys over the tiny
// model's (a loss point every 5 steps, a checkpoint every 10).
inline std::string TinySpec(
    const std::string& name, const std::string& grid,
    const std::vector<std::pair<std::string, std::string>>& fixed) {
  std::vector<std::pair<std::string, std::string>> keys = {
      {"n_points", "64"},      {"d_model", "16"},
      {"heads", "2"},          {"layers", "1"},
      {"warmup", "3"},         {"checkpoint_every", "10"},
      {"eval_instances", "4"}, {"reference_trials", "4"},
      {"log_every", "5"}};
  for (const auto& [key, value] : fixed) {
    auto it = std::find_if(keys.begin(), keys.end(),
                           [&](const auto& kv) { return kv.first == key; });
    if (it != keys.end()) {
      it->second = value;
    } else {
      keys.emplace_back(key, value);
    }
  }
  std::string out = absl::StrCat("name: ", name, "\ngrid:\n", grid, "fixed:\n");
  for (const auto& [key, value] : keys)
    absl::StrAppend(&out, "  ", key, ": ", value, "\n");
  return out;
}

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_TESTING_TINY_SPEC_H_
