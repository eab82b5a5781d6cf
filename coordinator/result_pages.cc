#include "coordinator/result_pages.h"

#include <utility>

namespace tailsweep {

absl::StatusOr<std::shared_ptr<const ResultsSnapshot>> ResultPages::Get(
    const Key& key, uint64_t* id, const Compute& compute) {
  if (*id != 0) {
    absl::MutexLock lock(&mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->id == *id && it->key == key) {
        kept_.splice(kept_.begin(), kept_, it);
        return kept_.front().snapshot;
      }
    }
  }
  // Computed outside the lock: reads of other sweeps go on meanwhile.
  absl::StatusOr<ResultsSnapshot> fresh = compute();
  if (!fresh.ok()) return fresh.status();
  auto snapshot = std::make_shared<const ResultsSnapshot>(*std::move(fresh));
  absl::MutexLock lock(&mu_);
  *id = next_id_++;
  kept_.push_front({key, *id, snapshot});
  if (kept_.size() > kKept) kept_.pop_back();
  return snapshot;
}

}  // namespace tailsweep
