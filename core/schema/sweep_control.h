#ifndef TAILSWEEP_CORE_SCHEMA_SWEEP_CONTROL_H_
#define TAILSWEEP_CORE_SCHEMA_SWEEP_CONTROL_H_

// How a sweep shares a cluster and when it gives up: the spec's control
// keys (sweeps/README.md, "Sweep control"). None changes a job's identity.
//   priority: 10          # -1000..1000 (default 0): leased first when higher
//   max_running: 8        # at most this many of its jobs leased at once
//   timeout_s: 3600       # a job running longer is stopped (SIGTERM, its
//                         # stop grace, SIGKILL) and the attempt fails
//   max_failures: 3       # after this many failed attempts, its queued jobs
//                         # are held until `tailsweep resume`
//   tags: {team: vision}  # key=value labels
//   notes: "why this sweep"
//   stop: {rule: asha, metric: loss, goal: minimize, min_steps: 100,
//          reduction: 3}  # asynchronous successive halving
// A key the spec leaves out is not set (the sweep keeps what it has: a
// resubmit changes only what the spec names); the commands `tailsweep
// priority`, `pause`, `tag` and `note` change them on a live sweep.
// Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

inline constexpr int64_t kMinPriority = -1000;
inline constexpr int64_t kMaxPriority = 1000;

// ASHA (Li et al., 2020) judged by the coordinator on the sweep's stored
// metric points: rungs at min_steps * reduction^k steps; a run whose
// `metric` at a rung (its last point at or before the rung's step) is not
// in the best 1/reduction of the runs that reached that rung so far is
// stopped early (its result done, with early_stop "asha").
struct AshaRule {
  std::string metric;
  bool maximize = false;
  int64_t min_steps = 0;
  int64_t reduction = 3;
};

struct SweepControl {
  std::optional<int64_t> priority;
  std::optional<int64_t> max_running;
  std::optional<double> timeout_s;
  std::optional<int64_t> max_failures;
  std::vector<std::pair<std::string, std::string>> tags;  // in spec order
  std::optional<std::string> notes;
  std::optional<AshaRule> asha;
};

// OK for a tag's key (1-64 letters, digits, '-', '_', '.', ':', '/') and
// value (at most 256 characters, no control characters); else why not.
absl::Status CheckTag(absl::string_view key, absl::string_view value);
// OK for a priority in [kMinPriority, kMaxPriority]; else why not.
absl::Status CheckPriority(int64_t priority);
// Notes hold at most this many bytes.
inline constexpr size_t kMaxNotesBytes = 10000;

// The ASHA rule as JSON ({"rule":"asha","metric":...}) and back: how the
// store keeps it. Empty text: none.
std::string AshaJson(const std::optional<AshaRule>& rule);
std::optional<AshaRule> AshaFromJson(absl::string_view json);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SWEEP_CONTROL_H_
