// `tailsweep-lab lab concentration`: the paper's mechanism without training
// (Appendix A): how concentrated the first layer's attention is at
// initialisation, against the ensemble size N, per kernel, on heavy-tailed
// and Gaussian inputs. For each marginal, N, kernel and seed: a model
// initialised from the seed (as `lab train` does), one instance's input
// ensemble of N points (the instance drawn from the seed: the same for every
// kernel), and the first layer's AttentionStats over its first
// stats_queries queries per head (core/kernel_attention.h). Rows give the
// mean over seeds of each query's largest weight (row_max_mean), N times it
// (the concentration factor: 1 when uniform), the mean entropy, and a 95%
// percentile-bootstrap interval of the mean row max over seeds.
//
//   lab concentration [--n 256,1024,4096,16384] [--kernels ...]
//       [--marginals mirrored_pareto,gaussian] [--seeds 8] [--set K=V ...]
//       [--format table|csv|markdown|json]

#include <ATen/ATen.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command.h"
#include "cli/lab_config.h"
#include "cli/output.h"
#include "cli/render.h"
#include "core/job_config.h"
#include "core/model.h"
#include "core/sampling.h"
#include "core/schema/status_macros.h"
#include "core/statistics.h"
#include "core/trainer.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

struct Row {
  std::string marginal, kernel;
  int64_t n = 0, seeds = 0;
  double row_max = 0, low = 0, high = 0, entropy = 0;
};

absl::StatusOr<Row> Measure(JobConfig config, int64_t seeds) {
  Row row;
  row.marginal = std::string(MarginalFamilyName(config.marginal));
  row.kernel = std::string(AttentionKernelName(config.kernel));
  row.n = config.n_points;
  row.seeds = seeds;
  std::vector<double> maxes, entropies;
  for (int64_t s = 0; s < seeds; ++s) {
    config.seed = static_cast<uint64_t>(s);
    torch::manual_seed(config.seed);  // as Trainer::Create
    PointTransformer model(ModelOptionsFor(config));
    model->to(ModelScalarType(config.precision));
    TaskSampler sampler(TaskOf(config), config.seed);
    const std::vector<Instance> instance = sampler.DrawInstances(1);
    const at::Tensor points = sampler.Sample(
        instance, Side::kInput, config.n_points,
        at::TensorOptions().dtype(ModelScalarType(config.precision)));
    const AttentionStats stats = model->FirstLayerAttentionStats(points);
    maxes.push_back(stats.row_max_mean);
    entropies.push_back(stats.entropy);
  }
  row.row_max = Mean(maxes);
  row.entropy = Mean(entropies);
  BootstrapOptions b;
  absl::StatusOr<Interval> ci = BootstrapInterval(maxes, Statistic::kMean, b);
  if (!ci.ok()) return ci.status();
  row.low = ci->low;
  row.high = ci->high;
  return row;
}

RunFn DefineConcentration(CLI::App& app) {
  struct Flags {
    std::vector<int64_t> n = {256, 1024, 4096, 16384};
    std::vector<std::string> kernels = {"softmax", "quadratic", "linear",
                                        "log"};
    std::vector<std::string> marginals = {"mirrored_pareto", "gaussian"};
    int64_t seeds = 8;
    std::vector<std::string> sets;
    std::string config_file, format = "table";
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--n", f->n, "Ensemble sizes N")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 22))
      ->capture_default_str();
  app.add_option("--kernels", f->kernels, "Attention kernels")
      ->delimiter(',')
      ->check(CLI::IsMember({"softmax", "quadratic", "linear", "log"}))
      ->capture_default_str();
  app.add_option("--marginals", f->marginals, "Input marginal families")
      ->delimiter(',')
      ->check(CLI::IsMember({"mirrored_pareto", "gaussian"}))
      ->capture_default_str();
  app.add_option("--seeds", f->seeds,
                 "Seeds per cell (model init and instance)")
      ->check(CLI::Range(int64_t{2}, int64_t{1000}))
      ->capture_default_str();
  AddJobConfigFlags(app, &f->sets, &f->config_file);
  app.add_option("--format", f->format, "table, csv, markdown or json")
      ->check(CLI::IsMember({"table", "csv", "markdown", "json"}))
      ->capture_default_str();
  return [f]() -> absl::Status {
    absl::StatusOr<JobConfig> base =
        JobConfigFromFlags(f->config_file, f->sets);
    if (!base.ok()) return base.status();
    std::vector<Row> rows;
    const int64_t total = static_cast<int64_t>(f->marginals.size() *
                                               f->n.size() * f->kernels.size());
    Progress progress("concentration", total);
    for (const std::string& marginal : f->marginals) {
      for (int64_t n : f->n) {
        for (const std::string& kernel : f->kernels) {
          JobConfig c = *base;
          TS_RETURN_IF_ERROR(SetJobKey(c, "marginal", marginal));
          TS_RETURN_IF_ERROR(SetJobKey(c, "kernel", kernel));
          c.n_points = n;
          absl::StatusOr<Row> row = Measure(c, f->seeds);
          if (!row.ok()) return row.status();
          rows.push_back(*row);
          progress.Update(static_cast<int64_t>(rows.size()),
                          absl::StrCat(marginal, " N=", n, " ", kernel));
        }
      }
    }
    if (f->format == "json") {
      json doc = json::array();
      for (const Row& r : rows) {
        doc.push_back({{"marginal", r.marginal},
                       {"n", r.n},
                       {"kernel", r.kernel},
                       {"seeds", r.seeds},
                       {"row_max_mean", r.row_max},
                       {"row_max_ci_low", r.low},
                       {"row_max_ci_high", r.high},
                       {"concentration", r.row_max * r.n},
                       {"entropy", r.entropy}});
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    Table t;
    t.header = {"marginal", "n",          "kernel",      "seeds",
                "row_max",  "row_max_ci", "n_x_row_max", "entropy"};
    for (const Row& r : rows) {
      t.rows.push_back({r.marginal, absl::StrCat(r.n), r.kernel,
                        absl::StrCat(r.seeds),
                        absl::StrFormat("%.4g", r.row_max),
                        absl::StrFormat("[%.4g, %.4g]", r.low, r.high),
                        absl::StrFormat("%.3g", r.row_max * r.n),
                        absl::StrFormat("%.4g", r.entropy)});
    }
    std::cout << (f->format == "csv"        ? RenderCsv(t)
                  : f->format == "markdown" ? RenderMarkdown(t)
                                            : RenderText(t));
    return absl::OkStatus();
  };
}

}  // namespace

Command ConcentrationCommand() {
  return {"concentration",
          "The first layer's attention concentration at initialisation "
          "against N, per kernel and marginal (the paper's mechanism, "
          "Appendix A)",
          DefineConcentration};
}

}  // namespace tailsweep::cli
