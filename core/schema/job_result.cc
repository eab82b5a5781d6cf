#include "core/schema/job_result.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/schema/json_number.h"

namespace tailsweep {
namespace {

using nlohmann::json;

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

}  // namespace

// Points to 6 significant digits: figures need no more.
json SamplesJson(const std::vector<PointSample>& samples) {
  json out = json::array();
  auto rows = [](const std::vector<std::vector<double>>& points) {
    json a = json::array();
    for (const auto& p : points) {
      json row = json::array();
      for (double v : p) {
        char text[32];
        std::snprintf(text, sizeof text, "%.6g", v);
        row.push_back(std::strtod(text, nullptr));
      }
      a.push_back(std::move(row));
    }
    return a;
  };
  for (const PointSample& s : samples) {
    out.push_back({{"instance", s.instance},
                   {"target", rows(s.target)},
                   {"prediction", rows(s.prediction)}});
  }
  return out;
}

namespace {

absl::StatusOr<std::vector<PointSample>> ParseSamples(const json& doc) {
  const absl::Status bad = absl::InvalidArgumentError(
      "train result: field 'samples' must be an array of at most 16 "
      "{\"instance\": integer, \"target\": [[number...]...], "
      "\"prediction\": [[number...]...]} of at most 1024 points");
  if (!doc.is_array() || doc.size() > 16) return bad;
  std::vector<PointSample> out;
  auto rows = [](const json& a,
                 std::vector<std::vector<double>>* points) -> bool {
    if (!a.is_array() || a.size() > 1024) return false;
    for (const json& row : a) {
      if (!row.is_array() || row.size() > 64) return false;
      std::vector<double> p;
      for (const json& v : row) {
        if (!v.is_number()) return false;
        p.push_back(v.get<double>());
      }
      points->push_back(std::move(p));
    }
    return true;
  };
  for (const json& s : doc) {
    PointSample p;
    if (!s.is_object() || !s.contains("instance") ||
        !s["instance"].is_number_integer() || !s.contains("target") ||
        !s.contains("prediction") || !rows(s["target"], &p.target) ||
        !rows(s["prediction"], &p.prediction)) {
      return bad;
    }
    p.instance = s["instance"].get<int64_t>();
    out.push_back(std::move(p));
  }
  return out;
}

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
  if (!r.collapse_rule.empty()) doc["collapse_rule"] = r.collapse_rule;
  if (r.collapse_onsets) {
    json onsets = json::object();
    for (CollapseRule rule :
         {CollapseRule::kAnyStep, CollapseRule::kLoggedStep,
          CollapseRule::kLoggedRun, CollapseRule::kFinalEval}) {
      onsets[std::string(CollapseRuleName(rule))] =
          StepOrNull(OnsetUnder(*r.collapse_onsets, rule));
    }
    doc["collapse_onsets"] = std::move(onsets);
  }
  if (r.lease_ran_out) doc["lease_ran_out"] = true;
  if (!r.early_stop.empty()) doc["early_stop"] = r.early_stop;
  if (!r.version.empty()) doc["version"] = r.version;
  if (!r.device.empty()) doc["device"] = r.device;
  if (r.evaluation) doc.update(EvalSummaryJson(*r.evaluation));
  if (!r.samples.empty()) doc["samples"] = SamplesJson(r.samples);
  return doc.dump(2);
}

absl::StatusOr<TrainResult> ParseTrainResult(absl::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return absl::InvalidArgumentError("train result: not a JSON object");
  }
  JsonFields in(doc, "train result");
  TrainResult r;
  r.steps_done = in.Integer("steps_done");
  r.resumed_from_step = in.Integer("resumed_from_step");
  r.final_loss = in.Number("final_loss");
  r.diverged = in.Bool("diverged");
  r.diverged_step = in.StepOrNone("diverged_step");
  r.collapsed = in.Bool("collapsed");
  r.collapse_step = in.StepOrNone("collapse_step");
  r.stopped = in.Bool("stopped");
  if (doc.contains("lease_ran_out")) r.lease_ran_out = in.Bool("lease_ran_out");
  if (doc.contains("collapse_rule") && doc["collapse_rule"].is_string()) {
    r.collapse_rule = doc["collapse_rule"].get<std::string>();
  }
  if (doc.contains("collapse_onsets") && doc["collapse_onsets"].is_object()) {
    JsonFields o(doc["collapse_onsets"], "train result's collapse_onsets");
    auto onset = [&](CollapseRule rule) {
      return o.StepOrNone(std::string(CollapseRuleName(rule)).c_str());
    };
    CollapseOnsets onsets;
    onsets.any_step = onset(CollapseRule::kAnyStep);
    onsets.logged_step = onset(CollapseRule::kLoggedStep);
    onsets.logged_run = onset(CollapseRule::kLoggedRun);
    onsets.final_eval = onset(CollapseRule::kFinalEval);
    if (!o.status().ok()) return o.status();
    r.collapse_onsets = onsets;
  }
  if (doc.contains("early_stop")) {
    const json& why = doc["early_stop"];
    if (!why.is_string() ||
        (why != kEarlyStopDiverged && why != kEarlyStopCollapse)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "train result: field 'early_stop' must be \"", kEarlyStopDiverged,
          "\" or \"", kEarlyStopCollapse, "\""));
    }
    r.early_stop = why.get<std::string>();
  }
  if (doc.contains("version") && doc["version"].is_string()) {
    r.version = doc["version"].get<std::string>();
  }
  if (doc.contains("device") && doc["device"].is_string()) {
    r.device = doc["device"].get<std::string>();
  }
  if (!in.status().ok()) return in.status();
  if (doc.contains("ratio_median")) {
    absl::StatusOr<EvalSummary> e = ParseEvalSummary(doc, "train result");
    if (!e.ok()) return e.status();
    r.evaluation = *e;
  }
  if (doc.contains("samples")) {
    absl::StatusOr<std::vector<PointSample>> s = ParseSamples(doc["samples"]);
    if (!s.ok()) return s.status();
    r.samples = std::move(*s);
  }
  const auto config = doc.find("config");
  if (config == doc.end() || !config->is_object()) {
    return absl::InvalidArgumentError(
        "train result: field 'config' missing or not an object");
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
    JsonFields in(item, "tails result row");
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

std::vector<MetricPoint> ResultPoints(const TrainResult& r) {
  std::vector<MetricPoint> out;
  if (r.evaluation) out = EvalPoints(*r.evaluation, r.steps_done);
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
