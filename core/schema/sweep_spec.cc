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
#include "core/number_text.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "core/schema/spec_yaml.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec_parts.h"

namespace tailsweep {
namespace {

// A job key's value: a scalar, or where the kind takes them (`lists`)
// also a list of scalars (stored as FlowListText).
absl::StatusOr<std::string> ValueText(absl::string_view source,
                                      const YAML::Node& node,
                                      absl::string_view what, bool lists) {
  if (lists && node.IsSequence()) {
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
        absl::StrCat(what, lists ? " must be a value or a list of values"
                                 : " must be a single value"));
  }
  return node.as<std::string>();
}

absl::Status ParseGrid(absl::string_view source, const YAML::Node& grid,
                       SweepSpec& spec) {
  if (!grid.IsMap()) {
    return ErrorAt(source, grid,
                   "'grid' must map each key to a non-empty list of values "
                   "({} for none: jobs are added later, e.g. by an Optuna "
                   "study)");
  }
  if (absl::Status s = CheckNoDuplicateKeys(source, grid, "'grid'"); !s.ok()) {
    return s;
  }
  for (const auto& item : grid) {
    absl::StatusOr<std::string> key_or = Key(source, item.first);
    if (!key_or.ok()) return key_or.status();
    const std::string key = *key_or;
    const YAML::Node& values = item.second;
    if (absl::Status k = CheckJobKey(spec, key); !k.ok()) {
      // The kind's own message lists the allowed keys.
      return ErrorAt(source, item.first, k.message());
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
          KindDef(spec.kind).list_values);
      if (!value.ok()) return value.status();
      if (absl::Status s = CheckJobValue(spec, key, *value); !s.ok()) {
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
          ValueText(source, item.second, "an exclude value",
                    KindDef(spec.kind).list_values);
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
    absl::StatusOr<std::string> value =
        ValueText(source, item.second, absl::StrCat("fixed key '", key, "'"),
                  KindDef(spec.kind).list_values);
    if (!value.ok()) return value.status();
    if (absl::Status s = CheckJobValue(spec, key, *value); !s.ok()) {
      return ErrorAt(source, item.first, s.message());
    }
    spec.fixed.emplace_back(key, *value);
  }
  return absl::OkStatus();
}

}  // namespace

bool ValidSweepName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.')
      return false;
  }
  return true;
}

absl::Status CheckJobKey(const SweepSpec& spec, const std::string& key) {
  return KindDef(spec.kind).check_key(key);
}

absl::Status CheckJobValue(const SweepSpec& spec, const std::string& key,
                           const std::string& value) {
  return KindDef(spec.kind).check_value(key, value);
}

// Every top-level key is one a spec has, or a section key of the kind it
// names (train when it names none).
static absl::Status CheckTopKeys(absl::string_view source,
                                 const YAML::Node& root,
                                 const SweepSpec& spec) {
  static const std::set<std::string> kTopKeys = {
      "name", "kind", "grid", "exclude", "fixed", "overrides", "search"};
  // The kind the spec names (train when it names none): its own section
  // keys are allowed too.
  const JobKindDef* declared = &KindDef(spec.kind);
  if (root["kind"] && root["kind"].IsScalar()) {
    absl::StatusOr<const JobKindDef*> named =
        KindDefNamed(root["kind"].as<std::string>());
    declared = named.ok() ? *named : nullptr;
  }
  for (const auto& item : root) {
    absl::StatusOr<std::string> key_or = Key(source, item.first);
    if (!key_or.ok()) return key_or.status();
    const std::string key = *key_or;
    const JobKindDef* owner = KindOfSectionKey(key);
    if (owner != nullptr && owner != declared) {
      const std::string kind(owner->name);
      return ErrorAt(source, item.first,
                     absl::StrCat("'", key, "' is for ", kind,
                                  " sweeps (kind: ", kind, ")"));
    }
    if (kTopKeys.count(key) == 0 && owner == nullptr) {
      return ErrorAt(
          source, item.first,
          absl::StrCat(
              "unknown top-level key '", key,
              "'; allowed: name, kind, grid, exclude, fixed, "
              "overrides, search",
              declared != nullptr && declared->section != nullptr
                  ? absl::StrCat(", ",
                                 absl::StrJoin(declared->section->keys, ", "))
                  : std::string()));
    }
  }
  return absl::OkStatus();
}

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
  TS_RETURN_IF_ERROR(CheckTopKeys(source, root, spec));
  if (!root["name"]) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": missing 'name'"));
  }
  absl::StatusOr<std::string> name = Scalar(source, root["name"], "'name'");
  if (!name.ok()) return name.status();
  if (!ValidSweepName(*name)) {
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
  if (const SpecSection* section = KindDef(spec.kind).section) {
    TS_RETURN_IF_ERROR(section->parse(source, root, spec));
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

}  // namespace

// The job of `cell` (every key it sets), or why the schema refuses it.
absl::StatusOr<JobSpec> CellJob(const SweepSpec& spec, const KeyValues& cell) {
  absl::StatusOr<KeyValues> params = KindDef(spec.kind).job_params(spec, cell);
  if (!params.ok()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : cell) parts.push_back(absl::StrCat(k, "=", v));
    return absl::InvalidArgumentError(absl::StrCat(
        "sweep '", spec.name, "', cell ", absl::StrJoin(parts, " "), ": ",
        params.status().message(), " (add the cell to 'exclude' to drop it)"));
  }
  const absl::string_view not_identity = KindDef(spec.kind).not_identity;
  KeyValues identity;
  for (const auto& kv : *params) {
    if (not_identity.empty() || kv.first != not_identity) {
      identity.push_back(kv);
    }
  }
  return JobSpec{ContentHash(identity), cell, *std::move(params)};
}

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
  // `grid: {}`: no cells of its own; its jobs are added (AddJobs). A search
  // has its one cell.
  if (spec.grid.empty() && !spec.search) return jobs;
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

std::string SweepSpecYaml(const SweepSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "kind" << YAML::Value
      << std::string(JobKindName(spec.kind));
  if (const SpecSection* section = KindDef(spec.kind).section) {
    section->emit(out, spec);
  }
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
  if (spec.search) EmitSearch(out, *spec.search);
  if (!spec.overrides.empty()) {
    out << YAML::Key << "overrides" << YAML::Value << YAML::Flow
        << spec.overrides;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace tailsweep
