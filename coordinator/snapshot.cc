#include "coordinator/snapshot.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "coordinator/store_internal.h"

namespace tailsweep {
namespace {

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Handle = std::unique_ptr<sqlite3, Closer>;

absl::StatusOr<Handle> OpenFile(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Handle db(raw);
  if (rc != SQLITE_OK) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": cannot open (", db ? sqlite3_errmsg(db.get()) : "", ")"));
  }
  sqlite3_busy_timeout(db.get(), 10000);
  return db;
}

absl::Status Exec(sqlite3* db, const std::string& sql,
                  const std::string& what) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error != nullptr ? error : "unknown error";
    sqlite3_free(error);
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", message));
  }
  return absl::OkStatus();
}

// The first column of every row of `sql`, which binds `text` to ?1 if set.
absl::StatusOr<std::vector<std::string>> Column(sqlite3* db,
                                                const std::string& sql,
                                                const std::string* text,
                                                const std::string& what) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", sqlite3_errmsg(db)));
  }
  if (text != nullptr) {
    sqlite3_bind_text(stmt, 1, text->c_str(), -1, SQLITE_TRANSIENT);
  }
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const unsigned char* v = sqlite3_column_text(stmt, 0);
    out.emplace_back(v != nullptr ? reinterpret_cast<const char*>(v) : "");
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", sqlite3_errmsg(db)));
  }
  return out;
}

std::string Quoted(const std::string& text) {
  char* q = sqlite3_mprintf("%Q", text.c_str());
  std::string out(q);
  sqlite3_free(q);
  return out;
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
  absl::StatusOr<Handle> db = OpenFile(db_path, SQLITE_OPEN_READONLY);
  if (!db.ok()) return db.status();
  const std::string what = absl::StrCat("--db ", db_path);
  absl::StatusOr<std::vector<std::string>> sweeps =
      Column(db->get(), "SELECT name FROM sweeps ORDER BY sweep_id", nullptr,
             absl::StrCat(what, " (not a tailsweep database?)"));
  if (!sweeps.ok()) return sweeps.status();
  if (std::find(sweeps->begin(), sweeps->end(), sweep) == sweeps->end()) {
    return store_internal::NoSuchSweep(sweep, *sweeps);
  }
  const std::string partial = out_path + ".partial";
  std::filesystem::remove(partial, ec);
  if (absl::Status s = Exec(db->get(), "VACUUM INTO " + Quoted(partial),
                            absl::StrCat("copying ", db_path));
      !s.ok()) {
    return s;
  }
  db->reset();
  absl::Status pruned = [&]() -> absl::Status {
    absl::StatusOr<Handle> copy = OpenFile(partial, SQLITE_OPEN_READWRITE);
    if (!copy.ok()) return copy.status();
    const std::string keep = absl::StrCat(
        "(SELECT job_id FROM sweep_jobs WHERE sweep_id = (SELECT sweep_id "
        "FROM sweeps WHERE name = ",
        Quoted(sweep), "))");
    std::string sql = "PRAGMA foreign_keys = OFF; BEGIN;";
    for (const char* table :
         {"events", "metrics", "results", "checkpoints", "job_logs"}) {
      absl::StrAppend(&sql, "DELETE FROM ", table, " WHERE job_id NOT IN ",
                      keep, ";");
    }
    absl::StrAppend(&sql, "DELETE FROM jobs WHERE job_id NOT IN ", keep, ";",
                    "DELETE FROM sweep_jobs WHERE sweep_id != (SELECT "
                    "sweep_id FROM sweeps WHERE name = ",
                    Quoted(sweep), ");",
                    "DELETE FROM sweeps WHERE name != ", Quoted(sweep), ";",
                    "DELETE FROM lease_requests; DELETE FROM workers;",
                    "COMMIT; VACUUM;");
    return Exec(copy->get(), sql, absl::StrCat("pruning ", partial));
  }();
  if (pruned.ok()) {
    std::filesystem::rename(partial, out_path, ec);
    if (ec) {
      pruned = absl::InternalError(
          absl::StrCat("--out ", out_path, ": ", ec.message()));
    }
  }
  if (!pruned.ok()) std::filesystem::remove(partial, ec);
  return pruned;
}

}  // namespace tailsweep
