#include "coordinator/batch_writer.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tailsweep::sql {

BatchWriter::BatchWriter(std::unique_ptr<Db> db, int max_batch)
    : max_batch_(max_batch), db_(std::move(db)) {
  thread_ = std::thread([this] { Loop(); });
}

BatchWriter::~BatchWriter() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int64_t BatchWriter::transactions() const {
  std::unique_lock<std::mutex> lock(mu_);
  return transactions_;
}

absl::Status BatchWriter::failure() const {
  std::unique_lock<std::mutex> lock(mu_);
  return failure_;
}

int64_t BatchWriter::waiting() const {
  std::unique_lock<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

absl::Status BatchWriter::Run(Mutation mutation) {
  Pending pending;
  pending.mutation = std::move(mutation);
  std::unique_lock<std::mutex> lock(mu_);
  if (!failure_.ok()) {
    return absl::Status(
        failure_.code(),
        absl::StrCat("the database failed earlier and takes no more writes "
                     "until the coordinator restarts (first error: ",
                     failure_.message(), ")"));
  }
  queue_.push_back(&pending);
  wake_.notify_all();
  done_.wait(lock, [&] { return pending.done; });
  return pending.status;
}

void BatchWriter::Loop() {
  while (true) {
    std::deque<Pending*> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      while (!queue_.empty() && static_cast<int>(batch.size()) < max_batch_) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    RunBatch(batch);
    std::unique_lock<std::mutex> lock(mu_);
    ++transactions_;
    for (Pending* p : batch) {
      if (failure_.ok() && IsStorageFailure(p->status)) {
        // Sticky: after an I/O error or a full disk nothing more is
        // written, so what is on disk stays what was acknowledged.
        failure_ = p->status;
        spdlog::critical(
            "storage failure: {}; no more writes: check the disk (space, "
            "permissions, health), then restart the coordinator",
            std::string(failure_.message()));
      }
    }
    for (Pending* p : batch) p->done = true;
    done_.notify_all();
  }
}

void BatchWriter::RunBatch(const std::deque<Pending*>& batch) {
  if (absl::Status s = db_->Exec("BEGIN IMMEDIATE"); !s.ok()) {
    for (Pending* p : batch) p->status = s;
    return;
  }
  for (Pending* p : batch) {
    // A savepoint per mutation: its error undoes its own changes only.
    absl::Status s = db_->Exec("SAVEPOINT mutation");
    if (s.ok()) {
      s = p->mutation(*db_);
      if (!s.ok()) db_->Exec("ROLLBACK TO mutation").IgnoreError();
      if (absl::Status r = db_->Exec("RELEASE mutation"); s.ok()) s = r;
    }
    p->status = s;
    if (sqlite3_get_autocommit(db_->raw()) != 0) {
      // SQLite rolled the whole transaction back (disk full, I/O error):
      // nothing of this batch was applied.
      const absl::Status lost =
          s.ok() ? absl::InternalError("transaction rolled back") : s;
      for (Pending* q : batch) {
        if (q->status.ok() || q == p) q->status = lost;
      }
      return;
    }
  }
  if (absl::Status s = db_->Exec("COMMIT"); !s.ok()) {
    db_->Exec("ROLLBACK").IgnoreError();
    for (Pending* p : batch) {
      if (p->status.ok()) p->status = s;
    }
  }
}

}  // namespace tailsweep::sql
