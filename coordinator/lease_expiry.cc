#include "coordinator/lease_expiry.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "core/schema/logging.h"

namespace tailsweep {

LeaseExpiry::LeaseExpiry(ExpireFn expire, RestartFn restart, Clock* clock,
                         WaitFn wait, int64_t period_ms, LogFn log)
    : expire_(std::move(expire)),
      restart_(std::move(restart)),
      clock_(clock),
      wait_(std::move(wait)),
      period_ms_(period_ms),
      log_(std::move(log)) {
  if (!log_) log_ = [](const std::string& line) { spdlog::warn("{}", line); };
}

absl::StatusOr<std::vector<Store::ExpiredLease>> LeaseExpiry::RunOnce() {
  const int64_t now = clock_->SteadyMs();
  if (last_round_ >= 0 && now - last_round_ > kPauseRounds * period_ms_) {
    ++pauses_;
    log_(absl::StrCat("no lease round for ", now - last_round_,
                      " ms (this process was paused); every live lease gets "
                      "a full period from now"));
    restart_(now);
  }
  last_round_ = now;
  std::vector<Store::ExpiredLease> expired;
  absl::StatusOr<int64_t> n = expire_(now, &expired);
  if (!n.ok()) {
    log_(absl::StrCat("expiring leases failed: ", n.status().message(),
                      "; trying again in ", period_ms_, " ms"));
    return n.status();
  }
  for (const Store::ExpiredLease& e : expired) {
    log_(absl::StrCat(
        JobTag(e.job_id, e.epoch), ": lease of worker ", e.holder, " expired; ",
        e.failed ? "attempt limit reached, job failed" : "job queued again"));
  }
  expired_total_ += static_cast<int64_t>(expired.size());
  return expired;
}

void LeaseExpiry::Run() {
  do {
    RunOnce().IgnoreError();  // logged; the next round tries again
  } while (wait_(period_ms_));
}

}  // namespace tailsweep
