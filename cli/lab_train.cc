// `tailsweep lab train` and `tailsweep lab eval`: one job run locally,
// without any service (science.md sections 5 and 6).

#include <torch/cuda.h>
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/metrics_file.h"
#include "cli/output.h"
#include "core/job_config.h"
#include "core/job_runner.h"
#include "core/number_text.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

volatile std::sig_atomic_t stop_signal = 0;
void OnStopSignal(int) { stop_signal = 1; }

// NaN and infinities have no JSON form: they become null.
json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The job config with typed values: integers, numbers, booleans, names.
json ConfigJson(const JobConfig& config) {
  json doc = json::object();
  for (const auto& [key, value] : JobConfigToKeyValues(config)) {
    uint64_t whole;
    double real;
    if (absl::SimpleAtoi(value, &whole)) {
      doc[key] = whole;
    } else if (absl::SimpleAtod(value, &real)) {
      doc[key] = real;
    } else if (value == "true" || value == "false") {
      doc[key] = value == "true";
    } else {
      doc[key] = value;
    }
  }
  return doc;
}

json EvaluationJson(const EvalResult& e) {
  json doc = {{"ratio_mean", Number(e.ratio_mean)},
              {"ratio_median", Number(e.ratio_median)},
              {"ratio_ci_low", Number(e.ratio_ci_low)},
              {"ratio_ci_high", Number(e.ratio_ci_high)},
              {"spread_ratio", Number(e.spread_ratio)},
              {"delta", Number(e.delta)},
              {"eval_instances", e.ratios.size()}};
  if (e.hill_stat) doc["hill_stat"] = Number(*e.hill_stat);
  return doc;
}

json StepOrNull(int64_t step) { return step >= 0 ? json(step) : json(nullptr); }

absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "cuda" || absl::StartsWith(name, "cuda:")) {
    if (!torch::cuda::is_available()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--device ", name,
                       ": no CUDA device (this build or machine has "
                       "none); allowed here: cpu"));
    }
    try {
      return torch::Device(name);
    } catch (const c10::Error&) {
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device '", name, "'; allowed: cpu, cuda, cuda:N"));
}

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

absl::Status WriteJson(const std::string& path, const json& doc) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << doc.dump(2) << "\n";
    if (!out.flush())
      return absl::InternalError(absl::StrCat(temp, ": write failed"));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", temp, " to ", path));
  }
  return absl::OkStatus();
}

// Forwards metrics to the file and shows progress on stderr.
class ProgressSink : public MetricsSink {
 public:
  ProgressSink(MetricsFile* file, int64_t steps)
      : file_(file), progress_("train", steps) {}
  absl::Status Write(const StepMetrics& m) override {
    progress_.Update(m.step,
                     absl::StrCat("loss ", FormatLoss(m.loss), " spread ",
                                  FormatLoss(m.spread_ratio)));
    return file_->Write(m);
  }

 private:
  static std::string FormatLoss(double v) { return absl::StrFormat("%.4g", v); }
  MetricsFile* file_;
  Progress progress_;
};

RunFn DefineTrain(CLI::App& app) {
  struct Flags {
    std::vector<std::string> sets;
    std::string config_file, out_dir, device = "cpu";
    bool resume = false;
  };
  auto f = std::make_shared<Flags>();
  std::string keys;
  for (const JobKey& k : JobKeys())
    absl::StrAppend(&keys, "\n  ", k.name, ": ", k.help);
  app.add_option("--set", f->sets, "KEY=VALUE, repeatable; keys:" + keys);
  app.add_option("--config", f->config_file,
                 "YAML file of KEY: VALUE lines, applied before --set");
  app.add_option("--out-dir", f->out_dir,
                 "Writes metrics.jsonl, checkpoints/, result.json here")
      ->required();
  app.add_flag("--resume", f->resume,
               "Continue from the newest checkpoint in OUT_DIR/checkpoints");
  app.add_option("--device", f->device, "cpu, cuda or cuda:N")
      ->capture_default_str();
  return [f]() -> absl::Status {
    JobConfig config;
    if (!f->config_file.empty()) {
      if (absl::Status s = ApplyYaml(f->config_file, config); !s.ok()) return s;
    }
    for (const std::string& set : f->sets) {
      std::vector<std::string> kv =
          absl::StrSplit(set, absl::MaxSplits('=', 1));
      if (kv.size() != 2) {
        return absl::InvalidArgumentError(
            absl::StrCat("--set '", set, "': expected KEY=VALUE"));
      }
      if (absl::Status s = SetJobKey(config, kv[0], kv[1]); !s.ok()) return s;
    }
    if (absl::Status s = ValidateJobConfig(config); !s.ok()) return s;
    absl::StatusOr<torch::Device> device = ParseDevice(f->device);
    if (!device.ok()) return device.status();
    const std::filesystem::path dir(f->out_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir / "checkpoints", ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out-dir ", f->out_dir, ": cannot create (", ec.message(), ")"));
    }
    MetricsFile file((dir / "metrics.jsonl").string());
    ProgressSink sink(&file, config.steps);
    std::signal(SIGTERM, OnStopSignal);
    std::signal(SIGINT, OnStopSignal);
    JobRunOptions options;
    options.device = *device;
    options.resume = f->resume;
    options.trainer.sink = &sink;
    options.trainer.checkpoint_dir = (dir / "checkpoints").string();
    options.trainer.stop_requested = [] { return stop_signal != 0; };
    absl::Status open_status;
    options.on_start = [&](int64_t step) { open_status = file.Open(step); };
    absl::StatusOr<JobResult> result = RunJob(config, options);
    if (!open_status.ok()) return open_status;
    if (!result.ok()) return result.status();
    const TrainOutcome& t = result->training;
    json doc = {{"steps_done", t.steps_done},
                {"resumed_from_step", result->start_step},
                {"final_loss", Number(t.final_loss)},
                {"diverged", t.diverged},
                {"diverged_step", StepOrNull(t.diverged_step)},
                {"collapsed", t.collapsed},
                {"collapse_step", StepOrNull(t.collapse_step)},
                {"stopped", t.stopped},
                {"config", ConfigJson(config)}};
    if (result->evaluation) doc.update(EvaluationJson(*result->evaluation));
    if (absl::Status s = WriteJson((dir / "result.json").string(), doc);
        !s.ok()) {
      return s;
    }
    if (t.stopped) {
      std::fprintf(stderr,
                   "train: stopped at step %lld; checkpoint saved, "
                   "continue with --resume\n",
                   static_cast<long long>(t.steps_done));
    }
    return absl::OkStatus();
  };
}

RunFn DefineEval(CLI::App& app) {
  struct Flags {
    std::string checkpoint, device = "cpu";
    int64_t eval_instances = 0;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--checkpoint", f->checkpoint,
                 "A checkpoint written by lab train")
      ->required();
  app.add_option("--eval-instances", f->eval_instances,
                 "Held-out instances (default: the job's eval_instances)");
  app.add_option("--device", f->device, "cpu, cuda or cuda:N")
      ->capture_default_str();
  return [f]() -> absl::Status {
    absl::StatusOr<torch::Device> device = ParseDevice(f->device);
    if (!device.ok()) return device.status();
    if (f->eval_instances < 0 || f->eval_instances == 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--eval-instances must be >= 2 (got ", f->eval_instances, ")"));
    }
    absl::StatusOr<CheckpointEval> eval =
        EvaluateCheckpoint(f->checkpoint, f->eval_instances, *device);
    if (!eval.ok()) return eval.status();
    json doc = EvaluationJson(eval->evaluation);
    doc["step"] = eval->state.step;
    doc["collapsed"] = eval->state.collapse_onset >= 0;
    doc["collapse_step"] = StepOrNull(eval->state.collapse_onset);
    doc["diverged"] = eval->state.diverged_step >= 0;
    doc["config"] = ConfigJson(eval->state.config);
    PrintJson(doc);
    return absl::OkStatus();
  };
}

RunFn DefineDevices(CLI::App&) {
  return []() -> absl::Status {
    // What this build of LibTorch can use: the worker's --devices auto.
    const int64_t cuda = torch::cuda::is_available()
                             ? static_cast<int64_t>(torch::cuda::device_count())
                             : 0;
    json devices = json::array();
    for (int64_t i = 0; i < cuda; ++i)
      devices.push_back(absl::StrCat("cuda:", i));
    if (cuda == 0) devices.push_back("cpu");
    PrintJson({{"cuda_devices", cuda}, {"devices", devices}});
    return absl::OkStatus();
  };
}

}  // namespace

Command DevicesCommand() {
  return {"devices",
          "The devices this build can train on (JSON; the worker's "
          "--devices auto)",
          DefineDevices};
}

Command TrainCommand() {
  return {"train",
          "Train one job locally: metrics.jsonl, checkpoints/, result.json",
          DefineTrain};
}

Command EvalCommand() {
  return {"eval", "Evaluate a checkpoint on held-out instances (JSON)",
          DefineEval};
}

}  // namespace tailsweep::cli
