// KEY=VALUE overrides of a sweep spec (sweep_spec.h's ApplyOverrides): a
// list widens the grid, a scalar fixes a key, excludes that can no longer
// match are dropped.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/schema/sweep_spec.h"
#include "core/schema/sweep_spec_parts.h"

namespace tailsweep {
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
    if (v.list || !ValidSweepName(v.values[0])) {
      return BadOverride(word,
                         "name: allowed: 1-128 letters, digits, '-', '_', '.'");
    }
    spec.name = v.values[0];
    return absl::OkStatus();
  }
  if (absl::Status k = CheckJobKey(spec, key); !k.ok()) {
    // The kind's own message lists the allowed keys.
    return BadOverride(word, k.message());
  }
  for (const auto& z : spec.zip) {
    if (z.first == key) {
      return BadOverride(word, absl::StrCat("'", key,
                                            "' is a zip axis (its values go "
                                            "with the other zip keys'); edit "
                                            "the spec's 'zip'"));
    }
  }
  for (const SearchParameter& p : spec.space.parameters) {
    if (p.key == key) {
      return BadOverride(word, absl::StrCat("'", key, "' is drawn by method ",
                                            spec.space.method_name,
                                            "; edit its distribution in "
                                            "'parameters'"));
    }
  }
  std::set<std::string> seen;
  for (const std::string& value : v.values) {
    if (absl::Status s = CheckJobValue(spec, key, value); !s.ok()) {
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
  if (spec.grid.empty() && spec.zip.empty() &&
      spec.space.method == SearchMethod::kGrid) {
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
