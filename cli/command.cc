#include "cli/command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "cli/render.h"

namespace tailsweep::cli {

int ExitCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      return 2;
    default:
      return 1;
  }
}

int FinishCommand(const std::string& name, const absl::Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(),
                 EscapeControl(status.message(), Lines::kKeep).c_str());
  }
  return ExitCode(status);
}

void AddFormatOption(CLI::App& app, Format* format) {
  const std::map<std::string, Format> names = {{"text", Format::kText},
                                               {"json", Format::kJson}};
  app.add_option("--format", *format, "Output format: text or json")
      ->transform(CLI::CheckedTransformer(names, CLI::ignore_case))
      ->default_str("text");
}

}  // namespace tailsweep::cli
