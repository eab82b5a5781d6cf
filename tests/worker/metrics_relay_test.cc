// The relay against real files in a temporary directory: each test asserts
// the batches it holds after each step with one comparison.

#include "worker/metrics_relay.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;

std::string Line(int64_t step, double loss = 0.5) {
  StepMetrics m;
  m.step = step;
  m.loss = loss;
  m.attention_entropy = {1.0};
  m.attention_max_weight = {0.5};
  return MetricsLine(m);  // 7 points
}

class MetricsRelayTest : public ::testing::Test {
 protected:
  MetricsRelayTest() {
    spdlog::set_level(spdlog::level::off);
    dir_ =
        (std::filesystem::path(::testing::TempDir()) /
         absl::StrCat(
             "relay_test_",
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
            .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/metrics.jsonl";
  }
  ~MetricsRelayTest() override { std::filesystem::remove_all(dir_); }

  void Append(const std::string& text) {
    std::ofstream(path_, std::ios::app) << text;
  }
  // "seq=N steps=A-B points=P" for each unacknowledged batch, and whether
  // the file was read to its end: "end" or "more".
  std::string Held(const MetricsRelay& relay) {
    // The relay hands out only its front; copy it to look at every batch.
    MetricsRelay copy = relay;
    Strings out;
    while (copy.has_unacked()) {
      const MetricsBatch& b = copy.front();
      out.push_back(
          absl::StrCat("seq=", b.seq, " steps=", b.points.front().step, "-",
                       b.points.back().step, " points=", b.points.size()));
      copy.PopFront();
    }
    out.push_back(relay.read_to_end() ? "end" : "more");
    return absl::StrJoin(out, ", ");
  }

  std::string dir_, path_;
  LocalJobFiles files_;
};

TEST_F(MetricsRelayTest, HoldsAtMostTheBoundAndReadsTheRestLater) {
  MetricsRelay relay(&files_, path_, "job", /*max_batch_points=*/14,
                     /*max_unacked_batches=*/2);
  for (int step = 1; step <= 7; ++step) Append(Line(step) + "\n");
  Strings seen;
  relay.Fill();
  seen.push_back(Held(relay));
  relay.Fill();  // full: reads nothing
  seen.push_back(Held(relay));
  relay.PopFront();
  relay.Fill();
  seen.push_back(Held(relay));
  relay.PopFront();
  relay.PopFront();
  relay.Fill();
  seen.push_back(Held(relay));
  EXPECT_EQ(seen, (Strings{"seq=1 steps=1-2 points=14, seq=2 steps=3-4 "
                           "points=14, more",
                           "seq=1 steps=1-2 points=14, seq=2 steps=3-4 "
                           "points=14, more",
                           "seq=2 steps=3-4 points=14, seq=3 steps=5-6 "
                           "points=14, more",
                           "seq=4 steps=7-7 points=7, end"}));
}

TEST_F(MetricsRelayTest, HalfWrittenLineWaitsTornLineIsSkippedRewriteRereads) {
  MetricsRelay relay(&files_, path_, "job", 5000, 16);
  Strings seen;
  relay.Fill();  // no file yet
  seen.push_back(Held(relay));
  const std::string one = Line(1);
  Append(one.substr(0, 10));
  relay.Fill();
  seen.push_back(Held(relay));
  Append(one.substr(10) + "\n{\"step\": 2, \"lo\n" + Line(3) + "\n");
  relay.Fill();
  seen.push_back(Held(relay));
  relay.PopFront();
  // A resumed job rewrites the file through a rename (another inode).
  { std::ofstream(path_ + ".new") << Line(1) << "\n" << Line(2) << "\n"; }
  std::filesystem::rename(path_ + ".new", path_);
  relay.Fill();
  seen.push_back(Held(relay));
  EXPECT_EQ(seen, (Strings{"end", "end", "seq=1 steps=1-3 points=14, end",
                           "seq=2 steps=1-2 points=14, end"}));
}

TEST_F(MetricsRelayTest, NonFiniteValuesAndResultPointsTravelAsTheyAre) {
  MetricsRelay relay(&files_, path_, "job", 5000, 16);
  Append(Line(1, std::nan("")) + "\n");
  relay.Fill();
  relay.AddBatch({{"eval/ratio_mean", 1, 0.75}});
  Strings points;
  while (relay.has_unacked()) {
    for (const MetricPoint& p : relay.front().points) {
      points.push_back(absl::StrCat(relay.front().seq, " ", p.name, "@", p.step,
                                    "=", p.value));
    }
    relay.PopFront();
  }
  EXPECT_EQ(points, (Strings{"1 loss@1=nan", "1 lr@1=0", "1 grad_norm@1=0",
                             "1 spread_ratio@1=0", "1 step_seconds@1=0",
                             "1 attention_entropy/0@1=1",
                             "1 attention_max_weight/0@1=0.5",
                             "2 eval/ratio_mean@1=0.75"}));
}

}  // namespace
}  // namespace tailsweep
