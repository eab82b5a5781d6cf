#ifndef TAILSWEEP_COORDINATOR_BATCH_WRITER_H_
#define TAILSWEEP_COORDINATOR_BATCH_WRITER_H_

// The store's one writer: a thread that owns the write connection and runs
// every mutation. Mutations that arrive while a transaction is being
// committed wait and then share the next one (one COMMIT, one fsync for the
// lot), each inside its own SAVEPOINT, so a mutation that fails rolls back
// its own changes only. Run() returns once the transaction holding the
// mutation has committed: an OK answer is durable.
//
// The first storage failure (sql::IsStorageFailure: I/O error, disk full,
// corruption) is sticky: it is logged, and every later Run() fails at once
// with it, so nothing is written after a write the disk refused.
//
// Thread-safe. Mutations must not call Run() themselves.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "coordinator/sqlite_db.h"

namespace tailsweep::sql {

class BatchWriter {
 public:
  using Mutation = std::function<absl::Status(Db&)>;

  // At most `max_batch` mutations share a transaction.
  explicit BatchWriter(std::unique_ptr<Db> db, int max_batch = 512);
  // Runs what is queued, then stops the thread.
  ~BatchWriter();

  // Runs `mutation` on the writer thread inside a transaction and returns
  // its status, or the error of BEGIN/COMMIT (then nothing of it was
  // applied).
  absl::Status Run(Mutation mutation);

  // OK until a storage failure; then that failure.
  absl::Status failure() const;

  // Transactions run so far, and mutations waiting for the next one (for
  // tests and benchmarks).
  int64_t transactions() const;
  int64_t waiting() const;

 private:
  struct Pending {
    Mutation mutation;
    absl::Status status;
    bool done = false;
  };
  void Loop();
  // Runs one batch in a transaction and sets each one's status.
  void RunBatch(const std::deque<Pending*>& batch);

  const int max_batch_;
  std::unique_ptr<Db> db_;  // used by the writer thread only
  // std::mutex (pthreads) rather than absl::Mutex: ThreadSanitizer sees it
  // even with Debian's uninstrumented abseil.
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the writer: work or stop
  std::condition_variable done_;  // callers: a batch finished
  std::deque<Pending*> queue_;    // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  int64_t transactions_ = 0;      // guarded by mu_
  absl::Status failure_;          // guarded by mu_
  std::thread thread_;
};

}  // namespace tailsweep::sql

#endif  // TAILSWEEP_COORDINATOR_BATCH_WRITER_H_
