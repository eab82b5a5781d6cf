// The store's records of files: checkpoints and the files attempts made.

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"

namespace tailsweep {

absl::StatusOr<CheckpointRow> Store::RecordCheckpoint(
    const std::string& worker, const std::string& job_id, int64_t epoch,
    const CheckpointRow& row) {
  CheckpointRow stored = row;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    // The newest so far becomes the previous one, if this one replaces it.
    absl::StatusOr<sql::Statement> keep = db.Prepare(
        "INSERT OR REPLACE INTO previous_checkpoints (job_id, step, file, "
        "bytes, sha256, epoch, uploaded_ms) SELECT job_id, step, file, bytes, "
        "sha256, epoch, uploaded_ms FROM checkpoints WHERE job_id = ? AND "
        "step < ?");
    if (!keep.ok()) return keep.status();
    TS_RETURN_IF_ERROR(keep->Bind(1, job_id).Bind(2, row.step).Run());
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "INSERT INTO checkpoints (job_id, step, file, bytes, sha256, epoch, "
        "uploaded_ms) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (job_id) DO UPDATE SET step = excluded.step, "
        "file = excluded.file, bytes = excluded.bytes, "
        "sha256 = excluded.sha256, epoch = excluded.epoch, "
        "uploaded_ms = excluded.uploaded_ms WHERE excluded.step > step");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, job_id)
                           .Bind(2, row.step)
                           .Bind(3, row.file)
                           .Bind(4, row.bytes)
                           .Bind(5, row.sha256)
                           .Bind(6, epoch)
                           .Bind(7, clock_->WallMs())
                           .Run());
    if (db.Changes() > 0) return absl::OkStatus();
    // An older (or the same) step than the stored one: keep the stored one.
    absl::StatusOr<sql::Statement> q = db.Prepare(
        "SELECT step, file, bytes, sha256 FROM checkpoints WHERE job_id = ?");
    if (!q.ok()) return q.status();
    q->Bind(1, job_id);
    absl::StatusOr<bool> found = q->Step();
    if (!found.ok()) return found.status();
    stored = {q->Int(0), q->Text(1), q->Int(2), q->Text(3)};
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return stored;
}

absl::StatusOr<std::vector<std::string>> Store::RecordJobFile(
    const std::string& worker, const std::string& job_id, int64_t epoch,
    const JobFileRow& row) {
  std::vector<std::string> replaced;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    replaced.clear();
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/true));
    // The same name of this attempt; an artifact's of every attempt.
    const std::string where =
        absl::StrCat("WHERE job_id = ?1 AND kind = ?2 AND name = ?3",
                     row.kind == "artifact" ? "" : " AND epoch = ?4");
    absl::StatusOr<sql::Statement> old =
        db.Prepare(absl::StrCat("SELECT file FROM job_files ", where));
    if (!old.ok()) return old.status();
    old->Bind(1, job_id).Bind(2, row.kind).Bind(3, row.name);
    if (row.kind != "artifact") old->Bind(4, epoch);
    while (true) {
      absl::StatusOr<bool> r = old->Step();
      if (!r.ok()) return r.status();
      if (!*r) break;
      if (old->Text(0) != row.file) replaced.push_back(old->Text(0));
    }
    old->Reset().IgnoreError();
    absl::StatusOr<sql::Statement> drop =
        db.Prepare(absl::StrCat("DELETE FROM job_files ", where));
    if (!drop.ok()) return drop.status();
    drop->Bind(1, job_id).Bind(2, row.kind).Bind(3, row.name);
    if (row.kind != "artifact") drop->Bind(4, epoch);
    TS_RETURN_IF_ERROR(drop->Run());
    absl::StatusOr<sql::Statement> add = db.Prepare(
        "INSERT INTO job_files (job_id, kind, name, epoch, file, bytes, "
        "sha256, original_bytes, cut, gzip, uploaded_ms) VALUES (?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?)");
    if (!add.ok()) return add.status();
    return add->Bind(1, job_id)
        .Bind(2, row.kind)
        .Bind(3, row.name)
        .Bind(4, epoch)
        .Bind(5, row.file)
        .Bind(6, row.bytes)
        .Bind(7, row.sha256)
        .Bind(8, row.original_bytes)
        .Bind(9, int64_t{row.cut})
        .Bind(10, int64_t{row.gzip})
        .Bind(11, clock_->WallMs())
        .Run();
  });
  if (!status.ok()) return status;
  return replaced;
}

absl::StatusOr<std::vector<JobFileRow>> Store::JobFiles(
    const std::string& job_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT kind, name, epoch, file, bytes, sha256, original_bytes, cut, "
      "gzip, uploaded_ms FROM job_files WHERE job_id = ? ORDER BY kind = "
      "'artifact', CASE WHEN kind = 'log' THEN -epoch ELSE 0 END, name");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  std::vector<JobFileRow> rows;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    rows.push_back({st->Text(0), st->Text(1), st->Int(2), st->Text(3),
                    st->Int(4), st->Text(5), st->Int(6), st->Int(7) != 0,
                    st->Int(8) != 0, st->Int(9)});
  }
  return rows;
}

absl::StatusOr<std::vector<std::string>> Store::KeepCheckpoint(
    const std::string& job_id, int64_t epoch, const CheckpointRow& row,
    double metric, const CheckpointKeep& keep) {
  std::vector<std::string> dropped;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    dropped.clear();
    absl::StatusOr<sql::Statement> add = db.Prepare(
        "INSERT OR REPLACE INTO kept_checkpoints (job_id, step, file, bytes, "
        "sha256, epoch, uploaded_ms, metric, rank_key) VALUES (?, ?, ?, ?, ?, "
        "?, ?, ?, ?)");
    if (!add.ok()) return add.status();
    TS_RETURN_IF_ERROR(add->Bind(1, job_id)
                           .Bind(2, row.step)
                           .Bind(3, row.file)
                           .Bind(4, row.bytes)
                           .Bind(5, row.sha256)
                           .Bind(6, epoch)
                           .Bind(7, clock_->WallMs())
                           .Bind(8, metric)
                           .Bind(9, keep.maximize ? -metric : metric)
                           .Run());
    if (keep.at_most <= 0) return absl::OkStatus();
    // The worst beyond the best at_most (ties: the older step goes).
    absl::StatusOr<sql::Statement> worse = db.Prepare(
        "SELECT step, file FROM kept_checkpoints WHERE job_id = ? ORDER BY "
        "rank_key, step DESC LIMIT -1 OFFSET ?");
    if (!worse.ok()) return worse.status();
    worse->Bind(1, job_id).Bind(2, keep.at_most);
    std::vector<int64_t> steps;
    while (true) {
      absl::StatusOr<bool> r = worse->Step();
      if (!r.ok()) return r.status();
      if (!*r) break;
      steps.push_back(worse->Int(0));
      dropped.push_back(worse->Text(1));
    }
    worse->Reset().IgnoreError();
    absl::StatusOr<sql::Statement> drop = db.Prepare(
        "DELETE FROM kept_checkpoints WHERE job_id = ? AND step = ?");
    if (!drop.ok()) return drop.status();
    for (int64_t step : steps) {
      TS_RETURN_IF_ERROR(drop->Bind(1, job_id).Bind(2, step).Run());
      drop->Reset().IgnoreError();
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return dropped;
}

absl::Status Store::RecordEvent(const std::string& job_id, int64_t epoch,
                                absl::string_view kind,
                                absl::string_view detail) {
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    return Event(db, job_id, epoch, kind, detail);
  });
}

absl::Status Store::RecordNotKept(const std::string& job_id, int64_t epoch,
                                  const std::vector<std::string>& notes) {
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    for (const std::string& note : notes) {
      // One line each: `tailsweep jobs` prints them under its table.
      TS_RETURN_IF_ERROR(
          Event(db, job_id, epoch, "not_kept",
                absl::StrReplaceAll(note, {{"\n", " "}, {"\r", " "}})));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<Store::SpareCheckpoint>> Store::SpareCheckpoints() {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT p.job_id, p.file, 1 FROM previous_checkpoints p JOIN jobs j "
      "USING (job_id) WHERE j.state NOT IN ('queued', 'leased') AND p.file "
      "NOT IN (SELECT file FROM kept_checkpoints) "
      "UNION ALL SELECT c.job_id, c.file, 0 FROM checkpoints c JOIN jobs j "
      "USING (job_id) WHERE j.state = 'done' AND c.file NOT IN (SELECT file "
      "FROM kept_checkpoints)");
  if (!st.ok()) return st.status();
  std::vector<SpareCheckpoint> spare;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    const bool previous = st->Int(2) != 0;
    spare.push_back({st->Text(0), st->Text(1), previous,
                     previous ? "an older checkpoint of a finished job"
                              : "its job is done"});
  }
  return spare;
}

absl::Status Store::ForgetCheckpoint(const SpareCheckpoint& c) {
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    absl::StatusOr<sql::Statement> st = db.Prepare(absl::StrCat(
        "DELETE FROM ", c.previous ? "previous_checkpoints" : "checkpoints",
        " WHERE job_id = ? AND file = ?"));
    if (!st.ok()) return st.status();
    return st->Bind(1, c.job_id).Bind(2, c.file).Run();
  });
}

}  // namespace tailsweep
