// tailsweep: the user command line. Subcommands come from one table per
// group (see command.h); LibTorch exceptions are caught here, at the one
// boundary between the science and the process.

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <thread>

#include "cli/command.h"
#include "cli/connection.h"
#include "cli/render.h"
#include "cli/slurm.h"
#include "core/schema/version.h"
#include "core/threads.h"

namespace tailsweep::cli {
namespace {

// One line for a parse error; a missing or unknown subcommand lists the
// allowed ones.
std::string ParseErrorMessage(const CLI::ParseError& e,
                              const std::vector<Command>& commands) {
  std::string message = e.what();
  if (message.find("subcommand") == std::string::npos) {
    return message + " (see --help)";
  }
  std::string allowed;
  for (const Command& c : commands) {
    allowed += (allowed.empty() ? "" : ", ") + c.name;
  }
  return message + "; lab commands: " + allowed + " (see --help)";
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
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--threads", threads,
                 "Torch intra-op threads (default: the machine's cores)")
      ->check(CLI::PositiveNumber);

  std::map<CLI::App*, RunFn> runners;
  std::map<CLI::App*, std::string> names;
  std::vector<Command> service = SweepCommands();
  for (Command& c : ResultCommands()) service.push_back(std::move(c));
  for (Command& c : CurveCommands()) service.push_back(std::move(c));
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
  CLI::App* lab = app.add_subcommand(
      "lab",
      "Run the science locally: sampling, distances, references, "
      "tails, training");
  lab->require_subcommand(1);
  std::vector<Command> commands = LabCommands();
  for (Command& command : commands) {
    CLI::App* sub = lab->add_subcommand(command.name, command.help);
    runners[sub] = command.define(*sub);
    names[sub] = "tailsweep lab " + command.name;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "tailsweep: %s\n",
                 EscapeControl(ParseErrorMessage(e, commands)).c_str());
    return 2;
  }
  SetComputeThreads(threads);
  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    const std::string& name = names[sub];
    absl::Status status;
    try {
      status = run();
    } catch (const c10::Error& e) {
      status = absl::InternalError(e.what_without_backtrace());
    } catch (const std::exception& e) {
      status = absl::InternalError(e.what());
    }
    if (!status.ok()) {
      // Messages quote what others sent (spec keys, job errors): escaped.
      std::fprintf(stderr, "%s: %s\n", name.c_str(),
                   EscapeControl(status.message(), Lines::kKeep).c_str());
    }
    return ExitCode(status);
  }
  return 2;
}

}  // namespace
}  // namespace tailsweep::cli

int main(int argc, char** argv) { return tailsweep::cli::Main(argc, argv); }
