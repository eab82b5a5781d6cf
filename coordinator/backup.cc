#include "coordinator/backup.h"

#include <sqlite3.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/sqlite_db.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;

constexpr char kPrefix[] = "tailsweep-";
constexpr char kSuffix[] = ".db";

// "tailsweep-20261207T201500123Z.db": sorts as it was taken.
std::string BackupName(int64_t wall_ms) {
  const std::time_t seconds = static_cast<std::time_t>(wall_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &utc);
  char millis[8];
  std::snprintf(millis, sizeof millis, "%03d",
                static_cast<int>(wall_ms % 1000));
  return absl::StrCat(kPrefix, stamp, millis, "Z", kSuffix);
}

// The backups in `dir`, oldest first.
std::vector<fs::path> Backups(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && absl::StartsWith(name, kPrefix) &&
        absl::EndsWith(name, kSuffix)) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// OK when PRAGMA integrity_check says "ok"; else Internal with what it says.
absl::Status Check(const std::string& path) {
  absl::StatusOr<std::unique_ptr<sql::Db>> db = sql::Db::OpenReadOnly(path);
  if (!db.ok()) return db.status();
  absl::StatusOr<sql::Statement> st =
      (*db)->Prepare("PRAGMA integrity_check(1)");
  if (!st.ok()) return st.status();
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  const std::string verdict = *row ? st->Text(0) : "no answer";
  st->Reset().IgnoreError();
  if (verdict == "ok") return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(path, " fails PRAGMA integrity_check: ", verdict));
}

}  // namespace

absl::StatusOr<BackupResult> WriteBackup(const std::string& db_path,
                                         const std::string& dir, int keep,
                                         int64_t wall_ms) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("--backup-dir ", dir, ": ", ec.message()));
  }
  BackupResult result;
  result.path = (fs::path(dir) / BackupName(wall_ms)).string();
  const std::string partial = result.path + ".partial";
  fs::remove(partial, ec);
  {
    absl::StatusOr<std::unique_ptr<sql::Db>> db =
        sql::Db::OpenReadOnly(db_path);
    if (!db.ok()) return db.status();
    if (absl::Status s = (*db)->Exec("VACUUM INTO " + sql::Quoted(partial));
        !s.ok()) {
      fs::remove(partial, ec);
      return s;
    }
  }
  if (absl::Status s = Check(partial); !s.ok()) {
    fs::remove(partial, ec);
    return s;
  }
  fs::rename(partial, result.path, ec);
  if (ec) {
    fs::remove(partial, ec);
    return absl::InternalError(absl::StrCat("cannot name the backup ",
                                            result.path, ": ", ec.message()));
  }
  result.bytes = static_cast<int64_t>(fs::file_size(result.path, ec));
  std::vector<fs::path> all = Backups(dir);
  for (size_t i = 0; i + std::max(keep, 1) < all.size(); ++i) {
    if (fs::remove(all[i], ec)) ++result.removed;
  }
  return result;
}

absl::StatusOr<std::string> RestoreNewest(const std::string& dir,
                                          const std::string& db_path) {
  std::error_code ec;
  if (fs::exists(db_path, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--db ", db_path,
        " exists; --restore-from writes a new database and never overwrites "
        "one: give --db a new path"));
  }
  std::vector<fs::path> all = Backups(dir);
  std::string damaged;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (absl::Status s = Check(it->string()); !s.ok()) {
      absl::StrAppend(&damaged, damaged.empty() ? "" : "; ", s.message());
      continue;
    }
    const std::string partial = db_path + ".partial";
    fs::copy_file(*it, partial, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(partial, db_path, ec);
    if (ec) {
      fs::remove(partial, ec);
      return absl::InternalError(absl::StrCat(
          "cannot copy ", it->string(), " to ", db_path, ": ", ec.message()));
    }
    return it->string();
  }
  return absl::NotFoundError(
      absl::StrCat("--restore-from ", dir, ": no backup (", kPrefix, "*",
                   kSuffix, ") that passes PRAGMA integrity_check",
                   damaged.empty() ? "" : absl::StrCat(" (", damaged, ")")));
}

}  // namespace tailsweep
