#include "core/schema/job_protocol.h"

#include <csignal>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/schema/disk_space.h"
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
  // The shell's and exec's codes for a program that cannot be run, and
  // input the job refused, fail the same way every time.
  const char* permanent =
      exit_code == 126 || exit_code == 127 ? " (the program could not be run)"
      : exit_code == kExitBadInput && bad_input_code ? " (input refused)"
                                                     : nullptr;
  out.permanent = permanent != nullptr;
  out.error = exit_code > 128
                  ? absl::StrCat("killed by signal ", exit_code - 128)
                  : absl::StrCat("exit code ", exit_code,
                                 permanent != nullptr ? permanent : "");
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
    out.permanent = absl::IsResourceExhausted(checked);  // over a limit
    return out;
  }
  out.outcome = JobOutcome::kDone;
  out.result_json = *std::move(text);
  return out;
}

std::string ResultTooLarge(int64_t bytes) {
  return absl::StrCat("the result file is ", Megabytes(bytes),
                      ", over the 1 MiB a result may hold; write large "
                      "outputs as files the spec's `artifacts:` names");
}

absl::StatusOr<std::string> ReadResultFile(const std::string& dir) {
  std::error_code ec;
  const uintmax_t size =
      std::filesystem::file_size(JobPath(dir, kResultFileName), ec);
  if (!ec && size > static_cast<uintmax_t>(kMaxResultFileBytes)) {
    // Not read: it could be any size.
    return absl::ResourceExhaustedError(
        ResultTooLarge(static_cast<int64_t>(size)));
  }
  absl::StatusOr<std::string> text = ReadFile(JobPath(dir, kResultFileName));
  if (!text.ok()) {
    return absl::Status(
        text.status().code(),
        absl::StrCat("exit code 0 but no result: ", text.status().message()));
  }
  return text;
}

}  // namespace tailsweep
