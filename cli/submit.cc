#include "cli/submit.h"

#include <fstream>
#include <sstream>

#include "cli/render.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep::cli {

absl::Status SubmitSpecFile(Connection& c, const std::string& path,
                            std::ostream& out, std::string* name) {
  absl::StatusOr<SweepSpec> spec = LoadSweepSpec(path);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
  if (!jobs.ok()) return jobs.status();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(text.str());
  req.set_source_name(path);
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
