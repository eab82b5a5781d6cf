// `tailsweep lab sample | instance | energy | reference`: the measures of
// science.md sections 2-4, run locally.

#include <ATen/ATen.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/lab_config.h"
#include "cli/output.h"
#include "core/energy_distance.h"
#include "core/instance.h"
#include "core/marginal.h"
#include "core/number_text.h"
#include "core/point_csv.h"
#include "core/reference.h"
#include "core/sampling.h"

namespace tailsweep::cli {

Command TailsCommand();          // lab_tails.cc
Command TrainCommand();          // lab_train.cc
Command EvalCommand();           // lab_train.cc
Command DevicesCommand();        // lab_train.cc
Command BenchCommand();          // lab_bench.cc
Command ConcentrationCommand();  // lab_concentration.cc

namespace {

using nlohmann::json;

absl::Status CheckPoints(int64_t n) {
  if (n >= 2) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--n must be an integer >= 2 (got ", n, ")"));
}

struct TaskFlags {
  std::string op = "sheared_swap";
  std::string marginal = "mirrored_pareto";
};

void AddTaskFlags(CLI::App& app, TaskFlags* flags) {
  app.add_option("--operator", flags->op, "sheared_swap or matrix_inverse")
      ->capture_default_str();
  app.add_option("--marginal", flags->marginal, "mirrored_pareto or gaussian")
      ->capture_default_str();
}

absl::StatusOr<Task> ParseTask(const TaskFlags& flags) {
  absl::StatusOr<OperatorKind> op = ParseOperator(flags.op);
  if (!op.ok()) return op.status();
  absl::StatusOr<MarginalFamily> family = ParseMarginalFamily(flags.marginal);
  if (!family.ok()) return family.status();
  const Task task{*op, *family};
  if (!IsIdentifiable(task)) {
    std::fprintf(stderr,
                 "note: gaussian matrix_inverse is unidentifiable; sweep grids "
                 "exclude it\n");
  }
  return task;
}

json MatrixJson(const Mat2& a) { return {{a[0], a[1]}, {a[2], a[3]}}; }

json MarginalJson(const Marginal& m) {
  if (m.family == MarginalFamily::kGaussian) {
    return {{"family", "gaussian"}, {"mean", m.mean}, {"std", m.std}};
  }
  return {
      {"family", "mirrored_pareto"}, {"index", m.index}, {"scale", m.scale}};
}

json InstanceJson(const Instance& inst) {
  json doc = {
      {"operator", std::string(OperatorName(inst.task.op))},
      {"marginal", std::string(MarginalFamilyName(inst.task.family))},
      {"A_in", MatrixJson(inst.a_in)},
      {"A_out", MatrixJson(inst.a_out)},
      {"marginals", {MarginalJson(inst.axes[0]), MarginalJson(inst.axes[1])}}};
  if (inst.task.op == OperatorKind::kShearedSwap) {
    doc["shears"] = {inst.op_params[0], inst.op_params[1]};
  } else {
    doc["B"] = MatrixJson(inst.op_params);
  }
  return doc;
}

at::Tensor ToTensor(const PointSet& p) {
  return at::tensor(p.values, at::kDouble).view({p.rows, p.dims});
}

Command SampleCommand() {
  return {
      "sample", "Draw N samples of one marginal, one per line",
      [](CLI::App& app) -> RunFn {
        struct Flags {
          std::string marginal = "mirrored_pareto";
          double index = 1.5, scale = 1.0, mean = 0.0, std = 1.0;
          int64_t n = 1000;
          uint64_t seed = 0;
          Format format = Format::kText;
        };
        auto f = std::make_shared<Flags>();
        app.add_option("--marginal", f->marginal, "mirrored_pareto or gaussian")
            ->capture_default_str();
        app.add_option("--index", f->index, "Mirrored Pareto tail index a > 0")
            ->capture_default_str();
        app.add_option("--scale", f->scale, "Mirrored Pareto scale lam > 0")
            ->capture_default_str();
        app.add_option("--mean", f->mean, "Gaussian mean")
            ->capture_default_str();
        app.add_option("--std", f->std, "Gaussian standard deviation > 0")
            ->capture_default_str();
        app.add_option("--n", f->n, "Number of samples (>= 2)")
            ->capture_default_str();
        app.add_option("--seed", f->seed, "Random seed")->capture_default_str();
        AddFormatOption(app, &f->format);
        return [f, &app]() -> absl::Status {
          absl::StatusOr<MarginalFamily> family =
              ParseMarginalFamily(f->marginal);
          if (!family.ok()) return family.status();
          const bool pareto = *family == MarginalFamily::kMirroredPareto;
          const std::pair<const char*, bool> family_flags[] = {
              {"--index", true},
              {"--scale", true},
              {"--mean", false},
              {"--std", false}};
          for (const auto& [flag, pareto_flag] : family_flags) {
            if (app.count(flag) > 0 && pareto_flag != pareto) {
              return absl::InvalidArgumentError(absl::StrCat(
                  flag, " does not apply to --marginal ", f->marginal,
                  pareto ? " (use --index, --scale)" : " (use --mean, --std)"));
            }
          }
          const Marginal m = pareto
                                 ? Marginal::MirroredPareto(f->index, f->scale)
                                 : Marginal::Gaussian(f->mean, f->std);
          if (absl::Status s = m.Validate(); !s.ok()) {
            return absl::InvalidArgumentError(absl::StrCat("--", s.message()));
          }
          if (absl::Status s = CheckPoints(f->n); !s.ok()) return s;
          at::Generator gen = MakeCpuGenerator(f->seed);
          const at::Tensor s = SampleMarginal(m, f->n, gen);
          const double* v = s.data_ptr<double>();
          if (f->format == Format::kJson) {
            PrintJson({{"marginal", MarginalJson(m)},
                       {"seed", f->seed},
                       {"samples", std::vector<double>(v, v + f->n)}});
            return absl::OkStatus();
          }
          std::string out;
          for (int64_t i = 0; i < f->n; ++i) {
            out += FormatDouble(v[i]);
            out += '\n';
          }
          std::cout << out;
          return absl::OkStatus();
        };
      }};
}

Command InstanceCommand() {
  return {
      "instance",
      "Draw one operator instance: DIR/input.csv, DIR/target.csv, "
      "DIR/params.json",
      [](CLI::App& app) -> RunFn {
        struct Flags {
          TaskFlags task;
          int64_t n = 1024;
          uint64_t seed = 0;
          std::string out_dir;
          Format format = Format::kText;
        };
        auto f = std::make_shared<Flags>();
        AddTaskFlags(app, &f->task);
        app.add_option("--n", f->n, "Points per ensemble (>= 2)")
            ->capture_default_str();
        app.add_option("--seed", f->seed, "Random seed")->capture_default_str();
        app.add_option("--out-dir", f->out_dir, "Directory to write into")
            ->required();
        AddFormatOption(app, &f->format);
        return [f]() -> absl::Status {
          absl::StatusOr<Task> task = ParseTask(f->task);
          if (!task.ok()) return task.status();
          if (absl::Status s = CheckPoints(f->n); !s.ok()) return s;
          std::error_code ec;
          std::filesystem::create_directories(f->out_dir, ec);
          if (ec) {
            return absl::InvalidArgumentError(
                absl::StrCat("--out-dir ", f->out_dir, ": cannot create (",
                             ec.message(), ")"));
          }
          TaskSampler sampler(*task, f->seed);
          const EnsembleBatch batch =
              sampler.Next(1, f->n, at::TensorOptions().dtype(at::kDouble));
          const std::filesystem::path dir(f->out_dir);
          for (const auto& [name, points] :
               {std::pair{"input.csv", batch.input[0]},
                std::pair{"target.csv", batch.target[0]}}) {
            absl::Status s =
                WritePointsCsv((dir / name).string(), PointSetOf(points));
            if (!s.ok()) return s;
          }
          json params = InstanceJson(batch.instances[0]);
          params["seed"] = f->seed;
          params["n"] = f->n;
          std::ofstream params_file((dir / "params.json").string());
          params_file << params.dump(2) << "\n";
          if (!params_file.flush()) {
            return absl::InternalError(
                absl::StrCat((dir / "params.json").string(), ": write failed"));
          }
          if (f->format == Format::kJson) {
            PrintJson(params);
          } else {
            std::cout << "wrote " << (dir / "input.csv").string() << ", "
                      << (dir / "target.csv").string() << ", "
                      << (dir / "params.json").string() << "\n";
          }
          return absl::OkStatus();
        };
      }};
}

Command EnergyCommand() {
  return {"energy",
          "Energy distance between two point sets in CSV files (double "
          "precision)",
          [](CLI::App& app) -> RunFn {
            struct Flags {
              std::string a, b;
              int64_t tile = 256;
              Format format = Format::kText;
            };
            auto f = std::make_shared<Flags>();
            app.add_option("A", f->a, "First point set (CSV, one point a row)")
                ->required();
            app.add_option("B", f->b, "Second point set (same columns)")
                ->required();
            app.add_option("--tile", f->tile, "Rows per block (>= 1)")
                ->capture_default_str();
            AddFormatOption(app, &f->format);
            return [f]() -> absl::Status {
              absl::StatusOr<PointSet> a = ReadPointsCsv(f->a);
              if (!a.ok()) return a.status();
              absl::StatusOr<PointSet> b = ReadPointsCsv(f->b);
              if (!b.ok()) return b.status();
              if (a->dims != b->dims) {
                return absl::InvalidArgumentError(absl::StrCat(
                    f->a, " has ", a->dims, " columns but ", f->b, " has ",
                    b->dims, "; both point sets need the same dimension"));
              }
              absl::StatusOr<double> ed =
                  EnergyDistance(ToTensor(*a), ToTensor(*b),
                                 {f->tile, EnergyOptions::Backend::kAuto});
              if (!ed.ok()) return ed.status();
              if (f->format == Format::kJson) {
                PrintJson({{"energy_distance", *ed},
                           {"n", a->rows},
                           {"m", b->rows},
                           {"dims", a->dims}});
              } else {
                std::cout << FormatDouble(*ed) << "\n";
              }
              return absl::OkStatus();
            };
          }};
}

Command ReferenceCommand() {
  return {
      "reference",
      "Sampling reference delta: ED between two independent target "
      "ensembles, mean and median over trials",
      [](CLI::App& app) -> RunFn {
        struct Flags {
          TaskFlags task;
          int64_t n = 1024;
          int64_t trials = 32;
          uint64_t seed = 0;
          Format format = Format::kText;
        };
        auto f = std::make_shared<Flags>();
        AddTaskFlags(app, &f->task);
        app.add_option("--n", f->n, "Points per ensemble (>= 2)")
            ->capture_default_str();
        app.add_option("--trials", f->trials, "Trials (>= 1)")
            ->capture_default_str();
        app.add_option("--seed", f->seed, "Random seed")->capture_default_str();
        AddFormatOption(app, &f->format);
        return [f]() -> absl::Status {
          absl::StatusOr<Task> task = ParseTask(f->task);
          if (!task.ok()) return task.status();
          if (absl::Status s = CheckPoints(f->n); !s.ok()) return s;
          if (f->trials < 1) {
            return absl::InvalidArgumentError(absl::StrCat(
                "--trials must be an integer >= 1 (got ", f->trials, ")"));
          }
          Progress progress("reference", f->trials);
          ReferenceOptions options;
          options.n = f->n;
          options.trials = f->trials;
          options.seed = f->seed;
          options.progress = [&](int64_t done, int64_t) {
            progress.Update(done);
          };
          absl::StatusOr<Reference> ref = SamplingReference(*task, options);
          if (!ref.ok()) return ref.status();
          if (f->format == Format::kJson) {
            PrintJson({{"operator", f->task.op},
                       {"marginal", f->task.marginal},
                       {"n", f->n},
                       {"trials", f->trials},
                       {"seed", f->seed},
                       {"mean", ref->mean},
                       {"median", ref->median}});
          } else {
            std::cout << "mean " << FormatDouble(ref->mean) << "\nmedian "
                      << FormatDouble(ref->median) << "\n";
          }
          return absl::OkStatus();
        };
      }};
}

}  // namespace

std::vector<Command> LabCommands() {
  return {SampleCommand(),    InstanceCommand(), EnergyCommand(),
          ReferenceCommand(), TailsCommand(),    TrainCommand(),
          EvalCommand(),      BenchCommand(),    ConcentrationCommand(),
          DevicesCommand()};
}

}  // namespace tailsweep::cli
