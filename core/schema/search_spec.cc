// A sweep spec's `search:` block (sweep_spec.h's SearchSpec): parsing,
// checks against the kind's keys and outcomes, and writing it back.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/number_text.h"
#include "core/schema/job_kinds.h"
#include "core/schema/spec_yaml.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec_parts.h"

namespace tailsweep {
namespace {

absl::Status CheckSearchKey(absl::string_view source, const YAML::Node& at,
                            const SweepSpec& spec, SearchSpec& s) {
  if (s.key == "seed") {
    return ErrorAt(source, at,
                   "the search sets 'seed' itself (0..seeds-1 at each probe "
                   "point); search another key");
  }
  if (absl::Status k = CheckJobKey(spec, s.key); !k.ok()) {
    return ErrorAt(source, at, k.message());
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
  if (CheckJobValue(spec, s.key, "1.5").ok()) return absl::OkStatus();
  if (CheckJobValue(spec, s.key, "2").ok()) {
    s.integer = true;
    return absl::OkStatus();
  }
  return ErrorAt(source, at,
                 absl::StrCat("key '", s.key,
                              "' is not a number; a search needs a numeric "
                              "key (e.g. lr, tail_index_max, n_points)"));
}

// The kind reads its outcome's text; the error is placed at the node.
absl::Status ParseOutcome(absl::string_view source, const YAML::Node& node,
                          const SweepSpec& spec, SearchSpec& s) {
  absl::StatusOr<std::string> text = Scalar(source, node, "'outcome'");
  if (!text.ok()) return text.status();
  absl::Status parsed = KindDef(spec.kind).parse_outcome(*text, spec, s);
  if (!parsed.ok()) return ErrorAt(source, node, parsed.message());
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
    if (absl::Status c = CheckJobValue(spec, s.key, ProbeText(s, end));
        !c.ok()) {
      return ErrorAt(source, range, c.message());
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseSearch(absl::string_view source, const YAML::Node& node,
                         SweepSpec& spec) {
  static const std::vector<std::string> kKeys = {
      "key",   "range",       "scale",      "outcome",  "direction",
      "seeds", "extra_seeds", "max_probes", "tolerance"};
  const std::string allowed = absl::StrJoin(kKeys, ", ");
  if (KindDef(spec.kind).parse_outcome == nullptr) {
    return ErrorAt(
        source, node,
        absl::StrCat("'search' is for ", KindsWithSearch(), " sweeps (a ",
                     JobKindName(spec.kind), " job has no yes/no outcome)"));
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
  } else if (absl::Status none = KindDef(spec.kind).parse_outcome("", spec, s);
             !none.ok()) {
    return ErrorAt(source, node, none.message());
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

void EmitSearch(YAML::Emitter& out, const SearchSpec& s) {
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

std::string ProbeText(const SearchSpec& search, double value) {
  if (search.integer) return absl::StrCat(std::llround(value));
  return absl::StrFormat("%.4g", value);
}

}  // namespace tailsweep
