// Checkpoint transfers run off the worker's loop (worker.h): a transfer
// that takes long, here one the test holds until a moment of the fake clock
// (tests/testing/fake_task_runner.h), delays no heartbeat, and the job it
// belongs to waits for it before it starts or is reported.

#include <algorithm>

#include "absl/strings/match.h"
#include "tests/worker/worker_fixture.h"

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;

class WorkerTransfers : public WorkerFixture {
 protected:
  WorkerTransfers() {
    options_.lease_ms = 3000;  // renewed every second
    stamps_ = true;
    tasks_ = &held_tasks_;
  }
  // The calls whose text holds one of `words`.
  Strings Only(std::initializer_list<const char*> words) const {
    Strings out;
    for (const std::string& c : calls_) {
      if (std::any_of(words.begin(), words.end(),
                      [&](const char* w) { return absl::StrContains(c, w); })) {
        out.push_back(c);
      }
    }
    return out;
  }
};

// Job a's checkpoint 2 goes up at t=200 and the upload takes until t=5000,
// longer than the lease: both jobs' leases are renewed meanwhile on time
// (job b runs in the other slot), a finishes at t=400 but is completed only
// once its upload is over.
TEST_F(WorkerTransfers, ASlowUploadDelaysNoHeartbeatAndItsReportWaits) {
  options_.slots_per_device = 2;
  // Transfers 1 and 2 are the downloads of a and b; 3 is a's upload.
  held_tasks_.hold = [](int n) { return n == 3; };
  clock_.At(5000, [this] { held_tasks_.RunHeld(); });
  Offer({{Lease("a", 1),
          Lease("b", 1, {{"steps", "60"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  EXPECT_EQ(
      Only({"Heartbeat", "Upload", "Complete", "Release"}),
      (Strings{
          "t=1000 Heartbeat job=a epoch=1", "t=1000 Heartbeat job=b epoch=1",
          "t=2000 Heartbeat job=a epoch=1", "t=2000 Heartbeat job=b epoch=1",
          "t=3000 Heartbeat job=a epoch=1", "t=3000 Heartbeat job=b epoch=1",
          "t=4000 Heartbeat job=a epoch=1", "t=4000 Heartbeat job=b epoch=1",
          "t=5000 UploadCheckpoint step=2", "t=5000 Heartbeat job=a epoch=1",
          "t=5000 Heartbeat job=b epoch=1", "t=5000 UploadCheckpoint step=4",
          "t=5000 CompleteJob", "t=6000 Heartbeat job=b epoch=1",
          "t=6000 CompleteJob"}));
}

// The download before job a starts takes until t=2500: its lease is
// renewed meanwhile and its child starts only then.
TEST_F(WorkerTransfers, ASlowDownloadKeepsTheLeaseAndTheChildWaits) {
  clock_.At(2500, [this] { held_tasks_.RunHeld(); });
  Offer({{Lease("a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  EXPECT_EQ(Only({"Heartbeat", "Download", "start", "Complete"}),
            (Strings{"t=1000 Heartbeat job=a epoch=1",
                     "t=2000 Heartbeat job=a epoch=1",
                     "t=2500 DownloadCheckpoint job=a: NOT_FOUND", "start a",
                     "t=2700 CompleteJob"}));
}

// Shut down while job a's download is in flight: the download is
// cancelled (its task, run at t=1600, makes no call), the child never
// starts, and the lease is given back rather than left to expire.
TEST_F(WorkerTransfers, AJobStoppedBeforeItStartsIsReleased) {
  options_.exit_when_idle = false;
  clock_.At(1500, [this] { stop_ = SIGTERM; });
  clock_.At(1600, [this] { held_tasks_.RunHeld(); });
  Offer({{Lease("a", 1)}});
  RunWorker();
  EXPECT_EQ(Only({"Download", "start", "Release", "Complete"}),
            (Strings{"t=1600 ReleaseJob reason=preempted (SIGTERM)"}));
}

}  // namespace
}  // namespace tailsweep
