// `tailsweep-lab lab bench export | judge`: the paper's benchmark and its
// judge for any program (a command job's model, in any language), so that
// it is judged by the yardstick `lab train` judges its own model with
// (science.md section 6; core/evaluation.h).
//
//   lab bench export [--set KEY=VALUE ...] [--config FILE] --out-dir DIR
//                    [--targets]
//     DIR/bench.json: {"config": {KEY: VALUE, every key}, "instances": M,
//       "n_points": N, "delta": the sampling reference}; DIR/input-K.csv
//       (K = 0..M-1): the held-out instance K's input ensemble, N rows x,y;
//       with --targets also DIR/target-K.csv (for figures: the judge draws
//       its own). These are the instances `lab train` evaluates on (the
//       config's eval_seed, eval_instances, n_points, operator, marginal).
//   lab bench judge --data DIR --predictions PDIR [--out FILE]
//     PDIR/prediction-K.csv: the program's output ensemble for input-K.csv
//     (N rows, 2 columns, an optional header). Prints (and writes to FILE)
//     {"eval": {ratio_mean, ratio_median, ratio_ci_low, ratio_ci_high,
//     spread_ratio, delta, eval_instances[, hill_stat]}, "ratios": [...],
//     "collapsed": bool, "diverged": bool}: `lab train`'s final evaluation.
//     Collapsed: spread ratio below kEvalCollapseSpread (0.25) or not
//     finite; diverged: a prediction that is not finite.
//
// Training data: `lab instance --seed S` draws one operator instance's
// input and target ensembles.

#include <ATen/ATen.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/lab_config.h"
#include "cli/output.h"
#include "core/evaluation.h"
#include "core/model.h"
#include "core/schema/file_util.h"
#include "core/schema/json_number.h"
#include "core/schema/metrics_line.h"
#include "core/schema/status_macros.h"
#include "core/training_signals.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kBenchFile[] = "bench.json";

std::string InstanceFile(const std::string& dir, const std::string& what,
                         int64_t k) {
  return (fs::path(dir) / absl::StrCat(what, "-", k, ".csv")).string();
}

// The ensembles are drawn on the CPU in the model's precision, as a CPU run
// of `lab train` draws them.
at::TensorOptions InputOptions(const JobConfig& config) {
  return at::TensorOptions().dtype(ModelScalarType(config.precision));
}

absl::Status Export(const JobConfig& config, const std::string& out_dir,
                    bool targets) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out-dir ", out_dir, ": cannot create (", ec.message(), ")"));
  }
  absl::StatusOr<Evaluator> evaluator =
      Evaluator::Create(config, torch::Device(torch::kCPU));
  if (!evaluator.ok()) return evaluator.status();
  TS_RETURN_IF_ERROR(ForEachEvalChunk(
      config, InputOptions(config), [&](const EvalChunk& c) -> absl::Status {
        for (int64_t b = 0; b < c.input.size(0); ++b) {
          const int64_t k = c.first + b;
          TS_RETURN_IF_ERROR(WritePointsCsv(InstanceFile(out_dir, "input", k),
                                            PointSetOf(c.input[b])));
          if (targets) {
            TS_RETURN_IF_ERROR(WritePointsCsv(
                InstanceFile(out_dir, "target", k), PointSetOf(c.target[b])));
          }
        }
        return absl::OkStatus();
      }));
  json keys = json::object();
  for (const auto& [k, v] : JobConfigToKeyValues(config, KeyListing::kEvery)) {
    keys[k] = v;
  }
  const json bench = {{"config", keys},
                      {"instances", config.eval_instances},
                      {"n_points", config.n_points},
                      {"delta", JsonNumber(evaluator->delta())}};
  TS_RETURN_IF_ERROR(WriteFileAtomic((fs::path(out_dir) / kBenchFile).string(),
                                     bench.dump(2) + "\n"));
  std::cout << "wrote " << config.eval_instances << " input ensembles of "
            << config.n_points << " points" << (targets ? " and targets" : "")
            << " and " << kBenchFile << " to " << out_dir << "\n";
  return absl::OkStatus();
}

// The config bench.json was exported with.
absl::StatusOr<JobConfig> BenchConfig(const std::string& data_dir) {
  const std::string path = (fs::path(data_dir) / kBenchFile).string();
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat(
        path, ": cannot read (made by `lab bench export --out-dir ", data_dir,
        "`)"));
  }
  const json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("config") ||
      !doc["config"].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a bench file (no \"config\" object)"));
  }
  JobConfig config;
  for (const auto& [key, value] : doc["config"].items()) {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": config key '", key, "' is not a string"));
    }
    absl::Status s = SetJobKey(config, key, value.get<std::string>());
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
    }
  }
  TS_RETURN_IF_ERROR(ValidateJobConfig(config));
  return config;
}

// Prediction K as a [n, 2] double tensor; InvalidArgument naming the file
// for a missing file or the wrong shape.
absl::StatusOr<at::Tensor> ReadPrediction(const std::string& dir, int64_t k,
                                          const JobConfig& config) {
  const std::string path = InstanceFile(dir, "prediction", k);
  absl::StatusOr<PointSet> points = ReadPointsCsv(path);
  if (!points.ok()) {
    // The reader's message names the file.
    return absl::InvalidArgumentError(absl::StrCat(
        points.status().message(), " (one prediction-K.csv per input-K.csv, ",
        "K = 0..", config.eval_instances - 1, ")"));
  }
  if (points->rows != config.n_points || points->dims != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", points->rows, " rows of ", points->dims,
                     " columns; expected ", config.n_points,
                     " rows of 2 (the input's shape)"));
  }
  return at::from_blob(points->values.data(), {points->rows, points->dims},
                       at::TensorOptions().dtype(at::kDouble))
      .clone();
}

absl::Status Judge(const std::string& data_dir, const std::string& pred_dir,
                   const std::string& out_file) {
  absl::StatusOr<JobConfig> config = BenchConfig(data_dir);
  if (!config.ok()) return config.status();
  absl::StatusOr<Evaluator> evaluator =
      Evaluator::Create(*config, torch::Device(torch::kCPU));
  if (!evaluator.ok()) return evaluator.status();
  EvalJudge judge(*config, evaluator->delta());
  TS_RETURN_IF_ERROR(ForEachEvalChunk(
      *config, InputOptions(*config), [&](const EvalChunk& c) -> absl::Status {
        for (int64_t b = 0; b < c.input.size(0); ++b) {
          absl::StatusOr<at::Tensor> prediction =
              ReadPrediction(pred_dir, c.first + b, *config);
          if (!prediction.ok()) return prediction.status();
          TS_RETURN_IF_ERROR(
              judge.Add(c.first + b, *prediction, c.target[b], c.second[b]));
        }
        return absl::OkStatus();
      }));
  absl::StatusOr<EvalResult> result = judge.Finish();
  if (!result.ok()) return result.status();
  json ratios = json::array();
  bool diverged = false;
  for (double r : result->ratios) {
    ratios.push_back(JsonNumber(r));
    diverged = diverged || !std::isfinite(r);
  }
  const double spread = result->spread_ratio;
  const json verdict = {{"eval", EvalSummaryJson(SummaryOf(*result))},
                        {"ratios", ratios},
                        {"collapsed", !(spread >= kEvalCollapseSpread)},
                        {"diverged", diverged}};
  if (!out_file.empty()) {
    TS_RETURN_IF_ERROR(WriteFileAtomic(out_file, verdict.dump() + "\n"));
  }
  PrintJson(verdict);
  return absl::OkStatus();
}

RunFn DefineBench(CLI::App& app) {
  struct Flags {
    std::vector<std::string> sets;
    std::string config_file, out_dir, data_dir, pred_dir, out_file;
    bool targets = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* exp = app.add_subcommand(
      "export",
      "Write a job config's held-out instances (the ones lab train "
      "evaluates on) as DIR/input-K.csv, and DIR/bench.json");
  AddJobConfigFlags(*exp, &f->sets, &f->config_file);
  exp->add_option("--out-dir", f->out_dir, "Directory to write into")
      ->required();
  exp->add_flag("--targets", f->targets,
                "Also write DIR/target-K.csv (the judge draws its own)");
  CLI::App* judge = app.add_subcommand(
      "judge",
      "Judge a program's predictions PDIR/prediction-K.csv for the "
      "exported inputs as lab train judges its model (JSON)");
  judge->add_option("--data", f->data_dir, "The export's --out-dir")
      ->required();
  judge
      ->add_option("--predictions", f->pred_dir,
                   "Directory of prediction-K.csv files (N rows, 2 columns)")
      ->required();
  judge->add_option("--out", f->out_file,
                    "Also write the verdict to this file (atomically)");
  return [f, exp, judge]() -> absl::Status {
    if (!exp->parsed() && !judge->parsed()) {
      return absl::InvalidArgumentError(
          "lab bench needs a subcommand: export or judge (see lab bench "
          "--help)");
    }
    if (exp->parsed()) {
      absl::StatusOr<JobConfig> config =
          JobConfigFromFlags(f->config_file, f->sets);
      if (!config.ok()) return config.status();
      return Export(*config, f->out_dir, f->targets);
    }
    return Judge(f->data_dir, f->pred_dir, f->out_file);
  };
}

}  // namespace

Command BenchCommand() {
  return {"bench",
          "The paper's benchmark for any program: export the held-out "
          "inputs, judge predictions for them (lab bench export|judge)",
          DefineBench};
}

}  // namespace tailsweep::cli
