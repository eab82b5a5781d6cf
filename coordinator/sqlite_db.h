#ifndef TAILSWEEP_COORDINATOR_SQLITE_DB_H_
#define TAILSWEEP_COORDINATOR_SQLITE_DB_H_

// A thin RAII layer over the SQLite C API: a connection and prepared
// statements with bound parameters only (no SQL is ever built from values).
// Errors come back as statuses: SQLITE_BUSY/LOCKED -> Unavailable (retry),
// SQLITE_FULL -> ResourceExhausted, SQLITE_CORRUPT -> DataLoss, others
// Internal. Not thread-safe: one Db per thread, or a lock around it.

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep::sql {

class Statement;

class Db {
 public:
  // Opens (creating) the file in WAL mode with foreign keys on and a busy
  // timeout. ":memory:" works for tests.
  // `vfs`: an SQLite VFS registered by that name (tests inject storage
  // faults this way); empty: the default.
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                  const std::string& vfs = "");
  // Opens an existing file read-only, as it is (no pragmas), with the same
  // busy timeout: another process's live database may be read this way.
  static absl::StatusOr<std::unique_ptr<Db>> OpenReadOnly(
      const std::string& path);
  ~Db();

  // Runs one or more statements without parameters (schema, pragmas).
  absl::Status Exec(absl::string_view sql);
  // Prepared statements are cached by their SQL text and reset (not
  // finalised) when the returned Statement goes away. REQUIRES: a statement
  // of the same text is not in use twice at once.
  absl::StatusOr<Statement> Prepare(absl::string_view sql);
  int64_t Changes() const;
  sqlite3* raw() { return db_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*> cache_;
};

// A prepared statement. Bind indices start at 1.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, absl::string_view value);
  Statement& BindNull(int index);

  // Steps once: true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows.
  absl::Status Run();
  absl::Status Reset();

  int columns() const { return sqlite3_column_count(stmt_); }
  int64_t Int(int column) const;
  double Real(int column) const;
  std::string Text(int column) const;
  bool IsNull(int column) const;

 private:
  friend class Db;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

// Maps an SQLite result code to a status carrying `what` and the message.
// I/O errors, a full disk, corruption, a file that cannot be opened and
// out-of-memory are also marked as storage failures (StorageFaultOf).
absl::Status SqliteError(sqlite3* db, int code, absl::string_view what);
absl::Status SqliteStatus(int code, const std::string& message);

// What a failed statement says about the storage under the database.
enum class StorageFault {
  kNone,  // not a storage failure (a constraint, a bad statement, ...)
  // A full disk, an I/O error, a file that could not be opened, no memory:
  // SQLite rolled the transaction back and the file is consistent; a later
  // write may work once the condition passes.
  kTransient,
  // The file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB): nothing more may
  // be written to it.
  kCorrupt,
};
StorageFault StorageFaultOf(const absl::Status& status);
// True for a status SqliteError marked as a storage failure of either kind.
bool IsStorageFailure(const absl::Status& status);
// True when the failure is a full disk (SQLITE_FULL).
bool IsDiskFull(const absl::Status& status);

// `text` as an SQL string literal ('it''s'), for the few statements that
// take no bound parameter (VACUUM INTO).
std::string Quoted(const std::string& text);

}  // namespace tailsweep::sql

#endif  // TAILSWEEP_COORDINATOR_SQLITE_DB_H_
