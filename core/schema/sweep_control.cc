// A sweep's control keys (sweep_control.h): checks, the spec's keys, and
// the ASHA rule's JSON.

#include "core/schema/sweep_control.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/number_text.h"
#include "core/schema/job_kinds.h"
#include "core/schema/spec_yaml.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec_parts.h"

namespace tailsweep {

absl::Status CheckTag(absl::string_view key, absl::string_view value) {
  if (key.empty() || key.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("tag key '", key,
                     "': allowed: 1-64 letters, digits, '-', '_', '.', "
                     "':', '/'"));
  }
  for (char c : key) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' &&
        c != ':' && c != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("tag key '", key,
                       "': allowed: 1-64 letters, digits, '-', '_', '.', "
                       "':', '/'"));
    }
  }
  if (value.size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tag '", key, "': a value holds at most 256 characters (got ",
        value.size(), ")"));
  }
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20) {
      return absl::InvalidArgumentError(
          absl::StrCat("tag '", key, "': a value holds no control characters"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPriority(int64_t priority) {
  if (priority < kMinPriority || priority > kMaxPriority) {
    return absl::InvalidArgumentError(absl::StrCat(
        "priority ", priority, " is out of range; allowed: ", kMinPriority,
        "..", kMaxPriority));
  }
  return absl::OkStatus();
}

std::string AshaJson(const std::optional<AshaRule>& rule) {
  if (!rule) return "";
  return nlohmann::json{{"rule", "asha"},
                        {"metric", rule->metric},
                        {"goal", rule->maximize ? "maximize" : "minimize"},
                        {"min_steps", rule->min_steps},
                        {"reduction", rule->reduction}}
      .dump();
}

std::optional<AshaRule> AshaFromJson(absl::string_view json) {
  if (json.empty()) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (!doc.is_object() || doc.value("rule", "") != "asha") return std::nullopt;
  AshaRule rule;
  rule.metric = doc.value("metric", "");
  rule.maximize = doc.value("goal", "") == "maximize";
  rule.min_steps = doc.value("min_steps", int64_t{0});
  rule.reduction = doc.value("reduction", int64_t{3});
  if (rule.metric.empty() || rule.min_steps < 1 || rule.reduction < 2) {
    return std::nullopt;
  }
  return rule;
}

namespace {

absl::Status ParseAsha(absl::string_view source, const YAML::Node& node,
                       SweepControl& control) {
  constexpr char kShape[] =
      "'stop' must be {rule: asha, metric: NAME, goal: minimize|maximize, "
      "min_steps: N, reduction: R}";
  if (!node.IsMap()) return ErrorAt(source, node, kShape);
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, node, "'stop'"));
  static const std::set<std::string> kKeys = {"rule", "metric", "goal",
                                              "min_steps", "reduction"};
  for (const auto& item : node) {
    absl::StatusOr<std::string> k = Key(source, item.first);
    if (!k.ok()) return k.status();
    if (kKeys.count(*k) == 0) {
      return ErrorAt(source, item.first,
                     absl::StrCat("'stop': unknown key '", *k,
                                  "'; allowed: rule, metric, goal, "
                                  "min_steps, reduction"));
    }
  }
  if (!node["rule"] || !node["metric"] || !node["min_steps"]) {
    return ErrorAt(source, node, kShape);
  }
  absl::StatusOr<std::string> rule = Scalar(source, node["rule"], "'rule'");
  if (!rule.ok()) return rule.status();
  if (*rule != "asha") {
    return ErrorAt(source, node["rule"],
                   absl::StrCat("stop rule '", *rule, "'; allowed: asha"));
  }
  AshaRule asha;
  absl::StatusOr<std::string> metric =
      Scalar(source, node["metric"], "the stop rule's metric");
  if (!metric.ok()) return metric.status();
  if (metric->empty()) {
    return ErrorAt(source, node["metric"], "empty metric name");
  }
  asha.metric = *metric;
  if (node["goal"]) {
    absl::StatusOr<bool> maximize = ParseGoal(source, node["goal"]);
    if (!maximize.ok()) return maximize.status();
    asha.maximize = *maximize;
  }
  absl::StatusOr<int64_t> min_steps =
      IntIn(source, node["min_steps"], "'min_steps'", 1, int64_t{1} << 40);
  if (!min_steps.ok()) return min_steps.status();
  asha.min_steps = *min_steps;
  if (node["reduction"]) {
    absl::StatusOr<int64_t> r =
        IntIn(source, node["reduction"], "'reduction'", 2, 100);
    if (!r.ok()) return r.status();
    asha.reduction = *r;
  }
  control.asha = asha;
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseSweepControl(absl::string_view source, const YAML::Node& root,
                               SweepSpec& spec) {
  SweepControl& control = spec.control;
  if (const YAML::Node n = root["priority"]) {
    absl::StatusOr<int64_t> p =
        IntIn(source, n, "'priority'", kMinPriority, kMaxPriority);
    if (!p.ok()) return p.status();
    control.priority = *p;
  }
  if (const YAML::Node n = root["max_running"]) {
    absl::StatusOr<int64_t> m =
        IntIn(source, n, "'max_running'", 1, kMaxSweepCells);
    if (!m.ok()) return m.status();
    control.max_running = *m;
  }
  if (const YAML::Node n = root["max_failures"]) {
    absl::StatusOr<int64_t> m =
        IntIn(source, n, "'max_failures'", 1, kMaxSweepCells);
    if (!m.ok()) return m.status();
    control.max_failures = *m;
  }
  if (const YAML::Node n = root["timeout_s"]) {
    absl::StatusOr<double> t = NumberOf(source, n, "'timeout_s'");
    if (!t.ok()) return t.status();
    if (!(*t >= 1) || *t > 30 * 86400) {
      return ErrorAt(source, n,
                     "'timeout_s' is seconds per attempt: 1..2592000 (30 "
                     "days)");
    }
    control.timeout_s = *t;
  }
  if (const YAML::Node n = root["tags"]) {
    if (!n.IsMap()) {
      return ErrorAt(source, n, "'tags' must map each key to a value");
    }
    TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, n, "'tags'"));
    for (const auto& item : n) {
      absl::StatusOr<std::string> key = Key(source, item.first);
      if (!key.ok()) return key.status();
      absl::StatusOr<std::string> value =
          Scalar(source, item.second, absl::StrCat("tag '", *key, "'"));
      if (!value.ok()) return value.status();
      if (absl::Status s = CheckTag(*key, *value); !s.ok()) {
        return ErrorAt(source, item.first, s.message());
      }
      control.tags.emplace_back(*key, *value);
    }
  }
  if (const YAML::Node n = root["notes"]) {
    absl::StatusOr<std::string> notes = Scalar(source, n, "'notes'");
    if (!notes.ok()) return notes.status();
    if (notes->size() > kMaxNotesBytes) {
      return ErrorAt(source, n,
                     absl::StrCat("'notes' holds at most ", kMaxNotesBytes,
                                  " bytes (got ", notes->size(), ")"));
    }
    control.notes = *notes;
  }
  if (const YAML::Node n = root["stop"]) {
    if (KindDef(spec.kind).contract == nullptr) {
      return ErrorAt(source, n,
                     absl::StrCat("'stop' rules stop runs of command sweeps "
                                  "(kind: command), whose programs keep what "
                                  "they did when stopped; a ",
                                  JobKindName(spec.kind),
                                  " sweep stops its own runs early"));
    }
    TS_RETURN_IF_ERROR(ParseAsha(source, n, control));
  }
  return absl::OkStatus();
}

void EmitSweepControl(YAML::Emitter& out, const SweepControl& control) {
  if (control.priority) {
    out << YAML::Key << "priority" << YAML::Value << *control.priority;
  }
  if (control.max_running) {
    out << YAML::Key << "max_running" << YAML::Value << *control.max_running;
  }
  if (control.timeout_s) {
    out << YAML::Key << "timeout_s" << YAML::Value
        << FormatDouble(*control.timeout_s);
  }
  if (control.max_failures) {
    out << YAML::Key << "max_failures" << YAML::Value << *control.max_failures;
  }
  if (!control.tags.empty()) {
    out << YAML::Key << "tags" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [k, v] : control.tags) {
      out << YAML::Key << k << YAML::Value << v;
    }
    out << YAML::EndMap;
  }
  if (control.notes) {
    out << YAML::Key << "notes" << YAML::Value << *control.notes;
  }
  if (const std::optional<AshaRule>& a = control.asha) {
    out << YAML::Key << "stop" << YAML::Value << YAML::Flow << YAML::BeginMap
        << YAML::Key << "rule" << YAML::Value << "asha" << YAML::Key << "metric"
        << YAML::Value << a->metric << YAML::Key << "goal" << YAML::Value
        << (a->maximize ? "maximize" : "minimize") << YAML::Key << "min_steps"
        << YAML::Value << a->min_steps << YAML::Key << "reduction"
        << YAML::Value << a->reduction << YAML::EndMap;
  }
}

}  // namespace tailsweep
