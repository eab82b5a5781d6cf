#include "coordinator/read_lane.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <mutex>
#include <string>
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
  lane.Run(ReadLane::Kind::kView, [&] {
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
  lane.Run(ReadLane::Kind::kView, [&] { tid = ThreadId(); });
  EXPECT_EQ(tid, ThreadId());
}

TEST(ReadLaneTest, EveryCallRunsOnceAndReturnsAfterItRan) {
  std::atomic<int> runs{0};
  {
    ReadLane lane(2, 5);
    std::vector<std::thread> callers;
    for (int c = 0; c < 8; ++c) {
      const auto kind = c % 2 ? ReadLane::Kind::kView : ReadLane::Kind::kExport;
      callers.emplace_back([&, kind] {
        for (int i = 0; i < 200; ++i) {
          int seen = -1;
          lane.Run(kind, [&] { seen = ++runs; });
          ASSERT_GT(seen, 0);  // written before Run returned
        }
      });
    }
    for (std::thread& t : callers) t.join();
  }
  EXPECT_EQ(runs.load(), 8 * 200);
}

// While a lane thread runs a first call of `first`, the calls named in
// `queued` (upper case: exports, lower case: views) queue in that order;
// the order they ran in.
std::string OrderRun(ReadLane& lane, ReadLane::Kind first,
                     const std::string& queued) {
  std::mutex mu;
  std::string order;  // guarded by mu
  std::atomic<bool> running{false}, open{false};
  std::vector<std::thread> callers;
  callers.emplace_back([&] {
    lane.Run(first, [&] {
      running = true;
      while (!open) std::this_thread::yield();
    });
  });
  while (!running) std::this_thread::yield();
  for (char name : queued) {
    const auto kind =
        std::islower(name) ? ReadLane::Kind::kView : ReadLane::Kind::kExport;
    callers.emplace_back([&, kind, name] {
      lane.Run(kind, [&] {
        std::lock_guard<std::mutex> lock(mu);
        order += name;
      });
    });
    while (lane.queued() < static_cast<int64_t>(callers.size()) - 1) {
      std::this_thread::yield();
    }
  }
  open = true;
  for (std::thread& t : callers) t.join();
  return order;
}

TEST(ReadLaneTest, ViewsAndExportsTakeTurnsWhileBothWait) {
  ReadLane lane(1, 0);
  // Each kind in its order, turn about.
  EXPECT_EQ(OrderRun(lane, ReadLane::Kind::kExport, "EFGvw"), "vEwFG");
  EXPECT_EQ(OrderRun(lane, ReadLane::Kind::kView, "abCD"), "CaDb");
}

TEST(ReadLaneTest, WorkWaitsWhileAWorkersCallIsInFlight) {
  ReadLane lane(1, 0, std::chrono::minutes(1));
  std::atomic<bool> ran{false};
  std::thread reader;
  {
    ReadLane::WorkerCall lease(lane);
    reader = std::thread(
        [&] { lane.Run(ReadLane::Kind::kView, [&] { ran = true; }); });
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
  for (int i = 0; i < 3; ++i) lane.Run(ReadLane::Kind::kView, [&] { ++runs; });
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(lane.yields(), 3);
}

TEST(ReadLaneTest, ALongReadWaitsBetweenItsPiecesForWorkersCalls) {
  ReadLane lane(1, 0, std::chrono::minutes(1));
  std::atomic<int> pieces{0};
  std::atomic<bool> started{false};
  std::thread reader([&] {
    lane.Run(ReadLane::Kind::kExport, [&] {
      ++pieces;
      started = true;
      while (lane.yields() == 0) lane.YieldToWorkers();  // till the call
      ++pieces;
    });
  });
  while (!started) std::this_thread::yield();
  {
    ReadLane::WorkerCall call(lane);
    while (lane.yields() == 0) std::this_thread::yield();
    EXPECT_EQ(pieces.load(), 1);  // the second piece waits for the call
  }
  reader.join();
  EXPECT_EQ(pieces.load(), 2);
}

TEST(ReadLaneTest, WithNoThreadsAWorkersCallHoldsNothing) {
  ReadLane lane(0, 0, std::chrono::minutes(1));
  ReadLane::WorkerCall lease(lane);
  bool ran = false;
  lane.Run(ReadLane::Kind::kView, [&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(lane.yields(), 0);
}

}  // namespace
}  // namespace tailsweep
