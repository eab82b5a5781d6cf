#ifndef TAILSWEEP_COORDINATOR_BATCH_WRITER_H_
#define TAILSWEEP_COORDINATOR_BATCH_WRITER_H_

// The store's one writer: a thread that owns the write connection and runs
// every mutation. Mutations that arrive while a transaction is being
// committed wait and then share the next one (one COMMIT, one fsync for the
// lot), each inside its own SAVEPOINT, so a mutation that fails rolls back
// its own changes only. Run() returns once the transaction holding the
// mutation has committed: an OK answer is durable.
//
// Storage failures (sql::StorageFaultOf) come in two kinds:
// - Corruption is sticky: it is logged, and every later Run() fails at once
//   with it, so nothing is written to a damaged file.
// - A full disk, an I/O error, a file that cannot be opened are transient:
//   SQLite rolled the transaction back and the file is as it was. The
//   writer is degraded: Run() fails at once (UNAVAILABLE, so callers retry;
//   a worker holds its results meanwhile), except that one mutation per
//   backoff interval (kFirstProbeMs, doubling to kMaxProbeMs, on the
//   injected steady clock) is let through as a probe. The first probe whose
//   transaction commits heals the writer, with nothing lost.
// Every failed status of a storage failure keeps its storage mark and its
// message, and says that the coordinator cannot write.
//
// Thread-safe. Mutations must not call Run() themselves.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "coordinator/sqlite_db.h"
#include "core/schema/clock.h"

namespace tailsweep::sql {

class BatchWriter {
 public:
  using Mutation = std::function<absl::Status(Db&)>;

  static constexpr int64_t kFirstProbeMs = 250;
  static constexpr int64_t kMaxProbeMs = 4000;

  // Where the file is, for log lines ("at DIR (N MB free)").
  using WhereFn = std::function<std::string()>;

  // At most `max_batch` mutations share a transaction. `clock` (steady
  // time) paces the probes of a degraded writer; it must outlive this.
  BatchWriter(std::unique_ptr<Db> db, Clock* clock, WhereFn where = nullptr,
              int max_batch = 512);
  // Runs what is queued, then stops the thread.
  ~BatchWriter();

  // Runs `mutation` on the writer thread inside a transaction and returns
  // its status, or the error of BEGIN/COMMIT (then nothing of it was
  // applied).
  absl::Status Run(Mutation mutation);

  // How writes stand.
  struct Health {
    // OK while writes work; else the storage failure: sticky when
    // `corrupt`, else the first failure of the current degraded spell.
    absl::Status failure;
    bool corrupt = false;
    int64_t since_ms = 0;  // steady ms when the failure began
  };
  Health health() const;

  // Transactions run so far, mutations waiting for the next one, times the
  // writer healed, and writes refused while degraded (for tests, metrics
  // and benchmarks).
  int64_t transactions() const;
  int64_t waiting() const;
  int64_t heals() const;
  int64_t refused() const;

 private:
  struct Pending {
    Mutation mutation;
    absl::Status status;
    bool done = false;
  };
  void Loop();
  // Runs one batch in a transaction and sets each one's status. True when
  // the transaction committed (what failed in it failed on its own).
  bool RunBatch(const std::deque<Pending*>& batch);
  // After a batch: the writer's state from its outcome. Holds mu_.
  void Account(const std::deque<Pending*>& batch, bool committed);

  const int max_batch_;
  std::unique_ptr<Db> db_;  // used by the writer thread only
  Clock* clock_;
  WhereFn where_;
  // std::mutex (pthreads) rather than absl::Mutex: ThreadSanitizer sees it
  // even with Debian's uninstrumented abseil.
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the writer: work or stop
  std::condition_variable done_;  // callers: a batch finished
  std::deque<Pending*> queue_;    // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  int64_t transactions_ = 0;      // guarded by mu_
  Health health_;                 // guarded by mu_
  int64_t next_probe_ms_ = 0;     // guarded by mu_; while degraded
  int64_t probe_gap_ms_ = 0;      // guarded by mu_; while degraded
  int64_t heals_ = 0;             // guarded by mu_
  int64_t refused_ = 0;           // guarded by mu_
  std::thread thread_;
};

}  // namespace tailsweep::sql

#endif  // TAILSWEEP_COORDINATOR_BATCH_WRITER_H_
