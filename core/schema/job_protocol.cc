#include "core/schema/job_protocol.h"

#include <csignal>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/job_config.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/command_job.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kind.h"
#include "core/schema/job_result.h"
#include "core/tails_job.h"

namespace tailsweep {
std::string JobPath(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

absl::StatusOr<ChildCommand> ChildCommandFor(const ChildJob& job) {
  ChildCommand out;
  out.argv = {job.lab_bin, "--threads", absl::StrCat(job.threads), "lab"};
  out.env = {absl::StrCat("OMP_NUM_THREADS=", job.threads)};
  const std::optional<JobKind> kind = ParseJobKind(job.kind);
  if (!kind.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job kind '", job.kind, "'; allowed: ", JobKindNames()));
  }
  if (*kind == JobKind::kCommand) return CommandChildFor(job);
  // The child's subcommand is the kind's name (`tailsweep lab tails`).
  const std::string subcommand(JobKindName(*kind));
  if (*kind == JobKind::kTails) {
    TailsJobConfig c;
    for (const auto& [key, value] : job.params) {
      if (absl::Status s = SetTailsJobKey(c, key, value); !s.ok()) return s;
    }
    const std::vector<std::pair<std::string, std::string>> kv =
        TailsJobToKeyValues(c);
    auto value = [&](absl::string_view key) {
      for (const auto& [k, v] : kv) {
        if (k == key) return v;
      }
      return std::string();
    };
    out.argv.insert(
        out.argv.end(),
        {subcommand, "--seams", value("seam"), "--budgets", value("n"),
         "--index-grid", value("indices"), "--trials", value("trials"),
         "--seed", value("seed"), "--reference-index", value("reference_index"),
         "--out-dir", job.dir});
    return out;
  }
  JobConfig config;
  out.argv.push_back(subcommand);
  for (const auto& [key, value] : job.params) {
    if (absl::Status s = SetJobKey(config, key, value); !s.ok()) return s;
    out.argv.push_back("--set");
    out.argv.push_back(absl::StrCat(key, "=", value));
  }
  const bool cuda = absl::StartsWith(job.device, "cuda");
  if (absl::StartsWith(job.device, "cuda:")) {
    out.env.push_back(
        absl::StrCat("CUDA_VISIBLE_DEVICES=", job.visible_devices.empty()
                                                  ? job.device.substr(5)
                                                  : job.visible_devices));
  }
  out.argv.insert(out.argv.end(),
                  {"--out-dir", job.dir, "--device", cuda ? "cuda" : "cpu"});
  if (NewestCheckpointIn(JobPath(job.dir, kCheckpointDirName)).ok()) {
    out.argv.push_back("--resume");
  }
  return out;
}

FinishedJob ReadFinishedJob(const std::string& kind, const std::string& dir,
                            int exit_code) {
  FinishedJob out;
  const bool command = ParseJobKind(kind) == JobKind::kCommand;
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
  if (exit_code != kExitOk) {
    out.error = exit_code > 128
                    ? absl::StrCat("killed by signal ", exit_code - 128)
                    : absl::StrCat("exit code ", exit_code,
                                   exit_code == kExitBadInput && !command
                                       ? " (input refused)"
                                       : "");
    return out;
  }
  if (command) {
    // The result file is the child's option: null when it wrote none (or
    // wrote something that is not JSON, which the worker logs).
    absl::StatusOr<std::string> text = ReadFile(JobPath(dir, kResultFileName));
    out.outcome = JobOutcome::kDone;
    out.result_json = text.ok() ? *text : "null";
    return out;
  }
  absl::StatusOr<std::string> text = ReadFile(JobPath(dir, kResultFileName));
  if (!text.ok()) {
    out.error =
        absl::StrCat("exit code 0 but no result: ", text.status().message());
    return out;
  }
  if (ParseJobKind(kind) == JobKind::kTails) {
    absl::StatusOr<std::vector<TailsRow>> rows = ParseTailsResult(*text);
    if (!rows.ok()) {
      out.error = std::string(rows.status().message());
      return out;
    }
    out.outcome = JobOutcome::kDone;
  } else {
    absl::StatusOr<TrainResult> result = ParseTrainResult(*text);
    if (!result.ok()) {
      out.error = std::string(result.status().message());
      return out;
    }
    out.outcome = result->stopped ? JobOutcome::kStopped : JobOutcome::kDone;
    out.lease_ran_out = result->stopped && result->lease_ran_out;
  }
  out.result_json = *std::move(text);
  return out;
}

}  // namespace tailsweep
