#include "coordinator/sqlite_db.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace tailsweep::sql {

namespace {
constexpr char kStoragePayload[] = "tailsweep.sqlite/storage-failure";
}  // namespace

// The payload's value: the fault's kind.
constexpr char kTransientFault[] = "transient";
constexpr char kFullFault[] = "full";
constexpr char kCorruptFault[] = "corrupt";

StorageFault StorageFaultOf(const absl::Status& status) {
  const auto kind = status.GetPayload(kStoragePayload);
  if (!kind.has_value()) return StorageFault::kNone;
  return *kind == kCorruptFault ? StorageFault::kCorrupt
                                : StorageFault::kTransient;
}

bool IsStorageFailure(const absl::Status& status) {
  return StorageFaultOf(status) != StorageFault::kNone;
}

bool IsDiskFull(const absl::Status& status) {
  const auto kind = status.GetPayload(kStoragePayload);
  return kind.has_value() && *kind == kFullFault;
}

absl::Status SqliteError(sqlite3* db, int code, absl::string_view what) {
  const std::string message =
      absl::StrCat(what, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(code));
  absl::Status status = SqliteStatus(code, message);
  switch (code & 0xff) {
    case SQLITE_FULL:
      status.SetPayload(kStoragePayload, absl::Cord(kFullFault));
      break;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_NOMEM:
      status.SetPayload(kStoragePayload, absl::Cord(kTransientFault));
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      status.SetPayload(kStoragePayload, absl::Cord(kCorruptFault));
      break;
    default:
      break;
  }
  return status;
}

absl::Status SqliteStatus(int code, const std::string& message) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_CONSTRAINT:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path,
                                             const std::string& vfs) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
      vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteError(raw, rc, absl::StrCat("open ", path));
    sqlite3_close(raw);
    return s;
  }
  std::unique_ptr<Db> db(new Db(raw));
  sqlite3_busy_timeout(raw, 5000);
  if (absl::Status s = db->Exec("PRAGMA journal_mode=WAL; PRAGMA "
                                "synchronous=FULL; PRAGMA foreign_keys=ON;");
      !s.ok()) {
    return s;
  }
  return db;
}

absl::StatusOr<std::unique_ptr<Db>> Db::OpenReadOnly(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteError(raw, rc, absl::StrCat("open ", path));
    sqlite3_close(raw);
    return s;
  }
  sqlite3_busy_timeout(raw, 5000);
  return std::unique_ptr<Db>(new Db(raw));
}

Db::~Db() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

absl::Status Db::Exec(absl::string_view sql) {
  const int rc =
      sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return absl::OkStatus();
  return SqliteError(db_, rc, sql.substr(0, sql.find_first_of("(\n")));
}

absl::StatusOr<Statement> Db::Prepare(absl::string_view sql) {
  const std::string key(sql);
  if (auto it = cache_.find(key); it != cache_.end()) {
    return Statement(db_, it->second);
  }
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(
      db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK)
    return SqliteError(db_, rc, absl::StrCat("prepare ", sql));
  cache_.emplace(key, stmt);  // finalized with the connection
  return Statement(db_, stmt);
}

int64_t Db::Changes() const { return sqlite3_changes(db_); }

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  // The statement belongs to the Db's cache: make it ready for its next use.
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, absl::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, sqlite3_sql(stmt_));
}

absl::Status Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

absl::Status Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return absl::OkStatus();
}

int64_t Statement::Int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double Statement::Real(int column) const {
  return sqlite3_column_double(stmt_, column);
}
std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  return text ? reinterpret_cast<const char*>(text) : "";
}
bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::string Quoted(const std::string& text) {
  char* q = sqlite3_mprintf("%Q", text.c_str());
  std::string out(q);
  sqlite3_free(q);
  return out;
}

}  // namespace tailsweep::sql
