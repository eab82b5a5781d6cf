#ifndef TAILSWEEP_CLI_COMMAND_H_
#define TAILSWEEP_CLI_COMMAND_H_

// The `tailsweep` command table: each subcommand is {name, help, define},
// where define() adds the subcommand's options to its CLI11 app and returns
// the function that runs it once the command line has parsed.
//
// Exit codes: 0 success; 2 bad input (InvalidArgument, NotFound,
// OutOfRange, FailedPrecondition, or a command-line parse error), with one
// line on stderr naming the problem; 1 anything else.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/cli_app.h"

namespace tailsweep::cli {

using RunFn = std::function<absl::Status()>;

struct Command {
  std::string name;
  std::string help;
  std::function<RunFn(CLI::App&)> define;
};

// The `lab` subcommands (lab_commands.cc, lab_tails.cc, lab_train.cc).
std::vector<Command> LabCommands();
// The service subcommands: submit, status, watch, cancel, resume, workers
// (sweep_commands.cc), jobs and results (result_commands.cc), curves and
// (curve_commands.cc).
std::vector<Command> SweepCommands();
std::vector<Command> ResultCommands();
std::vector<Command> CurveCommands();
// priority, pause, unpause, tag, note, rm (control_commands.cc).
std::vector<Command> ControlCommands();
// checkpoint, logs, artifacts (output_commands.cc): what a run made, off
// the coordinator.
std::vector<Command> OutputCommands();
// export and snapshot (export_command.cc).
std::vector<Command> ExportCommands();
// report (report_command.cc).
std::vector<Command> ReportCommands();

// Process exit code for a command's status.
int ExitCode(const absl::Status& status);

// Ends a command: a failed status goes to stderr as one "NAME: message"
// line (escaped: messages quote what others sent), then its exit code.
int FinishCommand(const std::string& name, const absl::Status& status);

// Options shared by the reading commands.
enum class Format { kText, kJson };
void AddFormatOption(CLI::App& app, Format* format);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_COMMAND_H_
