#include "core/schema/submission.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/schema/job_kinds.h"
#include "core/schema/sweep_spec_parts.h"

namespace tailsweep {

namespace {

// A sampled spec whose text does not give its sample_seed gets the seed it
// was drawn from written into the text the coordinator keeps, so the
// draw no longer depends on how a build derives the default.
void RecordSampleSeed(SweepSpec& spec, absl::string_view source) {
  if (spec.space.method != SearchMethod::kRandom &&
      spec.space.method != SearchMethod::kSobol) {
    return;
  }
  if (spec.space.sample_seed_given) return;
  const std::string text = absl::StrCat(
      spec.text, spec.text.empty() || spec.text.back() == '\n' ? "" : "\n",
      "sample_seed: ", spec.space.sample_seed,
      "  # the draw's seed, recorded at submit\n");
  absl::StatusOr<SweepSpec> again = ParseSweepSpec(text, source);
  // Appended to a block mapping it parses to the same spec; a text it does
  // not fit (a flow mapping) stays as it was.
  if (again.ok() && again->space.sample_seed == spec.space.sample_seed) {
    spec = *std::move(again);
  }
}

}  // namespace

absl::StatusOr<Submission> PrepareSubmission(
    SweepSpec spec, absl::string_view source,
    const std::vector<std::string>& overrides,
    const std::optional<std::string>& spec_dir) {
  if (!overrides.empty()) {
    absl::StatusOr<SweepSpec> changed = ApplyOverrides(spec, overrides);
    if (!changed.ok()) return changed.status();
    spec = *std::move(changed);
  }
  if (const SpecSection* section = KindDef(spec.kind).section;
      section != nullptr && section->prepare_submit && spec_dir.has_value()) {
    // What only the spec's folder knows is resolved there; the spec that
    // goes records it.
    if (absl::Status s = section->prepare_submit(*spec_dir, spec); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(source, ": ", s.message()));
    }
    absl::StatusOr<SweepSpec> resolved =
        ParseSweepSpec(SweepSpecYaml(spec), source);
    if (!resolved.ok()) return resolved.status();
    spec = *std::move(resolved);
  }
  RecordSampleSeed(spec, source);
  absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(spec);
  if (!jobs.ok()) return jobs.status();
  return Submission{std::move(spec), *std::move(jobs)};
}

absl::StatusOr<JobSpec> AddedJob(const SweepSpec& spec, const KeyValues& cell) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : cell) parts.push_back(absl::StrCat(k, "=", v));
  const std::string named =
      absl::StrCat("sweep '", spec.name, "', added cell {",
                   absl::StrJoin(parts, ", "), "}: ");
  if (cell.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(named, "a cell sets at least one key"));
  }
  for (size_t i = 0; i < cell.size(); ++i) {
    for (const auto& [k, v] : spec.fixed) {
      if (k == cell[i].first) {
        return absl::InvalidArgumentError(absl::StrCat(
            named, "'", k, "' is fixed at ", v,
            " in this sweep; add cells with other keys, or submit a sweep "
            "that does not fix it"));
      }
    }
    if (absl::Status s = CheckJobKey(spec, cell[i].first); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(named, s.message()));
    }
    if (absl::Status s = CheckJobValue(spec, cell[i].first, cell[i].second);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(named, s.message()));
    }
    for (size_t j = 0; j < i; ++j) {
      if (cell[j].first == cell[i].first) {
        return absl::InvalidArgumentError(
            absl::StrCat(named, "'", cell[i].first, "' is set twice"));
      }
    }
  }
  return CellJob(spec, cell);
}

}  // namespace tailsweep
