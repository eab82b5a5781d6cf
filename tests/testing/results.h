#ifndef TAILSWEEP_TESTS_TESTING_RESULTS_H_
#define TAILSWEEP_TESTS_TESTING_RESULTS_H_

// Valid result.json documents for store, service and aggregation tests: a
// train result (core/schema/job_result.h) with `overrides` merged on top.
// When the overrides hold ratio_median, the other evaluation fields are
// there too (null, unless overridden), as a real evaluated result has them.

#include <nlohmann/json.hpp>
#include <string>

namespace tailsweep::testing {

inline std::string TestResult(const std::string& overrides = "{}") {
  nlohmann::json doc = {{"steps_done", 10},
                        {"resumed_from_step", 0},
                        {"final_loss", 0.5},
                        {"diverged", false},
                        {"diverged_step", nullptr},
                        {"collapsed", false},
                        {"collapse_step", nullptr},
                        {"stopped", false},
                        {"config", nlohmann::json::object()}};
  const nlohmann::json extra = nlohmann::json::parse(overrides);
  if (extra.contains("ratio_median")) {
    for (const char* key : {"ratio_mean", "ratio_ci_low", "ratio_ci_high",
                            "spread_ratio", "delta"}) {
      doc[key] = nullptr;
    }
    doc["eval_instances"] = 8;
  }
  doc.update(extra);
  return doc.dump();
}

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_RESULTS_H_
