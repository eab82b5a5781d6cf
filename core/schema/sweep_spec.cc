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

absl::Status CheckCellCount(const SweepSpec& spec);

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

// `zip:` after the grid: keys of the kind not in the grid, each a
// non-empty list, all of one length.
absl::Status ParseZip(absl::string_view source, const YAML::Node& zip,
                      SweepSpec& spec) {
  if (!zip.IsMap() || zip.size() == 0) {
    return ErrorAt(source, zip,
                   "'zip' must map each key to a list of values, every list "
                   "the same length (the i-th values go together)");
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, zip, "'zip'"));
  for (const auto& item : zip) {
    absl::StatusOr<std::string> key =
        NewAxisKey(source, item.first, spec, "zip key");
    if (!key.ok()) return key.status();
    const YAML::Node& values = item.second;
    if (!values.IsSequence() || values.size() == 0) {
      return ErrorAt(source, item.first,
                     absl::StrCat("zip key '", *key,
                                  "' needs a non-empty list, e.g. [a, b]"));
    }
    if (!spec.zip.empty() && values.size() != spec.zip[0].second.size()) {
      return ErrorAt(
          source, item.first,
          absl::StrCat("zip key '", *key, "' has ", values.size(),
                       " values but '", spec.zip[0].first, "' has ",
                       spec.zip[0].second.size(),
                       "; zipped lists go together and must be the same "
                       "length"));
    }
    std::vector<std::string> list;
    for (const YAML::Node& v : values) {
      absl::StatusOr<std::string> value = ValueText(
          source, v, absl::StrCat("each value of zip key '", *key, "'"),
          KindDef(spec.kind).list_values);
      if (!value.ok()) return value.status();
      if (absl::Status st = CheckJobValue(spec, *key, *value); !st.ok()) {
        return ErrorAt(source, v, st.message());
      }
      list.push_back(*value);
    }
    spec.zip.emplace_back(*key, std::move(list));
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
        axis = std::find_if(spec.zip.begin(), spec.zip.end(),
                            [&](const auto& g) { return g.first == key; });
      }
      if (axis == spec.grid.end() || axis == spec.zip.end()) {
        std::vector<std::string> keys;
        for (const auto& g : spec.zip) keys.push_back(g.first);
        for (const auto& g : spec.grid) keys.push_back(g.first);
        return ErrorAt(
            source, item.first,
            absl::StrCat("exclude key '", key, "' is not a grid ",
                         spec.zip.empty() ? "" : "or zip ",
                         "key; allowed: ", absl::StrJoin(keys, ", ")));
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
    for (const auto* axes : {&spec.grid, &spec.zip}) {
      for (const auto& g : *axes) {
        if (g.first == key) {
          return ErrorAt(source, item.first,
                         absl::StrCat("key '", key, "' is both in '",
                                      axes == &spec.grid ? "grid" : "zip",
                                      "' and in 'fixed'"));
        }
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
  static const std::vector<std::string> kTopKeys = {"name",
                                                    "kind",
                                                    "grid",
                                                    "zip",
                                                    "exclude",
                                                    "fixed",
                                                    "overrides",
                                                    "search",
                                                    "method",
                                                    "parameters",
                                                    "run_cap",
                                                    "sample_seed",
                                                    "metric",
                                                    "priority",
                                                    "max_running",
                                                    "timeout_s",
                                                    "max_failures",
                                                    "tags",
                                                    "notes",
                                                    "stop",
                                                    "checkpoints",
                                                    "artifacts",
                                                    "artifacts_max_mib",
                                                    "logs_max_mib",
                                                    "notify",
                                                    "stall_after_s"};
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
    if (std::find(kTopKeys.begin(), kTopKeys.end(), key) == kTopKeys.end() &&
        owner == nullptr) {
      return ErrorAt(
          source, item.first,
          absl::StrCat(
              "unknown top-level key '", key,
              "'; allowed: ", absl::StrJoin(kTopKeys, ", "),
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
  const bool sampled = root["method"] && root["method"].IsScalar() &&
                       root["method"].as<std::string>() != "grid";
  if (!root["grid"] && !root["zip"] && !sampled) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": missing 'grid' (KEY: [values...]; {} for none)"));
  }
  if (root["grid"]) {
    if (absl::Status s = ParseGrid(source, root["grid"], spec); !s.ok()) {
      return s;
    }
  }
  if (root["zip"]) TS_RETURN_IF_ERROR(ParseZip(source, root["zip"], spec));
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
  TS_RETURN_IF_ERROR(CheckCellCount(spec));
  TS_RETURN_IF_ERROR(ParseSearchSpace(source, root, spec));
  TS_RETURN_IF_ERROR(ParseSweepControl(source, root, spec));
  absl::StatusOr<RunOutputs> outputs = ParseRunOutputs(source, root);
  if (!outputs.ok()) return outputs.status();
  spec.outputs = *std::move(outputs);
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

// InvalidArgument when grid x zip has more than kMaxSweepCells cells.
absl::Status CheckCellCount(const SweepSpec& spec) {
  int64_t cells = spec.zip.empty() ? 1 : spec.zip[0].second.size();
  for (const auto& [key, values] : spec.grid) {
    cells *= static_cast<int64_t>(values.size());
    if (cells > kMaxSweepCells) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sweep '", spec.name, "': the grid has more than ", kMaxSweepCells,
          " cells (at axis '", key, "'); split it into several sweeps"));
    }
  }
  return absl::OkStatus();
}

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

absl::Status CheckKeyFree(const SweepSpec& spec, const std::string& key) {
  const std::pair<
      const char*,
      const std::vector<std::pair<std::string, std::vector<std::string>>>*>
      axes[] = {{"grid", &spec.grid}, {"zip", &spec.zip}};
  for (const auto& [where, list] : axes) {
    for (const auto& g : *list) {
      if (g.first == key) {
        return absl::InvalidArgumentError(
            absl::StrCat("is already in '", where, "'"));
      }
    }
  }
  for (const auto& f : spec.fixed) {
    if (f.first == key) {
      return absl::InvalidArgumentError("is already in 'fixed'");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> NewAxisKey(absl::string_view source,
                                       const YAML::Node& node,
                                       const SweepSpec& spec,
                                       absl::string_view what) {
  absl::StatusOr<std::string> key = Key(source, node);
  if (!key.ok()) return key.status();
  if (absl::Status k = CheckJobKey(spec, *key); !k.ok()) {
    return ErrorAt(source, node, k.message());
  }
  if (absl::Status taken = CheckKeyFree(spec, *key); !taken.ok()) {
    return ErrorAt(source, node,
                   absl::StrCat(what, " '", *key, "' ", taken.message()));
  }
  return key;
}

void ForEachCell(const SweepSpec& spec,
                 const std::function<void(const KeyValues&)>& fn) {
  // One odometer wheel per axis: the zip (its tuples) first, then each
  // grid key.
  const size_t zip_len = spec.zip.empty() ? 0 : spec.zip[0].second.size();
  std::vector<size_t> sizes;
  if (zip_len > 0) sizes.push_back(zip_len);
  for (const auto& g : spec.grid) sizes.push_back(g.second.size());
  if (sizes.empty()) return;
  std::vector<size_t> index(sizes.size(), 0);
  while (true) {
    KeyValues cell;
    size_t wheel = 0;
    if (zip_len > 0) {
      for (const auto& z : spec.zip)
        cell.emplace_back(z.first, z.second[index[0]]);
      wheel = 1;
    }
    for (size_t k = 0; k < spec.grid.size(); ++k) {
      cell.emplace_back(spec.grid[k].first,
                        spec.grid[k].second[index[wheel + k]]);
    }
    if (!Excluded(spec, cell)) fn(cell);
    // Advance the odometer, last wheel fastest.
    size_t k = sizes.size();
    while (k > 0 && ++index[k - 1] == sizes[k - 1]) index[--k] = 0;
    if (k == 0) break;
  }
}

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
  TS_RETURN_IF_ERROR(CheckCellCount(spec));
  std::vector<JobSpec> jobs;
  // A study adds its jobs (tpe, ...), as does `grid: {}`. A search has its
  // one cell when the grid has none.
  if (spec.space.method == SearchMethod::kDriven) return jobs;
  const bool sampled = spec.space.method != SearchMethod::kGrid;
  if (spec.grid.empty() && spec.zip.empty() && !spec.search && !sampled) {
    return jobs;
  }
  std::vector<KeyValues> cells;
  if (spec.grid.empty() && spec.zip.empty()) {
    cells.emplace_back();
  } else {
    ForEachCell(spec, [&](const KeyValues& cell) { cells.push_back(cell); });
  }
  std::vector<KeyValues> samples(1);
  if (sampled) {
    const int64_t per_sample = std::max<int64_t>(cells.size(), 1);
    samples = DrawSamples(spec.space, spec.space.run_cap / per_sample);
  }
  for (const KeyValues& sample : samples) {
    for (const KeyValues& grid_cell : cells) {
      KeyValues cell = sample;
      cell.insert(cell.end(), grid_cell.begin(), grid_cell.end());
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
  if (!spec.zip.empty()) {
    out << YAML::Key << "zip" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, values] : spec.zip) {
      out << YAML::Key << key << YAML::Value << YAML::Flow << values;
    }
    out << YAML::EndMap;
  }
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
  EmitSearchSpace(out, spec.space);
  EmitSweepControl(out, spec.control);
  EmitRunOutputs(out, spec.outputs);
  if (!spec.overrides.empty()) {
    out << YAML::Key << "overrides" << YAML::Value << YAML::Flow
        << spec.overrides;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace tailsweep
