#include "core/schema/sweep_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/job_config.h"
#include "core/number_text.h"
#include "core/schema/command_spec.h"
#include "core/schema/device_placement.h"
#include "core/schema/file_util.h"
#include "core/schema/spec_yaml.h"
#include "core/schema/status_macros.h"
#include "core/tails_job.h"

namespace tailsweep {
namespace {

// Validates KEY=VALUE against the kind's schema on a scratch config.
absl::Status CheckValue(JobKind kind, const std::string& key,
                        const std::string& value) {
  if (kind == JobKind::kCommand) {
    TS_RETURN_IF_ERROR(CheckParamName(key));
    if (key == kGpusKey) return ParseGpus(value).status();
    return absl::OkStatus();
  }
  if (kind == JobKind::kTrain) {
    JobConfig scratch;
    return SetJobKey(scratch, key, value);
  }
  TailsJobConfig scratch;
  return SetTailsJobKey(scratch, key, value);
}

bool KnownKey(JobKind kind, const std::string& key) {
  if (kind == JobKind::kCommand) return CheckParamName(key).ok();
  const std::vector<JobKey>& keys =
      kind == JobKind::kTrain ? JobKeys() : TailsJobKeys();
  return std::any_of(keys.begin(), keys.end(),
                     [&](const JobKey& k) { return k.name == key; });
}

// A job key's value: a scalar, or for command jobs also a list of scalars
// (stored as FlowListText).
absl::StatusOr<std::string> ValueText(absl::string_view source,
                                      const YAML::Node& node,
                                      absl::string_view what, JobKind kind) {
  if (kind == JobKind::kCommand && node.IsSequence()) {
    std::vector<std::string> items;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) {
        return ErrorAt(source, item,
                       absl::StrCat(what, ": a list value holds scalars only"));
      }
      items.push_back(item.as<std::string>());
    }
    return FlowListText(items);
  }
  if (!node.IsScalar()) {
    return ErrorAt(
        source, node,
        absl::StrCat(what, kind == JobKind::kCommand
                               ? " must be a value or a list of values"
                               : " must be a single value"));
  }
  return node.as<std::string>();
}

absl::Status ParseGrid(absl::string_view source, const YAML::Node& grid,
                       SweepSpec& spec) {
  if (!grid.IsMap() || grid.size() == 0) {
    return ErrorAt(source, grid,
                   "'grid' must map each key to a non-empty list of values");
  }
  if (absl::Status s = CheckNoDuplicateKeys(source, grid, "'grid'"); !s.ok()) {
    return s;
  }
  for (const auto& item : grid) {
    absl::StatusOr<std::string> key_or = Key(source, item.first);
    if (!key_or.ok()) return key_or.status();
    const std::string key = *key_or;
    const YAML::Node& values = item.second;
    if (!KnownKey(spec.kind, key)) {
      // The schema's own message lists the allowed keys.
      return ErrorAt(source, item.first,
                     CheckValue(spec.kind, key, "").message());
    }
    if (!values.IsSequence() || values.size() == 0) {
      return ErrorAt(source, item.first,
                     absl::StrCat("grid key '", key,
                                  "' needs a non-empty list, e.g. [a, b]"));
    }
    std::vector<std::string> list;
    std::set<std::string> seen;
    for (const YAML::Node& v : values) {
      absl::StatusOr<std::string> value = ValueText(
          source, v, absl::StrCat("each value of grid key '", key, "'"),
          spec.kind);
      if (!value.ok()) return value.status();
      if (absl::Status s = CheckValue(spec.kind, key, *value); !s.ok()) {
        return ErrorAt(source, v, s.message());
      }
      if (!seen.insert(*value).second) {
        return ErrorAt(
            source, v,
            absl::StrCat("grid key '", key, "' lists '", *value, "' twice"));
      }
      list.push_back(*value);
    }
    spec.grid.emplace_back(key, std::move(list));
  }
  return absl::OkStatus();
}

absl::Status ParseExclude(absl::string_view source, const YAML::Node& exclude,
                          SweepSpec& spec) {
  if (!exclude.IsSequence()) {
    return ErrorAt(source, exclude,
                   "'exclude' must be a list of {key: value} assignments");
  }
  for (const YAML::Node& entry : exclude) {
    if (!entry.IsMap() || entry.size() == 0) {
      return ErrorAt(
          source, entry,
          "each 'exclude' entry must be a non-empty {key: value} map");
    }
    if (absl::Status s =
            CheckNoDuplicateKeys(source, entry, "an 'exclude' entry");
        !s.ok()) {
      return s;
    }
    KeyValues partial;
    for (const auto& item : entry) {
      absl::StatusOr<std::string> key_or = Key(source, item.first);
      if (!key_or.ok()) return key_or.status();
      const std::string key = *key_or;
      auto axis = std::find_if(spec.grid.begin(), spec.grid.end(),
                               [&](const auto& g) { return g.first == key; });
      if (axis == spec.grid.end()) {
        std::vector<std::string> keys;
        for (const auto& g : spec.grid) keys.push_back(g.first);
        return ErrorAt(
            source, item.first,
            absl::StrCat("exclude key '", key, "' is not a grid key; allowed: ",
                         absl::StrJoin(keys, ", ")));
      }
      absl::StatusOr<std::string> value =
          ValueText(source, item.second, "an exclude value", spec.kind);
      if (!value.ok()) return value.status();
      if (std::find(axis->second.begin(), axis->second.end(), *value) ==
          axis->second.end()) {
        return ErrorAt(source, item.second,
                       absl::StrCat("exclude value '", *value, "' for '", key,
                                    "' is not in the grid; allowed: ",
                                    absl::StrJoin(axis->second, ", ")));
      }
      partial.emplace_back(key, *value);
    }
    spec.exclude.push_back(std::move(partial));
  }
  return absl::OkStatus();
}

absl::Status ParseFixed(absl::string_view source, const YAML::Node& fixed,
                        SweepSpec& spec) {
  if (!fixed.IsMap()) {
    return ErrorAt(source, fixed, "'fixed' must map keys to single values");
  }
  if (absl::Status s = CheckNoDuplicateKeys(source, fixed, "'fixed'");
      !s.ok()) {
    return s;
  }
  for (const auto& item : fixed) {
    absl::StatusOr<std::string> key_or = Key(source, item.first);
    if (!key_or.ok()) return key_or.status();
    const std::string key = *key_or;
    for (const auto& g : spec.grid) {
      if (g.first == key) {
        return ErrorAt(
            source, item.first,
            absl::StrCat("key '", key, "' is both in 'grid' and in 'fixed'"));
      }
    }
    absl::StatusOr<std::string> value = ValueText(
        source, item.second, absl::StrCat("fixed key '", key, "'"), spec.kind);
    if (!value.ok()) return value.status();
    if (absl::Status s = CheckValue(spec.kind, key, *value); !s.ok()) {
      return ErrorAt(source, item.first, s.message());
    }
    spec.fixed.emplace_back(key, *value);
  }
  return absl::OkStatus();
}

absl::Status CheckSearchKey(absl::string_view source, const YAML::Node& at,
                            const SweepSpec& spec, SearchSpec& s) {
  if (s.key == "seed") {
    return ErrorAt(source, at,
                   "the search sets 'seed' itself (0..seeds-1 at each probe "
                   "point); search another key");
  }
  if (!KnownKey(spec.kind, s.key)) {
    return ErrorAt(source, at, CheckValue(spec.kind, s.key, "").message());
  }
  for (const char* key : {s.key.c_str(), "seed"}) {
    for (const auto& g : spec.grid) {
      if (g.first == key) {
        return ErrorAt(source, at,
                       absl::StrCat("key '", key,
                                    "' is set by the search: "
                                    "take it out of 'grid'"));
      }
    }
    for (const auto& f : spec.fixed) {
      if (f.first == key) {
        return ErrorAt(source, at,
                       absl::StrCat("key '", key,
                                    "' is set by the search: "
                                    "take it out of 'fixed'"));
      }
    }
  }
  if (CheckValue(spec.kind, s.key, "1.5").ok()) return absl::OkStatus();
  if (CheckValue(spec.kind, s.key, "2").ok()) {
    s.integer = true;
    return absl::OkStatus();
  }
  return ErrorAt(source, at,
                 absl::StrCat("key '", s.key,
                              "' is not a number; a search needs a numeric "
                              "key (e.g. lr, tail_index_max, n_points)"));
}

absl::Status ParseOutcome(absl::string_view source, const YAML::Node& node,
                          const SweepSpec& spec, SearchSpec& s) {
  absl::StatusOr<std::string> text = Scalar(source, node, "'outcome'");
  if (!text.ok()) return text.status();
  if (spec.kind == JobKind::kCommand) {
    std::vector<std::string> names;
    for (const OutcomeRule& o : spec.command.outcomes) {
      if (o.name == *text) {
        s.outcome = SearchSpec::Outcome::kNamed;
        s.named = *text;
        return absl::OkStatus();
      }
      names.push_back(o.name);
    }
    return ErrorAt(source, node,
                   absl::StrCat("outcome '", *text,
                                "' is not one of the sweep's outcomes; "
                                "allowed: ",
                                names.empty() ? "(none: declare them under "
                                                "'outcomes')"
                                              : absl::StrJoin(names, ", ")));
  }
  const std::vector<std::string> words =
      absl::StrSplit(*text, ' ', absl::SkipEmpty());
  if (words.size() == 1 && words[0] == "collapsed") {
    s.outcome = SearchSpec::Outcome::kCollapsed;
  } else if (words.size() == 1 && words[0] == "diverged") {
    s.outcome = SearchSpec::Outcome::kDiverged;
  } else if (words.size() == 2 && words[0] == "ratio_above" &&
             absl::SimpleAtod(words[1], &s.ratio_above) &&
             std::isfinite(s.ratio_above) && s.ratio_above > 0) {
    s.outcome = SearchSpec::Outcome::kRatioAbove;
  } else {
    return ErrorAt(source, node,
                   absl::StrCat("outcome '", *text,
                                "': allowed: collapsed, diverged, or "
                                "ratio_above X (X > 0: the median distance "
                                "ratio above X)"));
  }
  return absl::OkStatus();
}

absl::Status ParseRange(absl::string_view source, const YAML::Node& range,
                        const SweepSpec& spec, SearchSpec& s) {
  if (!range.IsSequence() || range.size() != 2) {
    return ErrorAt(source, range, "'range' must be [lo, hi]");
  }
  absl::StatusOr<double> lo = NumberOf(source, range[0], "range's lo");
  if (!lo.ok()) return lo.status();
  absl::StatusOr<double> hi = NumberOf(source, range[1], "range's hi");
  if (!hi.ok()) return hi.status();
  s.lo = *lo;
  s.hi = *hi;
  if (!(s.lo < s.hi)) {
    return ErrorAt(source, range, "'range' needs lo < hi");
  }
  if (s.log_scale && s.lo <= 0) {
    return ErrorAt(source, range,
                   "a log scale needs lo > 0 (or scale: linear)");
  }
  for (double end : {s.lo, s.hi}) {
    if (absl::Status c = CheckValue(spec.kind, s.key, ProbeText(s, end));
        !c.ok()) {
      return ErrorAt(source, range, c.message());
    }
  }
  return absl::OkStatus();
}

absl::Status ParseSearch(absl::string_view source, const YAML::Node& node,
                         SweepSpec& spec) {
  static const std::vector<std::string> kKeys = {
      "key",   "range",       "scale",      "outcome",  "direction",
      "seeds", "extra_seeds", "max_probes", "tolerance"};
  const std::string allowed = absl::StrJoin(kKeys, ", ");
  if (spec.kind == JobKind::kTails) {
    return ErrorAt(source, node,
                   "'search' is for train and command sweeps (a tails job "
                   "has no yes/no outcome)");
  }
  if (!node.IsMap()) {
    return ErrorAt(
        source, node,
        absl::StrCat("'search' must be a mapping with keys ", allowed));
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, node, "'search'"));
  for (const auto& item : node) {
    absl::StatusOr<std::string> key = Key(source, item.first);
    if (!key.ok()) return key.status();
    if (std::find(kKeys.begin(), kKeys.end(), *key) == kKeys.end()) {
      return ErrorAt(
          source, item.first,
          absl::StrCat("unknown search key '", *key, "'; allowed: ", allowed));
    }
  }
  for (const char* required : {"key", "range"}) {
    if (!node[required]) {
      return ErrorAt(source, node,
                     absl::StrCat("'search' needs '", required, "'"));
    }
  }
  SearchSpec s;
  absl::StatusOr<std::string> key = Scalar(source, node["key"], "'key'");
  if (!key.ok()) return key.status();
  s.key = *key;
  TS_RETURN_IF_ERROR(CheckSearchKey(source, node["key"], spec, s));
  if (node["scale"]) {
    absl::StatusOr<std::string> scale =
        Scalar(source, node["scale"], "'scale'");
    if (!scale.ok()) return scale.status();
    if (*scale != "log" && *scale != "linear") {
      return ErrorAt(
          source, node["scale"],
          absl::StrCat("scale '", *scale, "': allowed: log, linear"));
    }
    s.log_scale = *scale == "log";
  }
  TS_RETURN_IF_ERROR(ParseRange(source, node["range"], spec, s));
  if (node["outcome"]) {
    TS_RETURN_IF_ERROR(ParseOutcome(source, node["outcome"], spec, s));
  } else if (spec.kind == JobKind::kCommand) {
    return ErrorAt(source, node,
                   "'search' of a command sweep needs 'outcome': one of its "
                   "'outcomes'");
  }
  if (node["direction"]) {
    absl::StatusOr<std::string> direction =
        Scalar(source, node["direction"], "'direction'");
    if (!direction.ok()) return direction.status();
    if (*direction != "rising" && *direction != "falling") {
      return ErrorAt(source, node["direction"],
                     absl::StrCat("direction '", *direction,
                                  "': allowed: rising (the outcome holds "
                                  "above the boundary), falling (below it)"));
    }
    s.rising = *direction == "rising";
  }
  struct IntField {
    const char* name;
    int64_t* field;
    int64_t min, max;
  };
  for (const IntField& f : {IntField{"seeds", &s.seeds, 1, 64},
                            IntField{"extra_seeds", &s.extra_seeds, 0, 64},
                            IntField{"max_probes", &s.max_probes, 2, 64}}) {
    if (!node[f.name]) continue;
    absl::StatusOr<int64_t> v = IntIn(
        source, node[f.name], absl::StrCat("'", f.name, "'"), f.min, f.max);
    if (!v.ok()) return v.status();
    *f.field = *v;
  }
  if (node["tolerance"]) {
    absl::StatusOr<double> t =
        NumberOf(source, node["tolerance"], "'tolerance'");
    if (!t.ok()) return t.status();
    if (*t <= 0) {
      return ErrorAt(source, node["tolerance"],
                     "'tolerance' must be > 0 (log scale: the bracket's "
                     "hi/lo - 1; linear: hi - lo)");
    }
    s.tolerance = *t;
  }
  spec.search = s;
  return absl::OkStatus();
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.')
      return false;
  }
  return true;
}

}  // namespace

static absl::StatusOr<SweepSpec> ParseSpec(absl::string_view text,
                                           absl::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": a sweep spec is a mapping with keys name, kind, grid, "
                     "exclude, fixed"));
  }
  if (absl::Status s = CheckNoDuplicateKeys(source, root, "the spec");
      !s.ok()) {
    return s;
  }
  SweepSpec spec;
  static const std::set<std::string> kTopKeys = {
      "name", "kind", "grid", "exclude", "fixed", "overrides", "search"};
  const bool command_kind =
      root["kind"] && root["kind"].IsScalar() &&
      root["kind"].as<std::string>() == JobKindName(JobKind::kCommand);
  for (const auto& item : root) {
    absl::StatusOr<std::string> key_or = Key(source, item.first);
    if (!key_or.ok()) return key_or.status();
    const std::string key = *key_or;
    if (IsCommandSpecKey(key) && !command_kind) {
      return ErrorAt(
          source, item.first,
          absl::StrCat("'", key, "' is for command sweeps (kind: command)"));
    }
    if (kTopKeys.count(key) == 0 && !IsCommandSpecKey(key)) {
      return ErrorAt(
          source, item.first,
          absl::StrCat("unknown top-level key '", key,
                       "'; allowed: name, kind, grid, exclude, fixed, "
                       "overrides, search",
                       command_kind ? absl::StrCat(", ", CommandSpecKeys())
                                    : std::string()));
    }
  }
  if (!root["name"]) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": missing 'name'"));
  }
  absl::StatusOr<std::string> name = Scalar(source, root["name"], "'name'");
  if (!name.ok()) return name.status();
  if (!ValidName(*name)) {
    return ErrorAt(
        source, root["name"],
        absl::StrCat("name '", *name,
                     "': allowed: 1-128 letters, digits, '-', '_', '.'"));
  }
  spec.name = *name;
  if (root["kind"]) {
    absl::StatusOr<std::string> kind = Scalar(source, root["kind"], "'kind'");
    if (!kind.ok()) return kind.status();
    const std::optional<JobKind> parsed = ParseJobKind(*kind);
    if (!parsed.has_value()) {
      return ErrorAt(
          source, root["kind"],
          absl::StrCat("kind '", *kind, "'; allowed: ", JobKindNames()));
    }
    spec.kind = *parsed;
  }
  if (spec.kind == JobKind::kCommand) {
    TS_RETURN_IF_ERROR(ParseCommandSection(source, root, spec.command));
  }
  if (!root["grid"]) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": missing 'grid'"));
  }
  if (absl::Status s = ParseGrid(source, root["grid"], spec); !s.ok()) return s;
  if (root["exclude"]) {
    if (absl::Status s = ParseExclude(source, root["exclude"], spec); !s.ok()) {
      return s;
    }
  }
  if (root["fixed"]) {
    if (absl::Status s = ParseFixed(source, root["fixed"], spec); !s.ok())
      return s;
  }
  if (root["search"]) {
    if (absl::Status s = ParseSearch(source, root["search"], spec); !s.ok()) {
      return s;
    }
  }
  if (const YAML::Node overrides = root["overrides"]) {
    if (!overrides.IsSequence()) {
      return ErrorAt(source, overrides,
                     "'overrides' must be a list of KEY=VALUE words");
    }
    for (const YAML::Node& o : overrides) {
      absl::StatusOr<std::string> word = Scalar(source, o, "an override");
      if (!word.ok()) return word.status();
      spec.overrides.push_back(*word);
    }
  }
  return spec;
}

absl::StatusOr<SweepSpec> LoadSweepSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open for reading"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseSweepSpec(text.str(), path);
}

std::string ContentHash(const KeyValues& params) {
  std::string text;
  for (const auto& [key, value] : params)
    absl::StrAppend(&text, key, "=", value, "\n");
  return Sha256Hex(text);
}

namespace {

bool Excluded(const SweepSpec& spec, const KeyValues& cell) {
  for (const KeyValues& partial : spec.exclude) {
    bool all = true;
    for (const auto& kv : partial) {
      all = all && std::find(cell.begin(), cell.end(), kv) != cell.end();
    }
    if (all) return true;
  }
  return false;
}

absl::StatusOr<KeyValues> Resolve(const SweepSpec& spec,
                                  const KeyValues& cell) {
  auto apply = [&](auto& config, auto set) -> absl::Status {
    for (const auto& [k, v] : spec.fixed) {
      if (absl::Status s = set(config, k, v); !s.ok()) return s;
    }
    for (const auto& [k, v] : cell) {
      if (absl::Status s = set(config, k, v); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
  if (spec.kind == JobKind::kCommand) {
    std::map<std::string, std::string> values;
    for (const auto& [k, v] : spec.fixed) values[k] = v;
    for (const auto& [k, v] : cell) values[k] = v;
    KeyValues params(values.begin(), values.end());
    TS_RETURN_IF_ERROR(CheckTemplate(spec.command, params));
    params.emplace_back(kCommandParam, CommandDefinitionJson(spec.command));
    if (!spec.command.workdir.empty()) {
      params.emplace_back(kWorkdirParam, spec.command.workdir);
    }
    return params;
  }
  if (spec.kind == JobKind::kTrain) {
    JobConfig config;
    if (absl::Status s = apply(config, SetJobKey); !s.ok()) return s;
    if (absl::Status s = ValidateJobConfig(config); !s.ok()) return s;
    return JobConfigToKeyValues(config);
  }
  TailsJobConfig config;
  if (absl::Status s = apply(config, SetTailsJobKey); !s.ok()) return s;
  return TailsJobToKeyValues(config);
}

// The job of `cell` (every key it sets), or why the schema refuses it.
absl::StatusOr<JobSpec> CellJob(const SweepSpec& spec, const KeyValues& cell) {
  absl::StatusOr<KeyValues> params = Resolve(spec, cell);
  if (!params.ok()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : cell) parts.push_back(absl::StrCat(k, "=", v));
    return absl::InvalidArgumentError(absl::StrCat(
        "sweep '", spec.name, "', cell ", absl::StrJoin(parts, " "), ": ",
        params.status().message(), " (add the cell to 'exclude' to drop it)"));
  }
  KeyValues identity;
  for (const auto& kv : *params) {
    if (kv.first != kWorkdirParam) identity.push_back(kv);
  }
  return JobSpec{ContentHash(identity), cell, *std::move(params)};
}

}  // namespace

absl::StatusOr<JobSpec> ProbeJob(const SweepSpec& spec, const KeyValues& cell,
                                 const std::string& probe, int64_t seed) {
  if (!spec.search) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep '", spec.name, "' has no search"));
  }
  KeyValues full = cell;
  full.emplace_back(spec.search->key, probe);
  full.emplace_back("seed", absl::StrCat(seed));
  return CellJob(spec, full);
}

std::string ProbeText(const SearchSpec& search, double value) {
  if (search.integer) return absl::StrCat(std::llround(value));
  return absl::StrFormat("%.4g", value);
}

std::string OutcomeName(const SearchSpec& search) {
  switch (search.outcome) {
    case SearchSpec::Outcome::kCollapsed:
      return "collapsed";
    case SearchSpec::Outcome::kDiverged:
      return "diverged";
    case SearchSpec::Outcome::kRatioAbove:
      return absl::StrCat("ratio_above ", FormatDouble(search.ratio_above));
    case SearchSpec::Outcome::kNamed:
      return search.named;
  }
  return "";
}

absl::StatusOr<std::vector<JobSpec>> ExpandSweep(const SweepSpec& spec) {
  int64_t cells = 1;
  for (const auto& [key, values] : spec.grid) {
    cells *= static_cast<int64_t>(values.size());
    if (cells > kMaxSweepCells) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sweep '", spec.name, "': the grid has more than ", kMaxSweepCells,
          " cells (at axis '", key, "'); split it into several sweeps"));
    }
  }
  std::vector<JobSpec> jobs;
  std::vector<size_t> index(spec.grid.size(), 0);
  while (true) {
    KeyValues cell;
    for (size_t k = 0; k < spec.grid.size(); ++k) {
      cell.emplace_back(spec.grid[k].first, spec.grid[k].second[index[k]]);
    }
    if (!Excluded(spec, cell)) {
      if (spec.search) {
        // The first probes: both ends of the range.
        for (double end : {spec.search->lo, spec.search->hi}) {
          for (int64_t seed = 0; seed < spec.search->seeds; ++seed) {
            absl::StatusOr<JobSpec> job =
                ProbeJob(spec, cell, ProbeText(*spec.search, end), seed);
            if (!job.ok()) return job.status();
            jobs.push_back(*std::move(job));
          }
        }
      } else {
        absl::StatusOr<JobSpec> job = CellJob(spec, cell);
        if (!job.ok()) return job.status();
        jobs.push_back(*std::move(job));
      }
    }
    // Advance the odometer, last key fastest.
    size_t k = spec.grid.size();
    while (k > 0 && ++index[k - 1] == spec.grid[k - 1].second.size()) {
      index[--k] = 0;
    }
    if (k == 0) break;
  }
  return jobs;
}

absl::StatusOr<SweepSpec> ParseSweepSpec(absl::string_view text,
                                         absl::string_view source) {
  try {
    absl::StatusOr<SweepSpec> spec = ParseSpec(text, source);
    if (spec.ok()) spec->text = std::string(text);
    return spec;
  } catch (const YAML::Exception& e) {
    // A shape yaml-cpp cannot convert that the checks above did not
    // foresee: still a clear error at its position, never a crash.
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
}

namespace {

absl::Status BadOverride(absl::string_view word, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("override '", word, "': ", why));
}

// The values of one override: a list (a grid axis) or one value.
struct OverrideValues {
  std::vector<std::string> values;
  bool list = false;
};

OverrideValues SplitValues(absl::string_view text) {
  OverrideValues out;
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
    out.list = true;
  }
  if (text.find(',') != absl::string_view::npos) out.list = true;
  for (absl::string_view v : absl::StrSplit(text, ',')) {
    v = absl::StripAsciiWhitespace(v);
    if (!v.empty() || !out.list) out.values.emplace_back(v);
  }
  return out;
}

// Drops the exclude entries that can no longer match once `key` takes only
// `values`; removes `key` from entries that now always match it (a fixed
// key). Empty entry: it would exclude every cell.
absl::Status NarrowExcludes(absl::string_view word, const std::string& key,
                            const OverrideValues& v,
                            std::vector<KeyValues>& exclude) {
  std::vector<KeyValues> kept;
  for (KeyValues entry : exclude) {
    auto it = std::find_if(entry.begin(), entry.end(),
                           [&](const auto& kv) { return kv.first == key; });
    if (it == entry.end()) {
      kept.push_back(std::move(entry));
      continue;
    }
    if (std::find(v.values.begin(), v.values.end(), it->second) ==
        v.values.end()) {
      continue;  // never matches now
    }
    if (!v.list) entry.erase(it);
    if (entry.empty()) {
      return BadOverride(
          word, absl::StrCat("an 'exclude' entry would then exclude every "
                             "cell (it names only ",
                             key, "=", v.values.front(), ")"));
    }
    kept.push_back(std::move(entry));
  }
  exclude = std::move(kept);
  return absl::OkStatus();
}

absl::Status ApplyOne(const std::string& word, SweepSpec& spec) {
  const size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) {
    return BadOverride(word, "expected KEY=VALUE or KEY=V1,V2,...");
  }
  const std::string key(absl::StripAsciiWhitespace(word.substr(0, eq)));
  const OverrideValues v = SplitValues(word.substr(eq + 1));
  if (v.values.empty() || (v.values.size() == 1 && v.values[0].empty())) {
    return BadOverride(word, absl::StrCat("no value for '", key, "'"));
  }
  if (key == "kind") {
    return BadOverride(word,
                       "'kind' cannot be overridden: it decides which keys "
                       "exist; write a spec of the other kind");
  }
  if (key == "name") {
    if (v.list || !ValidName(v.values[0])) {
      return BadOverride(word,
                         "name: allowed: 1-128 letters, digits, '-', '_', '.'");
    }
    spec.name = v.values[0];
    return absl::OkStatus();
  }
  if (!KnownKey(spec.kind, key)) {
    // The schema's own message lists the allowed keys.
    return BadOverride(word, CheckValue(spec.kind, key, "").message());
  }
  std::set<std::string> seen;
  for (const std::string& value : v.values) {
    if (absl::Status s = CheckValue(spec.kind, key, value); !s.ok()) {
      return BadOverride(word, s.message());
    }
    if (!seen.insert(value).second) {
      return BadOverride(word, absl::StrCat("lists '", value, "' twice"));
    }
  }
  if (absl::Status s = NarrowExcludes(word, key, v, spec.exclude); !s.ok()) {
    return s;
  }
  auto axis = std::find_if(spec.grid.begin(), spec.grid.end(),
                           [&](const auto& g) { return g.first == key; });
  auto fixed = std::find_if(spec.fixed.begin(), spec.fixed.end(),
                            [&](const auto& f) { return f.first == key; });
  if (v.list) {
    if (fixed != spec.fixed.end()) spec.fixed.erase(fixed);
    if (axis != spec.grid.end()) {
      axis->second = v.values;
    } else {
      spec.grid.emplace_back(key, v.values);
    }
    return absl::OkStatus();
  }
  if (axis != spec.grid.end()) spec.grid.erase(axis);
  if (spec.grid.empty()) {
    return BadOverride(
        word, absl::StrCat("the grid would have no key left; keep one as a "
                           "list (e.g. ",
                           key, "=[", v.values[0], "])"));
  }
  if (fixed != spec.fixed.end()) {
    fixed->second = v.values[0];
  } else {
    spec.fixed.emplace_back(key, v.values[0]);
  }
  return absl::OkStatus();
}

}  // namespace

std::string SweepSpecYaml(const SweepSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "kind" << YAML::Value
      << std::string(JobKindName(spec.kind));
  if (spec.kind == JobKind::kCommand) EmitCommandSection(out, spec.command);
  out << YAML::Key << "grid" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, values] : spec.grid) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << values;
  }
  out << YAML::EndMap;
  if (!spec.exclude.empty()) {
    out << YAML::Key << "exclude" << YAML::Value << YAML::BeginSeq;
    for (const KeyValues& entry : spec.exclude) {
      out << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : entry)
        out << YAML::Key << k << YAML::Value << v;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (!spec.fixed.empty()) {
    out << YAML::Key << "fixed" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : spec.fixed) {
      out << YAML::Key << k << YAML::Value << v;
    }
    out << YAML::EndMap;
  }
  if (spec.search) {
    const SearchSpec& s = *spec.search;
    out << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "key" << YAML::Value << s.key;
    out << YAML::Key << "range" << YAML::Value << YAML::Flow
        << std::vector<std::string>{ProbeText(s, s.lo), ProbeText(s, s.hi)};
    out << YAML::Key << "scale" << YAML::Value
        << (s.log_scale ? "log" : "linear");
    out << YAML::Key << "outcome" << YAML::Value << OutcomeName(s);
    out << YAML::Key << "direction" << YAML::Value
        << (s.rising ? "rising" : "falling");
    out << YAML::Key << "seeds" << YAML::Value << s.seeds;
    out << YAML::Key << "extra_seeds" << YAML::Value << s.extra_seeds;
    out << YAML::Key << "max_probes" << YAML::Value << s.max_probes;
    out << YAML::Key << "tolerance" << YAML::Value << FormatDouble(s.tolerance);
    out << YAML::EndMap;
  }
  if (!spec.overrides.empty()) {
    out << YAML::Key << "overrides" << YAML::Value << YAML::Flow
        << spec.overrides;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

absl::StatusOr<SweepSpec> ApplyOverrides(
    const SweepSpec& spec, const std::vector<std::string>& overrides) {
  SweepSpec out = spec;
  for (const std::string& word : overrides) {
    if (absl::Status s = ApplyOne(word, out); !s.ok()) return s;
    out.overrides.push_back(word);
  }
  // What the coordinator will parse: the same spec, or an error here first.
  return ParseSweepSpec(SweepSpecYaml(out), "the spec with its overrides");
}

}  // namespace tailsweep
