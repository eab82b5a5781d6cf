#include "coordinator/result_pages.h"

#include <utility>

namespace tailsweep {

absl::StatusOr<std::shared_ptr<const ResultsSnapshot>> ResultPages::Get(
    const Key& key, uint64_t generation, uint64_t* id, const Compute& compute) {
  {
    absl::MutexLock lock(&mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      const bool same_read = *id != 0 && it->id == *id;
      const bool same_state = *id == 0 && it->generation == generation;
      if (it->key == key && (same_read || same_state)) {
        kept_.splice(kept_.begin(), kept_, it);
        *id = kept_.front().id;
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
  kept_.push_front({key, *id, generation, snapshot});
  if (kept_.size() > kKept) kept_.pop_back();
  return snapshot;
}

}  // namespace tailsweep
