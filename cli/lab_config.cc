#include "cli/lab_config.h"

#include <ATen/ATen.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tailsweep::cli {
namespace {

// Applies a flat YAML mapping of job keys. Errors give file:line:column.
absl::Status ApplyYaml(const std::string& path, JobConfig& config) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open for reading"));
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  if (root.IsNull()) return absl::OkStatus();
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected a mapping of job keys (key: value per line)"));
  }
  for (const auto& item : root) {
    const YAML::Mark mark = item.first.Mark();
    const std::string where =
        absl::StrCat(path, ":", mark.line + 1, ":", mark.column + 1, ": ");
    if (!item.second.IsScalar()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "key '", item.first.as<std::string>(),
                       "' needs a scalar value"));
    }
    absl::Status s = SetJobKey(config, item.first.as<std::string>(),
                               item.second.as<std::string>());
    if (!s.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

void AddJobConfigFlags(CLI::App& app, std::vector<std::string>* sets,
                       std::string* config_file) {
  std::string keys;
  for (const JobKey& k : JobKeys()) {
    absl::StrAppend(&keys, "\n  ", k.name, ": ", k.help);
  }
  app.add_option("--set", *sets, "KEY=VALUE, repeatable; keys:" + keys);
  app.add_option("--config", *config_file,
                 "YAML file of KEY: VALUE lines, applied before --set");
}

absl::StatusOr<JobConfig> JobConfigFromFlags(
    const std::string& config_file, const std::vector<std::string>& sets) {
  JobConfig config;
  if (!config_file.empty()) {
    if (absl::Status s = ApplyYaml(config_file, config); !s.ok()) return s;
  }
  for (const std::string& set : sets) {
    std::vector<std::string> kv = absl::StrSplit(set, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set '", set, "': expected KEY=VALUE"));
    }
    if (absl::Status s = SetJobKey(config, kv[0], kv[1]); !s.ok()) return s;
  }
  if (absl::Status s = ValidateJobConfig(config); !s.ok()) return s;
  return config;
}

PointSet PointSetOf(const at::Tensor& points) {
  const at::Tensor c = points.to(at::kDouble).contiguous();
  PointSet p;
  p.columns = {"x", "y"};
  p.rows = c.size(0);
  p.dims = c.size(1);
  p.values.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  return p;
}

}  // namespace tailsweep::cli
