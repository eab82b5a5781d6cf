#include "core/schema/job_protocol.h"

#include <csignal>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"

namespace tailsweep {
std::string JobPath(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

ChildCommand LabChildCommand(const ChildJob& job) {
  ChildCommand out;
  out.argv = {job.lab_bin, "--threads", absl::StrCat(job.threads), "lab"};
  out.env = {absl::StrCat("OMP_NUM_THREADS=", job.threads)};
  return out;
}

std::optional<FinishedJob> ReadExit(int exit_code, bool bad_input_code) {
  FinishedJob out;
  // 128 + S: killed by signal S (process/child_process.h).
  // SIGUSR1 too: Slurm's drain signals every process of the step, and a
  // child that has not installed its handler yet dies of it.
  if (exit_code == kExitStopped || exit_code == 128 + SIGTERM ||
      exit_code == 128 + SIGUSR1) {
    out.outcome = JobOutcome::kStopped;
    out.error = exit_code == kExitStopped    ? "stopped on SIGTERM"
                : exit_code == 128 + SIGTERM ? "killed by SIGTERM"
                                             : "killed by SIGUSR1";
    return out;
  }
  if (exit_code == kExitOk) return std::nullopt;
  out.error = exit_code > 128
                  ? absl::StrCat("killed by signal ", exit_code - 128)
                  : absl::StrCat("exit code ", exit_code,
                                 exit_code == kExitBadInput && bad_input_code
                                     ? " (input refused)"
                                     : "");
  return out;
}

FinishedJob ReadDoneResult(const std::string& dir, int exit_code,
                           bool bad_input_code,
                           absl::Status (*check)(absl::string_view result)) {
  if (std::optional<FinishedJob> ended = ReadExit(exit_code, bad_input_code)) {
    return *ended;
  }
  FinishedJob out;
  absl::StatusOr<std::string> text = ReadResultFile(dir);
  absl::Status checked =
      text.ok() && check != nullptr ? check(*text) : text.status();
  if (!checked.ok()) {
    out.error = std::string(checked.message());
    return out;
  }
  out.outcome = JobOutcome::kDone;
  out.result_json = *std::move(text);
  return out;
}

absl::StatusOr<std::string> ReadResultFile(const std::string& dir) {
  absl::StatusOr<std::string> text = ReadFile(JobPath(dir, kResultFileName));
  if (!text.ok()) {
    return absl::Status(
        text.status().code(),
        absl::StrCat("exit code 0 but no result: ", text.status().message()));
  }
  return text;
}

}  // namespace tailsweep
