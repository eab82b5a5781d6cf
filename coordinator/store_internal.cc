#include "coordinator/store_internal.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/schema/job_kind.h"
#include "core/schema/job_state.h"

namespace tailsweep::store_internal {

std::string ToJson(const KeyValues& kv) {
  nlohmann::json doc = nlohmann::json::object();
  for (const auto& [k, v] : kv) doc[k] = v;
  return doc.dump();
}

KeyValues FromJson(const std::string& text) {
  KeyValues out;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return out;
  for (const auto& [k, v] : doc.items())
    out.emplace_back(k, v.get<std::string>());
  return out;
}

absl::StatusOr<JobState> ParseState(absl::string_view s) {
  if (std::optional<JobState> state = ParseJobState(s)) return *state;
  return absl::DataLossError(
      absl::StrCat("unknown job state '", s, "'; allowed: ", JobStateNames()));
}

absl::StatusOr<JobKind> ParseKind(absl::string_view s) {
  if (std::optional<JobKind> kind = ParseJobKind(s)) return *kind;
  return absl::DataLossError(
      absl::StrCat("unknown job kind '", s, "'; allowed: ", JobKindNames()));
}

absl::Status CheckLease(sql::Db& db, const std::string& worker,
                        const std::string& job_id, int64_t epoch,
                        bool allow_done) {
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "SELECT state, epoch, COALESCE(holder, '') FROM jobs WHERE job_id = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  const absl::StatusOr<JobState> state = ParseState(st->Text(0));
  if (!state.ok()) return state.status();
  if (st->Int(1) != epoch) {
    return absl::FailedPreconditionError(
        absl::StrCat("stale epoch ", epoch, " for job ", job_id,
                     " (live epoch ", st->Int(1), "); stop this job"));
  }
  if (*state == JobState::kLeased && st->Text(2) != worker) {
    return absl::PermissionDeniedError(
        absl::StrCat("job ", job_id, " is held by worker ", st->Text(2),
                     ", not ", worker, "; stop this job"));
  }
  if (*state == JobState::kLeased || (allow_done && *state == JobState::kDone))
    return absl::OkStatus();
  if (*state == JobState::kCancelled) {
    // Cancelled under a live lease: the holder must stop, but what it
    // already produced (metrics, a result) is still taken: done wins.
    if (allow_done && st->Text(2) == worker) return absl::OkStatus();
    return absl::CancelledError(absl::StrCat("job ", job_id, " was cancelled"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("job ", job_id, " is ", JobStateName(*state), ", not ",
                   JobStateName(JobState::kLeased)));
}

absl::Status CheckSweep(sql::Db& db, const std::string& sweep) {
  absl::StatusOr<sql::Statement> find =
      db.Prepare("SELECT 1 FROM sweeps WHERE name = ?");
  if (!find.ok()) return find.status();
  find->Bind(1, sweep);
  absl::StatusOr<bool> row = find->Step();
  if (!row.ok()) return row.status();
  if (!*row) return NoSuchSweep(db, sweep);
  return absl::OkStatus();
}

absl::Status NoSuchSweep(const std::string& sweep,
                         const std::vector<std::string>& sweeps) {
  constexpr size_t kListed = 20;
  std::string listed = sweeps.empty() ? "none yet" : "";
  const size_t first = sweeps.size() > kListed ? sweeps.size() - kListed : 0;
  if (first > 0) absl::StrAppend(&listed, first, " older, then ");
  for (size_t i = first; i < sweeps.size(); ++i) {
    absl::StrAppend(&listed, i > first ? ", " : "", sweeps[i]);
  }
  return absl::NotFoundError(
      absl::StrCat("no sweep '", sweep, "'; sweeps: ", listed));
}

absl::Status NoSuchSweep(sql::Db& db, const std::string& sweep) {
  std::vector<std::string> names;
  absl::StatusOr<sql::Statement> st =
      db.Prepare("SELECT name FROM sweeps ORDER BY sweep_id");
  if (st.ok()) {
    while (true) {
      absl::StatusOr<bool> row = st->Step();
      if (!row.ok() || !*row) break;
      names.push_back(st->Text(0));
    }
  }
  return NoSuchSweep(sweep, names);
}

absl::StatusOr<std::vector<MetricSummary>> MetricSummaries(
    sql::Db& db, const std::string& job_id) {
  // 1e308 * 10 overflows to infinity in SQLite's arithmetic.
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "SELECT name, COUNT(*), MAX(step), "
      "MIN(CASE WHEN abs(value) < 1e308 * 10 THEN value END), "
      "MAX(CASE WHEN abs(value) < 1e308 * 10 THEN value END), "
      "SUM(CASE WHEN value IS NULL OR abs(value) >= 1e308 * 10 THEN 1 "
      "ELSE 0 END), "
      "(SELECT m2.value FROM metrics m2 WHERE m2.job_id = m.job_id AND "
      "m2.name = m.name ORDER BY m2.step DESC LIMIT 1), "
      "(SELECT m2.value IS NULL FROM metrics m2 WHERE m2.job_id = m.job_id "
      "AND m2.name = m.name ORDER BY m2.step DESC LIMIT 1) "
      "FROM metrics m WHERE job_id = ? GROUP BY name ORDER BY name");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::vector<MetricSummary> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    MetricSummary m;
    m.name = st->Text(0);
    m.points = st->Int(1);
    m.last_step = st->Int(2);
    m.min = st->IsNull(3) ? kNaN : st->Real(3);
    m.max = st->IsNull(4) ? kNaN : st->Real(4);
    m.not_finite = st->Int(5);
    m.last = st->Int(7) != 0 ? kNaN : st->Real(6);
    out.push_back(std::move(m));
  }
  return out;
}

absl::StatusOr<int64_t> SweepId(sql::Db& db, const std::string& sweep) {
  absl::StatusOr<sql::Statement> find =
      db.Prepare("SELECT sweep_id FROM sweeps WHERE name = ?");
  if (!find.ok()) return find.status();
  find->Bind(1, sweep);
  absl::StatusOr<bool> row = find->Step();
  if (!row.ok()) return row.status();
  if (!*row) return NoSuchSweep(db, sweep);
  return find->Int(0);
}

}  // namespace tailsweep::store_internal
