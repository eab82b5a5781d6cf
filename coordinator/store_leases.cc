// The store's leases: which queued job each worker gets (the lease scan,
// its cursors, the placement rules). Their renewal and ends are in
// store_lease_ends.cc, each sweep's running count in store_running.cc.

#include <algorithm>
#include <optional>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"
#include "core/schema/device_placement.h"

namespace tailsweep {

using store_internal::FromJson;

namespace {
// The leases still held that the call `request_id` of `worker` made, into
// *leases; true when that call was seen before (a retry: nothing new).
absl::StatusOr<bool> LeasesOfRequest(sql::Db& db, const std::string& worker,
                                     const std::string& request_id,
                                     std::vector<Lease>* leases) {
  absl::StatusOr<sql::Statement> again = db.Prepare(
      "SELECT j.job_id, j.params, j.epoch, j.attempt, j.kind, "
      "  (SELECT s.name FROM sweep_jobs sj JOIN sweeps s USING (sweep_id) "
      "   WHERE sj.job_id = j.job_id ORDER BY s.sweep_id LIMIT 1), "
      "  j.lease_deadline_ms, "
      "  (SELECT s.timeout_s FROM sweep_jobs sj JOIN sweeps s USING (sweep_id) "
      "   WHERE sj.job_id = j.job_id ORDER BY s.sweep_id LIMIT 1), "
      "  (SELECT s.outputs FROM sweep_jobs sj JOIN sweeps s USING (sweep_id) "
      "   WHERE sj.job_id = j.job_id ORDER BY s.sweep_id LIMIT 1) "
      "FROM jobs j WHERE j.state = 'leased' AND j.holder = ? AND "
      "j.lease_request = ? ORDER BY j.created_ms, j.rowid");
  if (!again.ok()) return again.status();
  again->Bind(1, worker).Bind(2, request_id);
  while (true) {
    absl::StatusOr<bool> row = again->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    leases->push_back({again->Text(0), again->Text(5), again->Text(4),
                       again->Int(2), again->Int(3), again->Int(6),
                       FromJson(again->Text(1)), again->Real(7),
                       std::make_shared<const RunOutputs>(
                           RunOutputsFromJson(again->Text(8)))});
  }
  absl::StatusOr<sql::Statement> seen = db.Prepare(
      "SELECT 1 FROM lease_requests WHERE worker_id = ? AND request_id = ?");
  if (!seen.ok()) return seen.status();
  seen->Bind(1, worker).Bind(2, request_id);
  return seen->Step();
}

bool IsCpu(const std::string& device) { return device == "cpu"; }

// Whether a worker's devices hold a GPU ("cuda:N").
bool HasGpu(const std::vector<std::string>& devices) {
  return std::any_of(devices.begin(), devices.end(), [](const std::string& d) {
    return absl::StartsWith(d, "cuda");
  });
}

// A sweep that may lease now (not paused, not held), with its jobs leased
// for it.
struct Candidate {
  const LeaseSweep* sweep = nullptr;  // its settings
  int64_t running = 0;
  int64_t after = -1;           // the grid position scanned to in this call
  int64_t scan_from = 0;        // no job before it is queued for the sweep
  int64_t known_scan_from = 0;  // scan_from as the call began
  bool contiguous = true;       // no queued job seen since scan_from
  bool exhausted = false;       // nothing more to lease in this call
};

// The sweeps that may lease, with their jobs leased now (as
// KeepRunningCounts keeps them).
absl::StatusOr<std::vector<Candidate>> Candidates(
    sql::Db& db, const std::vector<LeaseSweep>& sweeps) {
  std::vector<Candidate> out;
  out.reserve(sweeps.size());
  for (const LeaseSweep& w : sweeps) {
    Candidate c;
    c.sweep = &w;
    out.push_back(c);
  }
  absl::StatusOr<sql::Statement> running = db.Prepare(
      "SELECT sweep_id, running FROM temp.sweep_running WHERE running > 0");
  if (!running.ok()) return running.status();
  while (true) {
    absl::StatusOr<bool> row = running->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    const int64_t id = running->Int(0);
    auto it = std::lower_bound(
        out.begin(), out.end(), id,
        [](const Candidate& c, int64_t v) { return c.sweep->sweep_id < v; });
    if (it != out.end() && it->sweep->sweep_id == id) {
      it->running = running->Int(1);
    }
  }
  return out;
}

// The best sweep to lease from next: the highest priority, then the fewest
// jobs running (fair share), then the oldest. Null when none has room.
Candidate* Best(std::vector<Candidate>& all) {
  Candidate* best = nullptr;
  for (Candidate& c : all) {
    const LeaseSweep& w = *c.sweep;
    if (c.exhausted || (w.max_running > 0 && c.running >= w.max_running)) {
      continue;
    }
    if (best == nullptr ||
        std::make_tuple(-w.priority, c.running, w.sweep_id) <
            std::make_tuple(-best->sweep->priority, best->running,
                            best->sweep->sweep_id)) {
      best = &c;
    }
  }
  return best;
}

// What a queued job must meet to be leased in this call.
struct RowRules {
  int64_t now = 0, lease_ms = 0;
  int64_t units = 0;  // placement units with a free slot
  bool cpu_only = false;
  const std::vector<std::string>* kinds;          // empty: every kind
  const std::vector<int>* free_slots;             // empty: no placement
  std::vector<int>* free;                         // slots left, PlaceJob's
  const absl::flat_hash_set<std::string>* taken;  // leased in this call
};

// The lease of the queued job on the page's current row (PickQueued's
// columns) when it is ready and fits `r` (then placed in *r.free); nullopt
// otherwise.
std::optional<Lease> LeaseOfRow(const sql::Statement& page, const Candidate& c,
                                const RowRules& r) {
  if (page.Int(3) > r.now) return std::nullopt;  // backing off
  if (page.Int(9) > r.units || (r.cpu_only && page.Int(10) != 0)) {
    return std::nullopt;
  }
  const std::string kind = page.Text(8);
  if (!r.kinds->empty() &&
      std::find(r.kinds->begin(), r.kinds->end(), kind) == r.kinds->end()) {
    return std::nullopt;
  }
  const std::string job_id = page.Text(4);
  if (r.taken->contains(job_id)) return std::nullopt;  // via another sweep
  Lease l;
  l.params = FromJson(page.Text(5));
  if (!r.free_slots->empty()) {
    const absl::StatusOr<int> gpus = JobGpus(l.params);
    if (!PlaceJob(*r.free, gpus.ok() ? *gpus : 1)) return std::nullopt;
  }
  l.job_id = job_id;
  l.epoch = page.Int(6) + 1;
  l.attempt = page.Int(7) + 1;
  l.kind = kind;
  l.sweep = c.sweep->name;
  l.deadline_ms = r.now + r.lease_ms;
  l.timeout_s = c.sweep->timeout_s;
  l.outputs = c.sweep->outputs;
  return l;
}

}  // namespace

// Per lease: the best sweep (Best) gives its next ready job in grid order
// that fits (kinds, "gpus" against the free units, placed as PlaceJob
// does); a sweep with nothing ready is done for this call. Into *granted,
// not yet taken; the sweeps' scanned-past positions into *cursors.
absl::Status Store::PickQueued(
    sql::Db& db, int64_t now, int64_t lease_ms, int64_t max_jobs,
    const std::vector<int>& free_slots, const std::vector<std::string>& kinds,
    bool cpu_only, std::vector<Lease>* granted,
    std::vector<std::pair<int64_t, int64_t>>* cursors) {
  std::vector<int> free = free_slots;
  int64_t units = free_slots.empty() ? 1 : 0;
  for (int f : free) units += f > 0 ? 1 : 0;
  absl::StatusOr<LeaseSweepList> live = LeaseSweeps();
  if (!live.ok()) return live.status();
  absl::StatusOr<std::vector<Candidate>> sweeps = Candidates(db, **live);
  if (!sweeps.ok()) return sweeps.status();
  {
    absl::MutexLock lock(&lease_mu_);
    for (Candidate& c : *sweeps) {
      auto it = scan_from_.find(c.sweep->sweep_id);
      c.scan_from = it == scan_from_.end() ? 0 : it->second;
      c.known_scan_from = c.scan_from;
      c.after = c.scan_from - 1;
    }
  }
  // A page of the sweep's jobs in grid order past `after`; those not
  // queued too, so the sweep's scan_from can move past them.
  absl::StatusOr<sql::Statement> page = db.Prepare(absl::StrCat(
      // Only a queued job's params are read and parsed.
      "SELECT sj.position, j.state, sj.cancelled, j.not_before_ms, j.job_id, "
      "  CASE WHEN j.state = 'queued' THEN j.params END, j.epoch, j.attempt, "
      "  j.kind, CASE WHEN j.state = 'queued' THEN CAST(COALESCE("
      "  json_extract(j.params, '$.",
      kGpusKey,
      "'), '1') AS INTEGER) END, CASE WHEN j.state = 'queued' "
      "  THEN json_extract(j.params, '$.",
      kGpusKey,
      "') IS NOT NULL END "
      "FROM sweep_jobs sj CROSS JOIN jobs j ON j.job_id = sj.job_id "
      "WHERE sj.sweep_id = ? AND sj.position > ? ORDER BY sj.position "
      "LIMIT 256"));
  if (!page.ok()) return page.status();
  absl::flat_hash_set<std::string> taken;
  const RowRules rules{now,    lease_ms,    units, cpu_only,
                       &kinds, &free_slots, &free, &taken};
  while (static_cast<int64_t>(granted->size()) < max_jobs) {
    Candidate* c = Best(*sweeps);
    if (c == nullptr) break;
    // The sweep's next ready job that fits, if any.
    std::optional<Lease> found;
    while (!found && !c->exhausted) {
      page->Reset().IgnoreError();
      page->Bind(1, c->sweep->sweep_id).Bind(2, c->after);
      int rows = 0;
      while (!found) {
        absl::StatusOr<bool> row = page->Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        ++rows;
        c->after = page->Int(0);
        // Leased, finished, or cancelled by this sweep: not to lease.
        if (page->Text(1) != "queued" || page->Int(2) != 0) {
          if (c->contiguous) c->scan_from = c->after + 1;
          continue;
        }
        c->contiguous = false;
        found = LeaseOfRow(*page, *c, rules);
      }
      if (!found && rows < 256) c->exhausted = true;
    }
    page->Reset().IgnoreError();
    if (!found) continue;
    taken.insert(found->job_id);
    ++c->running;
    granted->push_back(*std::move(found));
    if (!free_slots.empty() &&
        std::all_of(free.begin(), free.end(), [](int f) { return f == 0; })) {
      break;
    }
  }
  for (const Candidate& c : *sweeps) {
    // Only what this call scanned past beyond what was known.
    if (c.scan_from > c.known_scan_from) {
      cursors->emplace_back(c.sweep->sweep_id, c.scan_from);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Store::LeaseSweepList> Store::LeaseSweeps() {
  uint64_t generation;
  {
    absl::MutexLock lock(&lease_mu_);
    if (lease_sweeps_of_ == sweeps_generation_) return lease_sweeps_;
    generation = sweeps_generation_;
  }
  // The committed state, by sweep id (Candidates looks sweeps up so).
  auto out = std::make_shared<std::vector<LeaseSweep>>();
  {
    std::lock_guard<std::mutex> lock(lease_read_mu_);
    absl::StatusOr<sql::Statement> st = lease_reader_->Prepare(
        "SELECT sweep_id, name, priority, max_running, timeout_s, outputs "
        "FROM sweeps WHERE paused = 0 AND held = '' ORDER BY sweep_id");
    if (!st.ok()) return st.status();
    while (true) {
      absl::StatusOr<bool> row = st->Step();
      if (!row.ok()) {
        st->Reset().IgnoreError();
        return row.status();
      }
      if (!*row) break;
      out->push_back({st->Int(0), st->Text(1), st->Int(2), st->Int(3),
                      st->Real(4),
                      std::make_shared<const RunOutputs>(
                          RunOutputsFromJson(st->Text(5)))});
    }
    st->Reset().IgnoreError();
  }
  absl::MutexLock lock(&lease_mu_);
  if (generation == sweeps_generation_) {
    lease_sweeps_ = out;
    lease_sweeps_of_ = generation;
  }
  return LeaseSweepList(std::move(out));
}

void Store::SweepsChanged() {
  absl::MutexLock lock(&lease_mu_);
  ++sweeps_generation_;
}

void Store::KeepCursors(const std::vector<std::pair<int64_t, int64_t>>& cursors,
                        uint64_t generation) {
  absl::MutexLock lock(&lease_mu_);
  if (generation != cursor_generation_) return;  // jobs came back meanwhile
  for (const auto& [sweep_id, scan_from] : cursors) {
    int64_t& kept = scan_from_[sweep_id];
    kept = std::max(kept, scan_from);
  }
}

void Store::ForgetCursor(int64_t sweep_id) {
  absl::MutexLock lock(&lease_mu_);
  scan_from_.erase(sweep_id);
  ++cursor_generation_;
}

absl::Status Store::ForgetCursorsOf(sql::Db& db, const std::string& job_id) {
  absl::StatusOr<sql::Statement> st =
      db.Prepare("SELECT sweep_id FROM sweep_jobs WHERE job_id = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    ForgetCursor(st->Int(0));
  }
}

absl::StatusOr<bool> Store::MayLease(const std::string& worker,
                                     const std::string& request_id,
                                     int64_t now) {
  std::lock_guard<std::mutex> lock(lease_read_mu_);
  absl::StatusOr<sql::Statement> st = lease_reader_->Prepare(
      "SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' AND "
      "not_before_ms <= ?) OR EXISTS (SELECT 1 FROM lease_requests WHERE "
      "worker_id = ? AND request_id = ?)");
  if (!st.ok()) return st.status();
  st->Bind(1, now).Bind(2, worker).Bind(3, request_id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  return st->Int(0) != 0;
}

absl::StatusOr<std::vector<Lease>> Store::LeaseJobs(
    const std::string& worker, int64_t max_jobs, int64_t lease_ms,
    const std::string& request_id, const std::vector<int>& free_slots,
    const std::vector<std::string>& kinds,
    const std::vector<std::string>& devices) {
  const ChangesJobs changes{&generation_};
  const int64_t now = clock_->WallMs();
  const int64_t steady = clock_->SteadyMs();
  const bool has_gpu = HasGpu(devices);
  const bool cpu_only = !devices.empty() && !has_gpu &&
                        std::all_of(devices.begin(), devices.end(), IsCpu);
  if (!devices.empty()) {
    absl::MutexLock lock(&lease_mu_);
    worker_devices_[worker] = {absl::StrJoin(devices, ","), now};
  }
  // An idle worker's poll writes nothing: with nothing queued and no
  // earlier call to answer again, the answer is empty, and when it was
  // last seen waits in memory for the next flush (ExpireLeases). So does
  // every poll while leasing is held (a restore).
  absl::StatusOr<bool> may = MayLease(worker, request_id, now);
  if (!may.ok()) return may.status();
  if (!*may || steady < options_.hold_leases_until_steady_ms) {
    absl::MutexLock lock(&lease_mu_);
    idle_seen_[worker] = now;
    return std::vector<Lease>{};
  }
  std::vector<Lease> leases;
  std::vector<Lease> granted;  // by this call (not a retry's)
  // How far each sweep has nothing queued, kept once the call has
  // committed, and only when no job came back to the queue meanwhile
  // (ForgetCursor).
  std::vector<std::pair<int64_t, int64_t>> cursors;
  uint64_t cursor_generation;
  {
    absl::MutexLock lock(&lease_mu_);
    cursor_generation = cursor_generation_;
  }
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    leases.clear();
    granted.clear();
    if (!request_id.empty()) {
      // A retry of a call whose answer was lost: the same leases again,
      // and nothing new when the call was seen before.
      absl::StatusOr<bool> seen =
          LeasesOfRequest(db, worker, request_id, &leases);
      if (!seen.ok()) return seen.status();
      if (*seen) return absl::OkStatus();
    }
    cursors.clear();
    TS_RETURN_IF_ERROR(PickQueued(db, now, lease_ms, max_jobs, free_slots,
                                  kinds, cpu_only, &granted, &cursors));
    absl::StatusOr<sql::Statement> take = db.Prepare(
        "UPDATE jobs SET state = 'leased', epoch = ?, attempt = ?, holder = ?, "
        "lease_deadline_ms = ?, updated_ms = ?, lease_request = ?, "
        "lease_ms = ?, leased_ms = ?5, lease_gpus = ? WHERE job_id = ?");
    if (!take.ok()) return take.status();
    if (!granted.empty() && !request_id.empty()) {
      // Only a call that leased something needs answering again (a retry
      // of an empty answer may lease afresh: nothing was given before).
      absl::StatusOr<sql::Statement> remember = db.Prepare(
          "INSERT OR IGNORE INTO lease_requests (worker_id, request_id, "
          "at_ms) VALUES (?, ?, ?)");
      if (!remember.ok()) return remember.status();
      TS_RETURN_IF_ERROR(
          remember->Bind(1, worker).Bind(2, request_id).Bind(3, now).Run());
    }
    for (const Lease& l : granted) {
      // The lease history: GPU time only on a worker with GPUs (the job's
      // "gpus" of them), else a CPU slot's.
      const absl::StatusOr<int> gpus = JobGpus(l.params);
      TS_RETURN_IF_ERROR(
          take->Bind(1, l.epoch)
              .Bind(2, l.attempt)
              .Bind(3, worker)
              .Bind(4, l.deadline_ms)
              .Bind(5, now)
              .Bind(6, request_id)
              .Bind(7, lease_ms)
              .Bind(8, int64_t{has_gpu ? (gpus.ok() ? *gpus : 1) : 0})
              .Bind(9, l.job_id)
              .Run());
      take->Reset().IgnoreError();
      TS_RETURN_IF_ERROR(Event(db, l.job_id, l.epoch, "leased", worker));
    }
    absl::StatusOr<sql::Statement> seen = db.Prepare(
        "INSERT INTO workers (worker_id, last_seen_ms) VALUES (?, ?) "
        "ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = "
        "excluded.last_seen_ms");
    if (!seen.ok()) return seen.status();
    return seen->Bind(1, worker).Bind(2, now).Run();
  });
  if (!status.ok()) return status;
  KeepCursors(cursors, cursor_generation);
  for (Lease& l : granted) {
    SetLeaseDeadline(l.job_id, l.epoch, lease_ms, steady + lease_ms);
    leases.push_back(std::move(l));
  }
  return leases;
}

absl::StatusOr<bool> Store::HasUnfinishedJobs() {
  std::lock_guard<std::mutex> lock(lease_read_mu_);
  absl::StatusOr<sql::Statement> st = lease_reader_->Prepare(
      "SELECT EXISTS (SELECT 1 FROM jobs WHERE state IN ('queued', "
      "'leased'))");
  if (!st.ok()) return st.status();
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  return st->Int(0) != 0;
}

}  // namespace tailsweep
