#include "core/tails_job.h"

#include <cmath>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/job_config.h"
#include "core/number_text.h"

namespace tailsweep {
namespace {

struct TailsKey {
  JobKey key;
  std::function<absl::Status(TailsJobConfig&, absl::string_view)> set;
  std::function<std::string(const TailsJobConfig&)> get;
};

const std::vector<TailsKey>& Keys() {
  static const auto* keys = new std::vector<TailsKey>{
      {{"seam", "seam quantile q0 (a number in (0, 1))"},
       [](TailsJobConfig& c, absl::string_view v) {
         double x;
         if (!absl::SimpleAtod(v, &x) || !(x > 0 && x < 1)) {
           return BadKeyValue("seam", v, "a number in (0, 1)");
         }
         c.seam = x;
         return absl::OkStatus();
       },
       [](const TailsJobConfig& c) { return FormatDouble(c.seam); }},
      {{"n", "sample budget N (a whole number >= 2)"},
       [](TailsJobConfig& c, absl::string_view v) {
         int64_t x;
         if (!absl::SimpleAtoi(v, &x) || x < 2) {
           return BadKeyValue("n", v, "a whole number >= 2");
         }
         c.n = x;
         return absl::OkStatus();
       },
       [](const TailsJobConfig& c) { return absl::StrCat(c.n); }},
      {{"indices", "candidate indices (START:STOP:STEP or a,b,c; all > 0)"},
       [](TailsJobConfig& c, absl::string_view v) -> absl::Status {
         absl::StatusOr<std::vector<double>> grid =
             ParseIndexGrid("indices", v);
         if (!grid.ok()) return grid.status();
         for (double a : *grid) {
           if (!(a > 0)) return BadKeyValue("indices", v, "indices > 0");
         }
         c.indices = std::string(v);
         return absl::OkStatus();
       },
       [](const TailsJobConfig& c) { return c.indices; }},
      {{"trials", "trials per job (a whole number >= 2)"},
       [](TailsJobConfig& c, absl::string_view v) {
         int64_t x;
         if (!absl::SimpleAtoi(v, &x) || x < 2) {
           return BadKeyValue("trials", v, "a whole number >= 2");
         }
         c.trials = x;
         return absl::OkStatus();
       },
       [](const TailsJobConfig& c) { return absl::StrCat(c.trials); }},
      {{"seed", "random seed (a whole number >= 0)"},
       [](TailsJobConfig& c, absl::string_view v) {
         uint64_t x;
         if (!absl::SimpleAtoi(v, &x))
           return BadKeyValue("seed", v, "a whole number >= 0");
         c.seed = x;
         return absl::OkStatus();
       },
       [](const TailsJobConfig& c) { return absl::StrCat(c.seed); }},
      {{"reference_index", "reference index a* (a number > 0)"},
       [](TailsJobConfig& c, absl::string_view v) {
         double x;
         if (!absl::SimpleAtod(v, &x) || !(x > 0) || !std::isfinite(x)) {
           return BadKeyValue("reference_index", v, "a number > 0");
         }
         c.reference_index = x;
         return absl::OkStatus();
       },
       [](const TailsJobConfig& c) { return FormatDouble(c.reference_index); }},
  };
  return *keys;
}

}  // namespace

const std::vector<JobKey>& TailsJobKeys() {
  static const auto* keys = [] {
    auto* out = new std::vector<JobKey>;
    for (const TailsKey& k : Keys()) out->push_back(k.key);
    return out;
  }();
  return *keys;
}

absl::Status SetTailsJobKey(TailsJobConfig& config, absl::string_view key,
                            absl::string_view value) {
  std::string names;
  for (const TailsKey& k : Keys()) {
    if (k.key.name == key) return k.set(config, value);
    absl::StrAppend(&names, names.empty() ? "" : ", ", k.key.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown key '", key, "'; allowed: ", names));
}

std::vector<std::pair<std::string, std::string>> TailsJobToKeyValues(
    const TailsJobConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TailsKey& k : Keys()) out.emplace_back(k.key.name, k.get(config));
  return out;
}

absl::StatusOr<std::vector<double>> ParseIndexGrid(absl::string_view what,
                                                   absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  std::vector<double> out;
  if (parts.size() == 1) {
    for (absl::string_view item : absl::StrSplit(text, ',')) {
      double v;
      if (!absl::SimpleAtod(item, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": '", item,
                         "' is not a number; expected a comma-separated "
                         "list or START:STOP:STEP"));
      }
      out.push_back(v);
    }
    return out;
  }
  double start, stop, step;
  if (parts.size() != 3 || !absl::SimpleAtod(parts[0], &start) ||
      !absl::SimpleAtod(parts[1], &stop) ||
      !absl::SimpleAtod(parts[2], &step) || !(step > 0) || stop < start) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": '", text,
        "' is not START:STOP:STEP with STEP > 0 and STOP >= START, nor a "
        "comma-separated list"));
  }
  for (int64_t k = 0; start + k * step <= stop + 1e-9 * step; ++k) {
    // Round so 1.1 + 4 * 0.1 prints and compares as 1.5.
    out.push_back(std::round((start + k * step) * 1e12) / 1e12);
  }
  return out;
}

}  // namespace tailsweep
