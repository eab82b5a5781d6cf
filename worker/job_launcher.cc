#include "worker/job_launcher.h"

#include <filesystem>
#include <utility>

#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "process/child_process.h"

namespace tailsweep {
namespace {

class ChildProcessHandle final : public JobHandle {
 public:
  explicit ChildProcessHandle(ChildProcess child) : child_(std::move(child)) {}
  std::optional<int> Poll() override { return child_.Poll(); }
  void Signal(int signal) override { child_.Signal(signal); }

 private:
  ChildProcess child_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<JobHandle>> ChildProcessLauncher::Start(
    const ChildJob& job) {
  absl::StatusOr<ChildCommand> command = ChildCommandFor(job);
  if (!command.ok()) return command.status();
  const std::filesystem::path dir(job.dir);
  for (const auto& [path, text] : command->files) {
    if (absl::Status s = WriteFileAtomic(path, text); !s.ok()) return s;
  }
  ChildProcessOptions options;
  options.search_path = true;
  options.workdir = command->workdir;
  options.process_group = command->process_group;
  absl::StatusOr<AttemptGroup> group = NewAttemptGroup(cgroup_root_);
  if (!group.ok()) return group.status();
  options.attempt = *std::move(group);
  options.end_grace_ms = end_grace_ms_;
  absl::StatusOr<ChildProcess> child = ChildProcess::Start(
      command->argv, command->env, (dir / kStdoutFileName).string(),
      (dir / kStderrFileName).string(), options);
  if (!child.ok()) return child.status();
  return std::make_unique<ChildProcessHandle>(*std::move(child));
}

}  // namespace tailsweep
