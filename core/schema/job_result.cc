#include "core/schema/job_result.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/schema/json_number.h"

namespace tailsweep {
namespace {

using nlohmann::json;

absl::Status Bad(absl::string_view what, absl::string_view field,
                 absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": field '", field, "' missing or not ", expected));
}

json StepOrNull(int64_t step) { return step >= 0 ? json(step) : json(nullptr); }

// Typed config values: whole numbers, numbers, booleans, names.
json ConfigJson(const std::vector<std::pair<std::string, std::string>>& kvs) {
  json doc = json::object();
  for (const auto& [key, value] : kvs) {
    uint64_t whole;
    double real;
    if (absl::SimpleAtoi(value, &whole)) {
      doc[key] = whole;
    } else if (absl::SimpleAtod(value, &real)) {
      doc[key] = JsonNumber(real);
    } else if (value == "true" || value == "false") {
      doc[key] = value == "true";
    } else {
      doc[key] = value;
    }
  }
  return doc;
}

// Reads typed fields of one object, remembering the first problem.
class Reader {
 public:
  Reader(const json& doc, absl::string_view what) : doc_(doc), what_(what) {}

  // NaN for null (results written before non-finite values were encoded
  // wrote them as null).
  double Number(const char* key) {
    const auto it = doc_.find(key);
    if (it != doc_.end() && it->is_null()) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    std::optional<double> v = NumberAt(doc_, key);
    if (!v) Fail(key, "a number");
    return v.value_or(0);
  }
  std::optional<double> OptionalNumber(const char* key) {
    return NumberAt(doc_, key);
  }
  int64_t Integer(const char* key) {
    const auto it = doc_.find(key);
    if (it == doc_.end() || !it->is_number_integer()) {
      Fail(key, "an integer");
      return 0;
    }
    return it->get<int64_t>();
  }
  // -1 for null.
  int64_t StepOrNone(const char* key) {
    const auto it = doc_.find(key);
    if (it != doc_.end() && it->is_null()) return -1;
    return Integer(key);
  }
  bool Bool(const char* key) {
    const auto it = doc_.find(key);
    if (it == doc_.end() || !it->is_boolean()) {
      Fail(key, "true or false");
      return false;
    }
    return it->get<bool>();
  }
  absl::Status status() const { return status_; }

 private:
  void Fail(const char* key, absl::string_view expected) {
    if (status_.ok()) status_ = Bad(what_, key, expected);
  }
  const json& doc_;
  std::string what_;
  absl::Status status_;
};

}  // namespace

std::string TrainResultJson(const TrainResult& r) {
  json doc = {{"steps_done", r.steps_done},
              {"resumed_from_step", r.resumed_from_step},
              {"final_loss", JsonNumber(r.final_loss)},
              {"diverged", r.diverged},
              {"diverged_step", StepOrNull(r.diverged_step)},
              {"collapsed", r.collapsed},
              {"collapse_step", StepOrNull(r.collapse_step)},
              {"stopped", r.stopped},
              {"config", ConfigJson(r.config)}};
  if (const auto& e = r.evaluation) {
    doc.update({{"ratio_mean", JsonNumber(e->ratio_mean)},
                {"ratio_median", JsonNumber(e->ratio_median)},
                {"ratio_ci_low", JsonNumber(e->ratio_ci_low)},
                {"ratio_ci_high", JsonNumber(e->ratio_ci_high)},
                {"spread_ratio", JsonNumber(e->spread_ratio)},
                {"delta", JsonNumber(e->delta)},
                {"eval_instances", e->eval_instances}});
    if (e->hill_stat) doc["hill_stat"] = JsonNumber(*e->hill_stat);
  }
  return doc.dump(2);
}

absl::StatusOr<TrainResult> ParseTrainResult(absl::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return absl::InvalidArgumentError("train result: not a JSON object");
  }
  Reader in(doc, "train result");
  TrainResult r;
  r.steps_done = in.Integer("steps_done");
  r.resumed_from_step = in.Integer("resumed_from_step");
  r.final_loss = in.Number("final_loss");
  r.diverged = in.Bool("diverged");
  r.diverged_step = in.StepOrNone("diverged_step");
  r.collapsed = in.Bool("collapsed");
  r.collapse_step = in.StepOrNone("collapse_step");
  r.stopped = in.Bool("stopped");
  if (doc.contains("ratio_median")) {
    EvalSummary e;
    e.ratio_mean = in.Number("ratio_mean");
    e.ratio_median = in.Number("ratio_median");
    e.ratio_ci_low = in.Number("ratio_ci_low");
    e.ratio_ci_high = in.Number("ratio_ci_high");
    e.spread_ratio = in.Number("spread_ratio");
    e.delta = in.Number("delta");
    e.eval_instances = in.Integer("eval_instances");
    e.hill_stat = in.OptionalNumber("hill_stat");
    r.evaluation = e;
  }
  if (!in.status().ok()) return in.status();
  const auto config = doc.find("config");
  if (config == doc.end() || !config->is_object()) {
    return Bad("train result", "config", "an object");
  }
  for (const auto& item : config->items()) {
    const json& v = item.value();
    r.config.emplace_back(item.key(),
                          v.is_string() ? v.get<std::string>() : v.dump());
  }
  return r;
}

std::string TailsResultJson(const std::vector<TailsRow>& rows) {
  json doc = json::array();
  for (const TailsRow& r : rows) {
    doc.push_back({{"seam", JsonNumber(r.seam)},
                   {"n", r.n},
                   {"index", JsonNumber(r.index)},
                   {"ed_mean", JsonNumber(r.ed_mean)},
                   {"ed_sd", JsonNumber(r.ed_sd)},
                   {"w2_mean", JsonNumber(r.w2_mean)},
                   {"w2_sd", JsonNumber(r.w2_sd)},
                   {"ed_noise", JsonNumber(r.ed_noise)},
                   {"w2_noise", JsonNumber(r.w2_noise)}});
  }
  return doc.dump(2);
}

absl::StatusOr<std::vector<TailsRow>> ParseTailsResult(absl::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_array() || doc.empty()) {
    return absl::InvalidArgumentError(
        "tails result: not a non-empty JSON array of rows");
  }
  std::vector<TailsRow> rows;
  for (const json& item : doc) {
    if (!item.is_object()) {
      return absl::InvalidArgumentError("tails result: a row is not an object");
    }
    Reader in(item, "tails result row");
    TailsRow r;
    r.seam = in.Number("seam");
    r.n = in.Integer("n");
    r.index = in.Number("index");
    r.ed_mean = in.Number("ed_mean");
    r.ed_sd = in.Number("ed_sd");
    r.w2_mean = in.Number("w2_mean");
    r.w2_sd = in.Number("w2_sd");
    r.ed_noise = in.Number("ed_noise");
    r.w2_noise = in.Number("w2_noise");
    if (!in.status().ok()) return in.status();
    rows.push_back(r);
  }
  return rows;
}

std::vector<NamedPoint> ResultPoints(const TrainResult& r) {
  std::vector<NamedPoint> out;
  if (const auto& e = r.evaluation) {
    const std::string p = kEvalMetricPrefix;
    const int64_t s = r.steps_done;
    out = {{p + "ratio_mean", s, e->ratio_mean},
           {p + "ratio_median", s, e->ratio_median},
           {p + "ratio_ci_low", s, e->ratio_ci_low},
           {p + "ratio_ci_high", s, e->ratio_ci_high},
           {p + "spread_ratio", s, e->spread_ratio},
           {p + "delta", s, e->delta}};
    if (e->hill_stat) out.push_back({p + "hill_stat", s, *e->hill_stat});
  }
  if (r.collapse_step >= 0) {
    out.push_back({kCollapseOnsetMetric, r.collapse_step,
                   static_cast<double>(r.collapse_step)});
  }
  if (r.diverged_step >= 0) {
    out.push_back({kDivergedOnsetMetric, r.diverged_step,
                   static_cast<double>(r.diverged_step)});
  }
  return out;
}

}  // namespace tailsweep
