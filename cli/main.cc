// tailsweep: the user command line. Subcommands come from one table per
// group (see command.h); `lab` is handed over to tailsweep-lab
// (cli/lab_handover.h), so this executable links no LibTorch.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <optional>

#include "cli/command.h"
#include "cli/connection.h"
#include "cli/lab_handover.h"
#include "cli/render.h"
#include "cli/slurm.h"
#include "core/schema/version.h"

namespace tailsweep::cli {
namespace {

// One line for a parse error.
std::string ParseErrorMessage(const CLI::ParseError& e) {
  return std::string(e.what()) + " (see --help)";
}

int Main(int argc, char** argv) {
  CLI::App app{
      "tailsweep: ablation sweeps of transformers on heavy-tailed measures.\n"
      "`tailsweep lab ...` runs the science locally, without any service."};
  app.require_subcommand(1);
  // Options of the top-level command are accepted after a subcommand too.
  app.fallthrough();
  app.set_version_flag("--version", std::string("tailsweep ") + Version());
  AddConnectionOptions(app);
  int threads = 0;
  app.add_option("--threads", threads,
                 "For `lab`: torch intra-op threads (default: the machine's "
                 "cores)")
      ->check(CLI::PositiveNumber);

  std::map<CLI::App*, RunFn> runners;
  std::map<CLI::App*, std::string> names;
  std::vector<Command> service = SweepCommands();
  for (Command& c : ResultCommands()) service.push_back(std::move(c));
  for (Command& c : CurveCommands()) service.push_back(std::move(c));
  for (Command& c : ControlCommands()) service.push_back(std::move(c));
  for (Command& c : OutputCommands()) service.push_back(std::move(c));
  for (Command& c : ExportCommands()) service.push_back(std::move(c));
  for (Command& c : ReportCommands()) service.push_back(std::move(c));
  for (Command& command : service) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    runners[sub] = command.define(*sub);
    names[sub] = "tailsweep " + command.name;
  }
  CLI::App* slurm = app.add_subcommand(
      "slurm",
      "Run a sweep on a Slurm cluster: `slurm up SPEC --workers K`, `slurm "
      "down RUN_DIR`");
  slurm->require_subcommand(1);
  for (Command& command : SlurmCommands()) {
    CLI::App* sub = slurm->add_subcommand(command.name, command.help);
    runners[sub] = command.define(*sub);
    names[sub] = "tailsweep slurm " + command.name;
  }
  // Listed in --help; the command line goes to python3 -m tailsweep.optimize
  // before any parsing here.
  app.add_subcommand(
      "optimize",
      "Run an Optuna study (method: tpe) whose trials are a sweep's jobs "
      "(`tailsweep optimize --help`; runs python3 -m tailsweep.optimize)");
  // Listed in --help; the command line goes to tailsweep-lab before any
  // parsing here.
  app.add_subcommand(
      "lab",
      "Run the science locally: sampling, distances, references, tails, "
      "training (`tailsweep lab --help`; runs tailsweep-lab)");
  const std::optional<std::vector<std::string>> lab_args = LabArguments(
      std::vector<std::string>(argv + 1, argv + argc),
      [&app](const std::string& word) {
        const CLI::Option* option = app.get_option_no_throw(word);
        return option != nullptr && option->get_items_expected_min() > 0;
      });
  const std::optional<std::vector<std::string>> optimize_args =
      OptimizeArguments(
          std::vector<std::string>(argv + 1, argv + argc),
          [&app](const std::string& word) {
            const CLI::Option* option = app.get_option_no_throw(word);
            return option != nullptr && option->get_items_expected_min() > 0;
          });
  if (optimize_args) {
    const absl::Status status = ExecOptimize(*optimize_args);
    std::fprintf(stderr, "tailsweep optimize: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  if (lab_args) {
    const std::string lab = LabExecutable();
    const absl::Status status = ExecLab(lab, *lab_args);
    std::fprintf(stderr, "tailsweep lab: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "tailsweep: %s\n",
                 EscapeControl(ParseErrorMessage(e)).c_str());
    return 2;
  }
  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    absl::Status status;
    try {
      status = run();
    } catch (const std::exception& e) {
      status = absl::InternalError(e.what());
    }
    return FinishCommand(names[sub], status);
  }
  return 2;
}

}  // namespace
}  // namespace tailsweep::cli

int main(int argc, char** argv) { return tailsweep::cli::Main(argc, argv); }
