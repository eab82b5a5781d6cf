#include "coordinator/read_lane.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tailsweep {
namespace {

long ThreadId() { return syscall(SYS_gettid); }
int Nice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(ThreadId())); }

TEST(ReadLaneTest, WorkRunsOnALaneThreadAtALowerPriority) {
  ReadLane lane(1, 10);
  long tid = 0;
  int nice = 0;
  lane.Run([&] {
    tid = ThreadId();
    nice = Nice();
  });
  EXPECT_NE(tid, ThreadId());
  EXPECT_EQ(nice, std::min(19, Nice() + 10));
  EXPECT_EQ(Nice(), Nice());  // the caller's own stays as it was
}

TEST(ReadLaneTest, WithNoThreadsWorkRunsOnTheCaller) {
  ReadLane lane(0, 10);
  long tid = 0;
  lane.Run([&] { tid = ThreadId(); });
  EXPECT_EQ(tid, ThreadId());
}

TEST(ReadLaneTest, EveryCallRunsOnceAndReturnsAfterItRan) {
  std::atomic<int> runs{0};
  {
    ReadLane lane(2, 5);
    std::vector<std::thread> callers;
    for (int c = 0; c < 8; ++c) {
      callers.emplace_back([&] {
        for (int i = 0; i < 200; ++i) {
          int seen = -1;
          lane.Run([&] { seen = ++runs; });
          ASSERT_GT(seen, 0);  // written before Run returned
        }
      });
    }
    for (std::thread& t : callers) t.join();
  }
  EXPECT_EQ(runs.load(), 8 * 200);
}

TEST(ReadLaneTest, WorkWaitsWhileAWorkersCallIsInFlight) {
  ReadLane lane(1, 0, std::chrono::minutes(1));
  std::atomic<bool> ran{false};
  std::thread reader;
  {
    ReadLane::WorkerCall lease(lane);
    reader = std::thread([&] { lane.Run([&] { ran = true; }); });
    while (lane.yields() == 0) std::this_thread::yield();
    EXPECT_FALSE(ran.load());  // the lane waits for the call, not a clock
  }
  reader.join();  // the call has ended: the work runs
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(lane.yields(), 1);
}

TEST(ReadLaneTest, WorkersCallsHoldAReadUpToMaxYieldOnly) {
  ReadLane lane(1, 0, std::chrono::milliseconds(1));
  ReadLane::WorkerCall endless(lane);  // in flight throughout
  int runs = 0;
  for (int i = 0; i < 3; ++i) lane.Run([&] { ++runs; });
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(lane.yields(), 3);
}

TEST(ReadLaneTest, WithNoThreadsAWorkersCallHoldsNothing) {
  ReadLane lane(0, 0, std::chrono::minutes(1));
  ReadLane::WorkerCall lease(lane);
  bool ran = false;
  lane.Run([&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(lane.yields(), 0);
}

}  // namespace
}  // namespace tailsweep
