#include "coordinator/store_internal.h"

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

}  // namespace tailsweep::store_internal
