#include "coordinator/snapshot.h"

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/store_internal.h"

namespace tailsweep {
namespace {

// A fresh VACUUM INTO copy, cut down to `sweep`'s rows and left in
// rollback-journal mode (one file, readable anywhere).
absl::Status Prune(const std::string& path, const std::string& sweep) {
  absl::StatusOr<std::unique_ptr<sql::Db>> copy = sql::Db::Open(path);
  if (!copy.ok()) return copy.status();
  const std::string id = absl::StrCat(
      "(SELECT sweep_id FROM sweeps WHERE name = ", sql::Quoted(sweep), ")");
  const std::string keep =
      absl::StrCat("(SELECT job_id FROM sweep_jobs WHERE sweep_id = ", id, ")");
  std::string sql = "PRAGMA foreign_keys = OFF; BEGIN;";
  for (const char* table : store_internal::kPerJobTables) {
    absl::StrAppend(&sql, "DELETE FROM ", table, " WHERE job_id NOT IN ", keep,
                    ";");
  }
  absl::StrAppend(&sql, "DELETE FROM jobs WHERE job_id NOT IN ", keep, ";");
  absl::StrAppend(&sql, "DELETE FROM sweep_jobs WHERE sweep_id != ", id, ";",
                  "DELETE FROM sweeps WHERE name != ", sql::Quoted(sweep), ";",
                  "DELETE FROM lease_requests; DELETE FROM workers; COMMIT;",
                  "VACUUM; PRAGMA journal_mode = DELETE;");
  return (*copy)->Exec(sql);
}

}  // namespace

absl::Status SnapshotSweep(const std::string& db_path, const std::string& sweep,
                           const std::string& out_path) {
  std::error_code ec;
  if (std::filesystem::exists(out_path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out ", out_path, " exists; it is never overwritten"));
  }
  if (!std::filesystem::is_regular_file(db_path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--db ", db_path, ": no such database file"));
  }
  absl::StatusOr<std::unique_ptr<sql::Db>> db = sql::Db::OpenReadOnly(db_path);
  if (!db.ok()) return absl::InvalidArgumentError(db.status().message());
  {  // The statement is done (reset) before the copy and the close.
    absl::StatusOr<sql::Statement> find =
        (*db)->Prepare("SELECT 1 FROM sweeps WHERE name = ?");
    if (!find.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--db ", db_path,
          " (not a tailsweep database?): ", find.status().message()));
    }
    find->Bind(1, sweep);
    absl::StatusOr<bool> found = find->Step();
    if (!found.ok()) return found.status();
    if (!*found) return store_internal::NoSuchSweep(**db, sweep);
  }
  const std::string partial = out_path + ".partial";
  std::filesystem::remove(partial, ec);
  absl::Status s = (*db)->Exec("VACUUM INTO " + sql::Quoted(partial));
  db->reset();
  if (s.ok()) s = Prune(partial, sweep);
  if (s.ok()) {
    std::filesystem::rename(partial, out_path, ec);
    if (ec) {
      s = absl::InternalError(
          absl::StrCat("--out ", out_path, ": ", ec.message()));
    }
  }
  if (!s.ok()) std::filesystem::remove(partial, ec);
  return s;
}

}  // namespace tailsweep
