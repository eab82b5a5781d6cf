// tailsweep-lab: the science executable, the one that links LibTorch. It
// runs `lab` commands, and takes the command line that `tailsweep` hands
// over for `tailsweep lab ...` and that a worker gives its child jobs
// (core/schema/job_protocol.h):
//
//   tailsweep-lab [--threads N] lab COMMAND [OPTIONS]
//
// LibTorch exceptions are caught here, at the one boundary between the
// science and the process.

#include <c10/util/Exception.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <thread>

#include "cli/command.h"
#include "cli/render.h"
#include "core/schema/blas_core.h"
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
      "tailsweep-lab: the science of tailsweep, run locally without any "
      "service (`tailsweep lab ...` runs it; so do workers, for each job).",
      "tailsweep-lab"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version", std::string("tailsweep-lab ") + Version());
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--threads", threads,
                 "Torch intra-op threads (default: the machine's cores)")
      ->check(CLI::PositiveNumber);
  CLI::App* lab = app.add_subcommand(
      "lab",
      "Run the science locally: sampling, distances, references, "
      "tails, training");
  lab->require_subcommand(1);
  std::map<CLI::App*, RunFn> runners;
  std::vector<Command> commands = LabCommands();
  for (Command& command : commands) {
    CLI::App* sub = lab->add_subcommand(command.name, command.help);
    runners[sub] = command.define(*sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "tailsweep lab: %s\n",
                 EscapeControl(ParseErrorMessage(e, commands)).c_str());
    return 2;
  }
  SetComputeThreads(threads);
  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    absl::Status status;
    try {
      status = run();
    } catch (const c10::Error& e) {
      status = absl::InternalError(e.what_without_backtrace());
    } catch (const std::exception& e) {
      status = absl::InternalError(e.what());
    }
    return FinishCommand("tailsweep lab " + sub->get_name(), status);
  }
  return 2;
}

}  // namespace
}  // namespace tailsweep::cli

int main(int argc, char** argv) {
  // Before anything computes: the machine's own matrix kernels.
  tailsweep::CorrectBlasCoreOrReexec(argv);
  return tailsweep::cli::Main(argc, argv);
}
