#include "core/schema/command_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/number_text.h"
#include "core/schema/spec_yaml.h"
#include "core/schema/status_macros.h"

namespace tailsweep {
namespace {

constexpr absl::string_view kKeys[] = {
    "command",         "shell", "env",          "workdir",  "code",
    "code_hash",       "setup", "stop_grace_s", "outcomes", "stop_on",
    "stop_after_steps"};

absl::StatusOr<std::vector<std::string>> Words(absl::string_view source,
                                               const YAML::Node& node,
                                               absl::string_view what) {
  if (!node.IsSequence()) {
    return ErrorAt(source, node,
                   absl::StrCat(what, " must be a list, e.g. [a, b]"));
  }
  std::vector<std::string> out;
  for (const YAML::Node& item : node) {
    absl::StatusOr<std::string> w =
        Scalar(source, item, absl::StrCat("each item of ", what));
    if (!w.ok()) return w.status();
    out.push_back(*std::move(w));
  }
  return out;
}

bool ValidEnvName(absl::string_view name) {
  bool ok = !name.empty() && !absl::ascii_isdigit(name[0]);
  for (char c : name) ok = ok && (absl::ascii_isalnum(c) || c == '_');
  return ok;
}

absl::StatusOr<OutcomeRule> ParseRule(absl::string_view source,
                                      const std::string& name,
                                      const YAML::Node& node) {
  const std::string allowed =
      "{metric: NAME, above: X | below: X, at: last | min | max | any} or "
      "{metric: NAME, not_finite: true}";
  if (!node.IsMap()) {
    return ErrorAt(source, node,
                   absl::StrCat("outcome '", name, "' must be ", allowed));
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, node, "an outcome"));
  OutcomeRule o;
  o.name = name;
  for (const auto& item : node) {
    absl::StatusOr<std::string> key = Key(source, item.first);
    if (!key.ok()) return key.status();
    if (*key != "metric" && *key != "above" && *key != "below" &&
        *key != "at" && *key != "not_finite") {
      return ErrorAt(source, item.first,
                     absl::StrCat("unknown outcome key '", *key,
                                  "'; allowed: metric, above, below, at, "
                                  "not_finite"));
    }
  }
  if (!node["metric"]) {
    return ErrorAt(source, node,
                   absl::StrCat("outcome '", name, "' needs 'metric'"));
  }
  absl::StatusOr<std::string> metric =
      Scalar(source, node["metric"], "'metric'");
  if (!metric.ok()) return metric.status();
  if (metric->empty() || metric->size() > 128) {
    return ErrorAt(source, node["metric"], "'metric': 1-128 characters");
  }
  o.metric = *metric;
  const int forms = (node["above"] ? 1 : 0) + (node["below"] ? 1 : 0) +
                    (node["not_finite"] ? 1 : 0);
  if (forms != 1) {
    return ErrorAt(source, node,
                   absl::StrCat("outcome '", name,
                                "' needs exactly one of above, below, "
                                "not_finite: ",
                                allowed));
  }
  if (node["not_finite"]) {
    absl::StatusOr<std::string> v =
        Scalar(source, node["not_finite"], "'not_finite'");
    if (!v.ok()) return v.status();
    if (*v != "true") {
      return ErrorAt(source, node["not_finite"],
                     "'not_finite' takes only true");
    }
    if (node["at"]) {
      return ErrorAt(source, node["at"],
                     "'at' is for above/below (not_finite looks at every "
                     "step)");
    }
    o.not_finite = true;
    return o;
  }
  o.above = static_cast<bool>(node["above"]);
  absl::StatusOr<double> x = NumberOf(source, node[o.above ? "above" : "below"],
                                      o.above ? "'above'" : "'below'");
  if (!x.ok()) return x.status();
  o.threshold = *x;
  if (node["at"]) {
    absl::StatusOr<std::string> at = Scalar(source, node["at"], "'at'");
    if (!at.ok()) return at.status();
    if (*at == "last") {
      o.at = OutcomeRule::At::kLast;
    } else if (*at == "min") {
      o.at = OutcomeRule::At::kMin;
    } else if (*at == "max") {
      o.at = OutcomeRule::At::kMax;
    } else if (*at == "any") {
      o.at = OutcomeRule::At::kAny;
    } else {
      return ErrorAt(
          source, node["at"],
          absl::StrCat("at '", *at, "': allowed: last, min, max, any"));
    }
  }
  return o;
}

// `env:`, NAME: value.
absl::Status ParseEnv(absl::string_view source, const YAML::Node& env,
                      CommandSpec& out) {
  if (!env.IsMap()) {
    return ErrorAt(source, env, "'env' must map NAME: value");
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, env, "'env'"));
  for (const auto& item : env) {
    absl::StatusOr<std::string> name = Key(source, item.first);
    if (!name.ok()) return name.status();
    if (!ValidEnvName(*name)) {
      return ErrorAt(source, item.first,
                     absl::StrCat("env name '", *name,
                                  "': allowed: letters, digits and '_', "
                                  "not starting with a digit"));
    }
    absl::StatusOr<std::string> value =
        Scalar(source, item.second, absl::StrCat("env '", *name, "'"));
    if (!value.ok()) return value.status();
    out.env.emplace_back(*name, *value);
  }
  return absl::OkStatus();
}

// `outcomes:`, NAME: a rule each.
absl::Status ParseOutcomes(absl::string_view source, const YAML::Node& outcomes,
                           CommandSpec& out) {
  if (!outcomes.IsMap()) {
    return ErrorAt(source, outcomes,
                   "'outcomes' must map NAME: {metric: ..., above|below|"
                   "not_finite: ...}");
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, outcomes, "'outcomes'"));
  for (const auto& item : outcomes) {
    absl::StatusOr<std::string> name = Key(source, item.first);
    if (!name.ok()) return name.status();
    if (absl::Status s = CheckParamName(*name); !s.ok()) {
      return ErrorAt(source, item.first, absl::StrCat("outcome ", s.message()));
    }
    absl::StatusOr<OutcomeRule> rule = ParseRule(source, *name, item.second);
    if (!rule.ok()) return rule.status();
    out.outcomes.push_back(*std::move(rule));
  }
  return absl::OkStatus();
}

// `stop_on:` (outcomes that stay true once they hold) and
// `stop_after_steps:`, after the outcomes are read.
absl::Status ParseStops(absl::string_view source, const YAML::Node& root,
                        CommandSpec& out) {
  if (root["stop_on"]) {
    absl::StatusOr<std::vector<std::string>> stop_on =
        Words(source, root["stop_on"], "'stop_on'");
    if (!stop_on.ok()) return stop_on.status();
    for (size_t i = 0; i < stop_on->size(); ++i) {
      const std::string& name = (*stop_on)[i];
      auto rule =
          std::find_if(out.outcomes.begin(), out.outcomes.end(),
                       [&](const OutcomeRule& o) { return o.name == name; });
      if (rule == out.outcomes.end()) {
        std::vector<std::string> names;
        for (const OutcomeRule& o : out.outcomes) names.push_back(o.name);
        return ErrorAt(
            source, root["stop_on"][i],
            absl::StrCat("stop_on '", name, "' is not an outcome; allowed: ",
                         names.empty() ? "(none declared)"
                                       : absl::StrJoin(names, ", ")));
      }
      if (!StaysTrue(*rule)) {
        return ErrorAt(source, root["stop_on"][i],
                       absl::StrCat("stop_on '", name,
                                    "': the outcome can still change once it "
                                    "holds, so it cannot stop a run; allowed: "
                                    "not_finite, at: any, above at: max, "
                                    "below at: min"));
      }
    }
    out.stop_on = *std::move(stop_on);
  }
  if (root["stop_after_steps"]) {
    if (out.stop_on.empty()) {
      return ErrorAt(source, root["stop_after_steps"],
                     "'stop_after_steps' needs 'stop_on': the outcomes "
                     "whose first step it counts from");
    }
    absl::StatusOr<int64_t> k = IntIn(source, root["stop_after_steps"],
                                      "'stop_after_steps'", 0, 1000000000);
    if (!k.ok()) return k.status();
    out.stop_after_steps = *k;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Span<const absl::string_view> CommandSectionKeys() { return kKeys; }

absl::Status ParseCommandSection(absl::string_view source,
                                 const YAML::Node& root, CommandSpec& out) {
  if (!root["command"]) {
    return absl::InvalidArgumentError(absl::StrCat(
        source,
        ": a command sweep needs 'command', the program's argv as a list, "
        "e.g. [python3, train.py, \"${args}\"]"));
  }
  absl::StatusOr<std::vector<std::string>> command =
      Words(source, root["command"], "'command'");
  if (!command.ok()) return command.status();
  if (command->empty() || (*command)[0].empty()) {
    return ErrorAt(source, root["command"],
                   "'command' needs at least the program, e.g. [python3, "
                   "train.py]");
  }
  out.command = *std::move(command);
  if (root["shell"]) {
    absl::StatusOr<std::string> v = Scalar(source, root["shell"], "'shell'");
    if (!v.ok()) return v.status();
    if (*v != "true" && *v != "false") {
      return ErrorAt(source, root["shell"],
                     absl::StrCat("shell '", *v, "': allowed: true, false"));
    }
    out.shell = *v == "true";
  }
  if (const YAML::Node env = root["env"]) {
    TS_RETURN_IF_ERROR(ParseEnv(source, env, out));
  }
  for (const char* key : {"workdir", "code_hash"}) {
    if (!root[key]) continue;
    absl::StatusOr<std::string> v =
        Scalar(source, root[key], absl::StrCat("'", key, "'"));
    if (!v.ok()) return v.status();
    (std::string(key) == "workdir" ? out.workdir : out.code_hash) = *v;
  }
  if (root["code"]) {
    absl::StatusOr<std::vector<std::string>> code =
        Words(source, root["code"], "'code'");
    if (!code.ok()) return code.status();
    out.code = *std::move(code);
  }
  if (root["setup"]) {
    absl::StatusOr<std::vector<std::string>> setup =
        Words(source, root["setup"], "'setup'");
    if (!setup.ok()) return setup.status();
    out.setup = *std::move(setup);
  }
  if (root["stop_grace_s"]) {
    absl::StatusOr<int64_t> g =
        IntIn(source, root["stop_grace_s"], "'stop_grace_s'", 0, 86400);
    if (!g.ok()) return g.status();
    out.stop_grace_s = *g;
  }
  if (const YAML::Node outcomes = root["outcomes"]) {
    TS_RETURN_IF_ERROR(ParseOutcomes(source, outcomes, out));
  }
  return ParseStops(source, root, out);
}

void EmitCommandSection(YAML::Emitter& out, const CommandSpec& s) {
  out << YAML::Key << "command" << YAML::Value << YAML::Flow << s.command;
  if (s.shell) out << YAML::Key << "shell" << YAML::Value << "true";
  if (!s.env.empty()) {
    out << YAML::Key << "env" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : s.env) {
      out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
    }
    out << YAML::EndMap;
  }
  if (!s.workdir.empty()) {
    out << YAML::Key << "workdir" << YAML::Value << s.workdir;
  }
  if (!s.code.empty()) {
    out << YAML::Key << "code" << YAML::Value << YAML::Flow << s.code;
  }
  if (!s.code_hash.empty()) {
    out << YAML::Key << "code_hash" << YAML::Value << s.code_hash;
  }
  if (!s.setup.empty()) {
    out << YAML::Key << "setup" << YAML::Value << s.setup;
  }
  if (s.stop_grace_s != kDefaultStopGraceS) {
    out << YAML::Key << "stop_grace_s" << YAML::Value << s.stop_grace_s;
  }
  if (!s.outcomes.empty()) {
    out << YAML::Key << "outcomes" << YAML::Value << YAML::BeginMap;
    for (const OutcomeRule& o : s.outcomes) {
      out << YAML::Key << o.name << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "metric" << YAML::Value << o.metric;
      if (o.not_finite) {
        out << YAML::Key << "not_finite" << YAML::Value << "true";
      } else {
        out << YAML::Key << (o.above ? "above" : "below") << YAML::Value
            << FormatDouble(o.threshold);
        const char* at = o.at == OutcomeRule::At::kLast  ? "last"
                         : o.at == OutcomeRule::At::kMin ? "min"
                         : o.at == OutcomeRule::At::kMax ? "max"
                                                         : "any";
        out << YAML::Key << "at" << YAML::Value << at;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  if (!s.stop_on.empty()) {
    out << YAML::Key << "stop_on" << YAML::Value << YAML::Flow << s.stop_on;
  }
  if (s.stop_after_steps != 0) {
    out << YAML::Key << "stop_after_steps" << YAML::Value << s.stop_after_steps;
  }
}

absl::Status PrepareCommandForSubmit(const std::string& spec_dir,
                                     CommandSpec& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path base = fs::absolute(spec_dir.empty() ? "." : spec_dir, ec);
  const fs::path dir = spec.workdir.empty() ? base : base / spec.workdir;
  spec.workdir = dir.lexically_normal().string();
  if (spec.workdir.size() > 1 && spec.workdir.back() == '/') {
    spec.workdir.pop_back();
  }
  if (!spec.code.empty()) {
    absl::StatusOr<std::string> hash = CodeHash(base.string(), spec.code);
    if (!hash.ok()) return hash.status();
    spec.code_hash = *hash;
  }
  return absl::OkStatus();
}

}  // namespace tailsweep
