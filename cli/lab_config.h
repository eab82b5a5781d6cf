#ifndef TAILSWEEP_CLI_LAB_CONFIG_H_
#define TAILSWEEP_CLI_LAB_CONFIG_H_

// What the lab commands that take a job config share (lab train, lab bench):
// its flags and their reading, and point ensembles as CSV point sets.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/cli_app.h"
#include "core/job_config.h"
#include "core/point_csv.h"

namespace at {
class Tensor;
}  // namespace at

namespace tailsweep::cli {

// --set KEY=VALUE (repeatable; its help lists every key) and --config FILE.
void AddJobConfigFlags(CLI::App& app, std::vector<std::string>* sets,
                       std::string* config_file);
// The job's config: --config's file (a flat YAML mapping; errors give
// file:line:column), then each --set, then the cross-key rules.
absl::StatusOr<JobConfig> JobConfigFromFlags(
    const std::string& config_file, const std::vector<std::string>& sets);

// An ensemble [n, 2] as a point set with the header x,y.
PointSet PointSetOf(const at::Tensor& points);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_LAB_CONFIG_H_
