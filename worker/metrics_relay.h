#ifndef TAILSWEEP_WORKER_METRICS_RELAY_H_
#define TAILSWEEP_WORKER_METRICS_RELAY_H_

// One job's metrics on their way from its metrics.jsonl to the coordinator.
//
// Fill() reads the complete lines appended since the last read: a
// half-written last line waits for its newline; a line that is not a
// metrics line but ends with a newline, or is longer than kMaxLineBytes, is
// skipped with a warning (the first kLoggedSkips of them each, then a count
// now and then) and counted (skipped_lines()). Each line becomes its points:
// a train job's StepPoints (metrics_line.h: the trainer's keys), any other
// job's FlattenMetricsLine (every key; NaN and infinities as they are), and
// the points become numbered batches of at most `max_batch_points` points
// (a line is never split), at most `max_unacked_batches` of them held
// unacknowledged; the rest waits in the file for a later Fill. When the
// file was replaced (another inode: a resumed job rewrites it) or shrank,
// it is read again from the start; points are keyed by (job, name, step),
// so sending them again is harmless.
//
// Batches go out oldest first: front() until PopFront(). A batch that is
// not acknowledged is sent again with the same seq. Not thread-safe.

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "core/schema/metrics_line.h"
#include "worker/job_files.h"

namespace tailsweep {

struct MetricsBatch {
  int64_t seq = 0;  // 1, 2, ... per attempt
  std::vector<MetricPoint> points;
};

class MetricsRelay {
 public:
  // `files` must outlive the relay; `tag` names the job in logs.
  // REQUIRES: max_batch_points >= 1, max_unacked_batches >= 1.
  // `generic`: the file is any program's (FlattenMetricsLine), not the
  // trainer's.
  MetricsRelay(JobFiles* files, std::string path, std::string tag,
               int max_batch_points, int max_unacked_batches,
               bool generic = false);

  static constexpr int64_t kMaxLineBytes = 1 << 20;
  static constexpr int64_t kLoggedSkips = 5;

  // Reads what the bound allows of the new complete lines into batches.
  void Fill();
  // Adds `points` as one more batch (a result's points), past the bound.
  void AddBatch(std::vector<MetricPoint> points);

  bool has_unacked() const { return !unacked_.empty(); }
  // REQUIRES: has_unacked().
  const MetricsBatch& front() const { return unacked_.front(); }
  // The front batch was acknowledged: forget it. REQUIRES: has_unacked().
  void PopFront() { unacked_.pop_front(); }
  // The front batch was too large to be accepted: it becomes two batches
  // of half its points each, with its seq. False (nothing changes) when it
  // holds one point. REQUIRES: has_unacked().
  bool SplitFront();
  // The last Fill read every complete line the file had.
  bool read_to_end() const { return read_to_end_; }
  // Every line read so far is acknowledged, and the last Fill read them all.
  bool idle() const { return unacked_.empty() && read_to_end_; }
  size_t unacked_batches() const { return unacked_.size(); }
  // Calls `watch` (and every other watch given) with every point read from
  // now on (a command job's stop_on rules, the metric its checkpoints are
  // kept by); a file read again from the start shows its points again.
  void Watch(std::function<void(const MetricPoint&)> watch) {
    watches_.push_back(std::move(watch));
  }
  // Lines skipped so far (not metrics lines, or too long).
  int64_t skipped_lines() const { return skipped_; }

 private:
  void Seal(std::vector<MetricPoint>* points);
  void Skipped(int64_t at, absl::string_view why);

  JobFiles* files_;
  const std::string path_, tag_;
  const int max_batch_points_, max_unacked_batches_;
  int64_t offset_ = 0;  // bytes of the file turned into batches
  ino_t inode_ = 0;     // of the file they were read from
  bool read_to_end_ = false;
  const bool generic_;
  std::vector<std::function<void(const MetricPoint&)>> watches_;
  int64_t skipped_ = 0;
  // Inside a line longer than kMaxLineBytes: its bytes are dropped up to
  // its newline.
  bool in_long_line_ = false;
  int64_t next_seq_ = 1;
  std::deque<MetricsBatch> unacked_;  // oldest first
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_METRICS_RELAY_H_
