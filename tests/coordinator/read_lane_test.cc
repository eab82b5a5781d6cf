#include "coordinator/read_lane.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

}  // namespace
}  // namespace tailsweep
