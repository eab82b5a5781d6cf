#include "cli/submit.h"

#include "cli/render.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep::cli {

absl::Status SubmitSpecFile(Connection& c, const std::string& path,
                            std::ostream& out, std::string* name,
                            const std::vector<std::string>& overrides) {
  absl::StatusOr<SweepSpec> spec = LoadSweepSpec(path);
  if (!spec.ok()) return spec.status();
  if (!overrides.empty()) {
    spec = ApplyOverrides(*spec, overrides);
    if (!spec.ok()) return spec.status();
  }
  absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
  if (!jobs.ok()) return jobs.status();
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
