#include "coordinator/batch_writer.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tailsweep::sql {

namespace {

// A storage failure as callers see it: UNAVAILABLE unless the file is
// damaged, its storage mark kept, saying that nothing was written.
absl::Status CannotWrite(const absl::Status& failure, absl::string_view note) {
  const bool corrupt = StorageFaultOf(failure) == StorageFault::kCorrupt;
  absl::Status out(corrupt ? failure.code() : absl::StatusCode::kUnavailable,
                   absl::StrCat("the coordinator cannot write (",
                                failure.message(), ")", note));
  failure.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

}  // namespace

BatchWriter::BatchWriter(std::unique_ptr<Db> db, Clock* clock, WhereFn where,
                         int max_batch)
    : max_batch_(max_batch),
      db_(std::move(db)),
      clock_(clock),
      where_(std::move(where)) {
  if (!where_) where_ = [] { return std::string(); };
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "ts-writer");  // top -H, perf, gdb
    Loop();
  });
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

BatchWriter::Health BatchWriter::health() const {
  std::unique_lock<std::mutex> lock(mu_);
  return health_;
}

int64_t BatchWriter::waiting() const {
  std::unique_lock<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t BatchWriter::heals() const {
  std::unique_lock<std::mutex> lock(mu_);
  return heals_;
}

int64_t BatchWriter::refused() const {
  std::unique_lock<std::mutex> lock(mu_);
  return refused_;
}

absl::Status BatchWriter::Run(Mutation mutation) {
  Pending pending;
  pending.mutation = std::move(mutation);
  std::unique_lock<std::mutex> lock(mu_);
  if (!health_.failure.ok()) {
    if (health_.corrupt) {
      return CannotWrite(health_.failure,
                         "; the database is damaged and takes no more "
                         "writes: restore it, then restart the coordinator");
    }
    const int64_t now = clock_->SteadyMs();
    if (now < next_probe_ms_) {
      ++refused_;
      return CannotWrite(health_.failure,
                         absl::StrCat("; retrying by itself, next try in ",
                                      next_probe_ms_ - now, " ms"));
    }
    // This one is the probe; the others wait for its outcome's interval.
    next_probe_ms_ = now + probe_gap_ms_;
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
    const bool committed = RunBatch(batch);
    std::unique_lock<std::mutex> lock(mu_);
    ++transactions_;
    Account(batch, committed);
    for (Pending* p : batch) p->done = true;
    done_.notify_all();
  }
}

void BatchWriter::Account(const std::deque<Pending*>& batch, bool committed) {
  const int64_t now = clock_->SteadyMs();
  const Pending* failed = nullptr;
  for (Pending* p : batch) {
    if (IsStorageFailure(p->status)) {
      failed = p;
      break;
    }
  }
  if (failed == nullptr) {
    if (committed && !health_.failure.ok() && !health_.corrupt) {
      spdlog::info(
          "storage: writes work again{} after {} s ({} refused meanwhile)",
          where_(), (now - health_.since_ms) / 1000, refused_);
      health_ = Health{};
      ++heals_;
    }
    return;
  }
  const absl::Status failure = failed->status;
  const bool corrupt = StorageFaultOf(failure) == StorageFault::kCorrupt;
  if (corrupt) {
    if (!health_.corrupt) {
      spdlog::critical(
          "storage: the database{} is damaged ({}); no more writes: restore "
          "it from a backup, then restart the coordinator",
          where_(), std::string(failure.message()));
      health_ = Health{failure, true, now};
    }
  } else if (health_.failure.ok()) {
    spdlog::error(
        "storage: a write failed{} ({}); nothing of it was applied. Writes "
        "are refused and retried, the first in {} ms, until one works",
        where_(), std::string(failure.message()), kFirstProbeMs);
    health_ = Health{failure, false, now};
    probe_gap_ms_ = kFirstProbeMs;
    next_probe_ms_ = now + probe_gap_ms_;
  } else if (!health_.corrupt) {
    // A probe failed: wait longer for the next.
    probe_gap_ms_ = std::min(probe_gap_ms_ * 2, kMaxProbeMs);
    next_probe_ms_ = now + probe_gap_ms_;
  }
  for (Pending* p : batch) {
    if (IsStorageFailure(p->status)) p->status = CannotWrite(p->status, "");
  }
}

bool BatchWriter::RunBatch(const std::deque<Pending*>& batch) {
  if (absl::Status s = db_->Exec("BEGIN IMMEDIATE"); !s.ok()) {
    for (Pending* p : batch) p->status = s;
    return false;
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
      return false;
    }
  }
  if (absl::Status s = db_->Exec("COMMIT"); !s.ok()) {
    db_->Exec("ROLLBACK").IgnoreError();
    for (Pending* p : batch) {
      if (p->status.ok()) p->status = s;
    }
    return false;
  }
  return true;
}

}  // namespace tailsweep::sql
