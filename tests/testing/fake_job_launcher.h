#ifndef TAILSWEEP_TESTS_TESTING_FAKE_JOB_LAUNCHER_H_
#define TAILSWEEP_TESTS_TESTING_FAKE_JOB_LAUNCHER_H_

// A JobLauncher (worker/job_launcher.h) whose jobs run on a FakeClock and
// write into their job directory exactly what core/schema/job_protocol.h
// says a `tailsweep lab train` child writes: metrics.jsonl lines
// (MetricsLine, two attention layers: 9 points a line), checkpoints/
// step-NNNNNNNN.pt, result.json (TrainResultJson, with an evaluation: 6
// result points) and stderr.txt.
//
// Jobs misbehave by name, the job param `fake`:
//   (absent)      well-behaved: a line every `step_ms` (default 100) for
//                 `steps` steps (default 4), a checkpoint after every
//                 `checkpoint_every` steps (default 2; 0: none), then the
//                 result and exit 0. SIGTERM: a checkpoint of the last step,
//                 a stopped result, exit 0.
//   crash         logs step 1, then writes a traceback to stderr and exits 1
//                 at its second step.
//   garbled-crash as crash, but its stderr is bytes that are not UTF-8
//                 (a stray 0xff, a character cut short).
//   hang          writes nothing and never exits; ignores SIGTERM.
//   slow-metrics  each line's newline comes half a step after the line.
//   torn-line     its second line is torn (not JSON, with a newline).
//   no-result     exits 0 without writing result.json.
//   no-handler    SIGTERM kills it at once (exit 143), as it does a child
//                 that has not installed its handler yet.
//   killed-by-term  dies of a SIGTERM from outside (exit 143) at its first
//                 step, before writing anything (e.g. a `lab tails` child).
// Param `nan_at=K`: line K's loss is NaN and its grad_norm +inf.
// Other params are ignored. SIGKILL ends any job at once (exit 137).
//
// Launcher events are appended to `events` as "start JOB", "term JOB" and
// "kill JOB" (JOB: the job directory's name, i.e. the job id).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/testing/fake_clock.h"
#include "worker/job_launcher.h"

namespace tailsweep {

class FakeJobLauncher final : public JobLauncher {
 public:
  FakeJobLauncher(FakeClock* clock, std::vector<std::string>* events);
  absl::StatusOr<std::unique_ptr<JobHandle>> Start(
      const ChildJob& job) override;

  class Job;

  // Every job started, as the worker described it.
  const std::vector<ChildJob>& started() const { return started_; }

 private:
  std::vector<ChildJob> started_;
  FakeClock* clock_;
  std::vector<std::string>* events_;
  std::vector<std::shared_ptr<Job>> jobs_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_TESTING_FAKE_JOB_LAUNCHER_H_
