// `tailsweep-lab lab bench export | judge`: the paper's benchmark and its
// judge for any program (a command job's model, in any language), so that
// it is judged by the yardstick `lab train` judges its own model with
// (science.md section 6; core/evaluation.h).
//
//   lab bench export [--set KEY=VALUE ...] [--config FILE] --out-dir DIR
//                    [--seed-file F] [--debug-targets]
//     The config must name a benchmark (core/benchmarks.h: its operator,
//     marginal and n_points; at least its instances and reference trials).
//     Its held-out instances are drawn from a seed sealed by the secret in
//     the seed file (made on first use), never from the public eval_seed.
//     DIR/input-K.csv (K = 0..M-1): instance K's input ensemble, N rows x,y;
//     DIR/bench.json: {"benchmark": {"name", "hash"}, "config": {operator,
//     marginal, n_points, eval_instances, reference_trials}, "seal": the
//     secret's fingerprint, "instances", "n_points", "delta"}. Never the
//     targets: --debug-targets draws from the public eval_seed instead and
//     writes DIR/target-K.csv too, and judge refuses that export.
//   lab bench judge --data DIR --predictions PDIR [--out FILE]
//                   [--seed-file F]
//     PDIR/prediction-K.csv: the program's output ensemble for input-K.csv
//     (N rows, 2 columns, an optional header). Refuses a bench.json that
//     names no benchmark, was changed, or was sealed by another seed file.
//     Prints (and writes to FILE) {"benchmark": {"name", "hash"}, "eval":
//     {ratio_mean, ratio_median, ratio_ci_low, ratio_ci_high, spread_ratio,
//     delta, eval_instances[, hill_stat]}, "ratios": [...],
//     "eval_spread_collapsed": spread ratio below "eval_spread_threshold"
//     (kEvalCollapseSpread, 0.25) or not finite, "diverged": a prediction
//     not finite}: `lab train`'s final evaluation, on sealed instances.
//   lab bench list: the named benchmarks.
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
#include "absl/strings/strip.h"
#include "cli/command.h"
#include "cli/lab_config.h"
#include "cli/output.h"
#include "core/benchmarks.h"
#include "core/evaluation.h"
#include "core/instance.h"
#include "core/marginal.h"
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

// The config its instances are drawn with, and what bench.json says of
// it: a named benchmark's, sealed by the seed file's secret.
struct Sealed {
  Benchmark benchmark;
  std::string hash;
  JobConfig config;  // eval_seed: the sealed seed
  std::string fingerprint;
};

Sealed Seal(const Benchmark& b, int64_t instances, int64_t reference_trials,
            const std::string& secret) {
  Sealed s{b, BenchmarkHash(b, instances, reference_trials),
           BenchmarkConfig(b, instances, reference_trials),
           SecretFingerprint(secret)};
  s.config.eval_seed = SealedSeed(secret, s.hash);
  return s;
}

absl::Status Export(const JobConfig& asked, const std::string& out_dir,
                    const std::string& seed_file, bool debug_targets) {
  JobConfig config = asked;
  json doc;
  if (debug_targets) {
    // Drawn from the config's public eval_seed, targets beside: for
    // figures and debugging; judge refuses it.
    json keys = json::object();
    for (const auto& [k, v] :
         JobConfigToKeyValues(config, KeyListing::kEvery)) {
      keys[k] = v;
    }
    doc = {{"debug", true}, {"config", keys}};
  } else {
    absl::StatusOr<Benchmark> b = BenchmarkOf(config);
    if (!b.ok()) return b.status();
    absl::StatusOr<std::string> secret = LoadOrMakeSecret(seed_file);
    if (!secret.ok()) return secret.status();
    const Sealed sealed =
        Seal(*b, config.eval_instances, config.reference_trials, *secret);
    const Precision precision = config.precision;
    config = sealed.config;
    config.precision = precision;  // the inputs' type, as the model's
    doc = {{"benchmark", {{"name", b->name}, {"hash", sealed.hash}}},
           {"config",
            {{"operator", std::string(OperatorName(config.op))},
             {"marginal", std::string(MarginalFamilyName(config.marginal))},
             {"n_points", config.n_points},
             {"eval_instances", config.eval_instances},
             {"reference_trials", config.reference_trials}}},
           {"seal", sealed.fingerprint}};
  }
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
          if (debug_targets) {
            TS_RETURN_IF_ERROR(WritePointsCsv(
                InstanceFile(out_dir, "target", k), PointSetOf(c.target[b])));
          }
        }
        return absl::OkStatus();
      }));
  doc["instances"] = config.eval_instances;
  doc["n_points"] = config.n_points;
  doc["delta"] = JsonNumber(evaluator->delta());
  TS_RETURN_IF_ERROR(WriteFileAtomic((fs::path(out_dir) / kBenchFile).string(),
                                     doc.dump(2) + "\n"));
  std::cout << "wrote " << config.eval_instances << " input ensembles of "
            << config.n_points << " points"
            << (debug_targets
                    ? " and their targets (a debug export: the "
                      "judge refuses it)"
                    : absl::StrCat(" of benchmark ",
                                   doc["benchmark"]["name"].get<std::string>(),
                                   ", sealed by ", seed_file))
            << " and " << kBenchFile << " to " << out_dir << "\n";
  return absl::OkStatus();
}

// The sealed config bench.json was exported with; refused unless it names
// a benchmark, unchanged, sealed by the secret in `seed_file`.
absl::StatusOr<Sealed> BenchSealed(const std::string& data_dir,
                                   const std::string& seed_file) {
  const std::string path = (fs::path(data_dir) / kBenchFile).string();
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat(
        path, ": cannot read (made by `lab bench export --out-dir ", data_dir,
        "`)"));
  }
  const json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a bench file (not a JSON object)"));
  }
  if (doc.value("debug", false)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": a debug export (--debug-targets: its targets are public); export "
        "again without it to be judged"));
  }
  const json& b = doc.contains("benchmark") ? doc["benchmark"] : json();
  const json& c = doc.contains("config") ? doc["config"] : json();
  if (!b.is_object() || !b["name"].is_string() || !b["hash"].is_string() ||
      !c.is_object() || !c["eval_instances"].is_number_integer() ||
      !c["reference_trials"].is_number_integer() || !doc["seal"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": names no sealed benchmark (made by an older tailsweep?); export "
        "again"));
  }
  absl::StatusOr<Benchmark> named = BenchmarkNamed(b["name"]);
  if (!named.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", named.status().message()));
  }
  JobConfig asked = BenchmarkConfig(*named, c["eval_instances"].get<int64_t>(),
                                    c["reference_trials"].get<int64_t>());
  if (absl::StatusOr<Benchmark> fits = BenchmarkOf(asked); !fits.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", fits.status().message()));
  }
  absl::StatusOr<std::string> secret = ReadFile(seed_file);
  if (!secret.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no seed file at ", seed_file, " to judge ", path,
                     " by: judge with the --seed-file its export made"));
  }
  const Sealed sealed =
      Seal(*named, asked.eval_instances, asked.reference_trials,
           std::string(absl::StripAsciiWhitespace(*secret)));
  if (sealed.hash != b["hash"].get<std::string>()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": its benchmark hash ", b["hash"].get<std::string>(), " is not ",
        named->name, "'s at these sizes (", sealed.hash,
        "): the file was changed"));
  }
  if (sealed.fingerprint != doc["seal"].get<std::string>()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " was sealed with another seed file than ", seed_file,
        " (fingerprint ", doc["seal"].get<std::string>(), ", not ",
        sealed.fingerprint, ")"));
  }
  return sealed;
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
                   const std::string& out_file, const std::string& seed_file) {
  absl::StatusOr<Sealed> sealed = BenchSealed(data_dir, seed_file);
  if (!sealed.ok()) return sealed.status();
  const JobConfig& config = sealed->config;
  absl::StatusOr<Evaluator> evaluator =
      Evaluator::Create(config, torch::Device(torch::kCPU));
  if (!evaluator.ok()) return evaluator.status();
  EvalJudge judge(config, evaluator->delta());
  TS_RETURN_IF_ERROR(ForEachEvalChunk(
      config, InputOptions(config), [&](const EvalChunk& c) -> absl::Status {
        for (int64_t b = 0; b < c.input.size(0); ++b) {
          absl::StatusOr<at::Tensor> prediction =
              ReadPrediction(pred_dir, c.first + b, config);
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
  const json verdict = {
      {"benchmark", {{"name", sealed->benchmark.name}, {"hash", sealed->hash}}},
      {"eval", EvalSummaryJson(SummaryOf(*result))},
      {"ratios", ratios},
      {"eval_spread_collapsed", !(spread >= kEvalCollapseSpread)},
      {"eval_spread_threshold", kEvalCollapseSpread},
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
    std::string seed_file = DefaultSecretPath();
    bool debug_targets = false, list = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* exp = app.add_subcommand(
      "export",
      "Write a job config's held-out instances (the ones lab train "
      "evaluates on) as DIR/input-K.csv, and DIR/bench.json");
  AddJobConfigFlags(*exp, &f->sets, &f->config_file);
  exp->add_option("--out-dir", f->out_dir, "Directory to write into")
      ->required();
  exp->add_flag("--debug-targets", f->debug_targets,
                "Draw from the config's public eval_seed and write "
                "DIR/target-K.csv too: for figures and debugging; judge "
                "refuses such an export");
  exp->add_option("--seed-file", f->seed_file,
                  "The secret the held-out instances are drawn from (made "
                  "on first use, mode 0600; keep it where the judged "
                  "program cannot read it)")
      ->capture_default_str();
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
  judge
      ->add_option("--seed-file", f->seed_file,
                   "The seed file the export was sealed with")
      ->capture_default_str();
  CLI::App* list = app.add_subcommand(
      "list", "The named benchmarks: their task, points and least instances");
  return [f, exp, judge, list]() -> absl::Status {
    if (list->parsed()) {
      for (const Benchmark& b : Benchmarks()) {
        std::cout << b.name << "  n_points=" << b.n_points
                  << " eval_instances>=" << b.min_instances
                  << " reference_trials>=" << b.min_reference_trials << "\n";
      }
      return absl::OkStatus();
    }
    if (!exp->parsed() && !judge->parsed()) {
      return absl::InvalidArgumentError(
          "lab bench needs a subcommand: export, judge or list (see lab "
          "bench --help)");
    }
    if (exp->parsed()) {
      absl::StatusOr<JobConfig> config =
          JobConfigFromFlags(f->config_file, f->sets);
      if (!config.ok()) return config.status();
      return Export(*config, f->out_dir, f->seed_file, f->debug_targets);
    }
    return Judge(f->data_dir, f->pred_dir, f->out_file, f->seed_file);
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
