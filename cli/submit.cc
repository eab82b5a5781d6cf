#include "cli/submit.h"

#include "cli/render.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep::cli {

namespace {

struct Prepared {
  SweepSpec spec;
  std::vector<JobSpec> jobs;
};

// The spec at `path` with `overrides`, checked and expanded here.
absl::StatusOr<Prepared> Prepare(const std::string& path,
                                 const std::vector<std::string>& overrides) {
  absl::StatusOr<SweepSpec> spec = LoadSweepSpec(path);
  if (!spec.ok()) return spec.status();
  if (!overrides.empty()) {
    spec = ApplyOverrides(*spec, overrides);
    if (!spec.ok()) return spec.status();
  }
  absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
  if (!jobs.ok()) return jobs.status();
  return Prepared{*std::move(spec), *std::move(jobs)};
}

}  // namespace

absl::Status DryRunSpecFile(const std::string& path, std::ostream& out,
                            const std::vector<std::string>& overrides) {
  absl::StatusOr<Prepared> p = Prepare(path, overrides);
  if (!p.ok()) return p.status();
  out << "sweep " << EscapeControl(p->spec.name) << ": " << p->jobs.size()
      << " jobs (dry run, nothing submitted)\n";
  if (p->spec.search) {
    out << "a boundary search along " << EscapeControl(p->spec.search->key)
        << ": these are its first probes (both ends); the coordinator adds "
           "the next as results come\n";
  }
  if (!overrides.empty()) {
    out << "the spec as it would be submitted:\n"
        << EscapeControl(p->spec.text, Lines::kKeep);
  }
  return absl::OkStatus();
}

absl::Status SubmitSpecFile(Connection& c, const std::string& path,
                            std::ostream& out, std::string* name,
                            const std::vector<std::string>& overrides) {
  absl::StatusOr<Prepared> prepared = Prepare(path, overrides);
  if (!prepared.ok()) return prepared.status();
  const SweepSpec* spec = &prepared->spec;
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(spec->text);
  req.set_source_name(overrides.empty() ? path : path + " with overrides");
  v1::SubmitSweepResponse resp;
  if (absl::Status s = c.Call(&CoordinatorApi::SubmitSweep, req, &resp);
      !s.ok()) {
    return s;
  }
  out << "sweep " << EscapeControl(resp.sweep()) << ": " << resp.jobs_added()
      << " jobs added, " << resp.jobs_existing() << " already there\n";
  if (name != nullptr) *name = resp.sweep();
  return absl::OkStatus();
}

}  // namespace tailsweep::cli
