// Issue 28 as a user runs it, with real processes: a spec overridden on the
// command line, a boundary sweep whose later rounds the coordinator adds by
// itself, early stopping, and what `results` and `status` say about them.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "tests/testing/cluster.h"
#include "tests/testing/tiny_spec.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

using nlohmann::json;

class BoundaryE2E : public ::testing::Test, public testing::Cluster {
 protected:
  BoundaryE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_boundary_") {}
};

TEST_F(BoundaryE2E, TheCoordinatorAddsEachRoundUntilEveryCellEnds) {
  StartCoordinator();
  StartWorker("w");
  // Tiny runs at learning rates from harmless to wild; each run ends at its
  // collapse onset (stop_after_collapse=0, given as an override).
  const std::string spec = dir_ + "/b.yaml";
  std::ofstream(spec) << TinySpec("b", "  kernel: [softmax, log]\n",
                                  {{"steps", "30"}})
                      << "search:\n  key: lr\n  range: [1e-3, 1]\n"
                         "  seeds: 4\n  extra_seeds: 0\n  max_probes: 5\n"
                         "  tolerance: 0.5\n";
  testing::CommandResult submitted;
  ASSERT_TRUE(testing::WaitUntil([&] {
    submitted = Cli("submit " + spec + " stop_after_collapse=0 name=b2");
    return submitted.exit_code == 0;
  })) << submitted.err;
  EXPECT_NE(submitted.out.find("sweep b2: 16 jobs added"), std::string::npos)
      << submitted.out;
  // Done when no cell searches any more (the coordinator adds each round
  // as the last one's results come in).
  json cells;
  ASSERT_TRUE(testing::WaitUntil([&] {
    const testing::CommandResult r = Cli("results b2 --format json");
    if (r.exit_code != 0) return false;
    cells = json::parse(r.out, nullptr, false);
    if (!cells.is_array() || cells.empty()) return false;
    for (const json& c : cells) {
      if (c["state"] == "searching") return false;
    }
    return true;
  })) << cells.dump(2);
  ASSERT_EQ(cells.size(), 2u);
  int64_t runs = 0;
  for (const json& c : cells) {
    const std::set<std::string> ended = {"found", "out of probes",
                                         "below range", "above range"};
    EXPECT_TRUE(ended.count(c["state"].get<std::string>())) << c.dump();
    EXPECT_GE(c["probes"].size(), 2u) << c.dump();
    EXPECT_LE(c["probes"].size(), 5u) << c.dump();
    for (const json& p : c["probes"]) EXPECT_EQ(p["n"], 4) << c.dump();
    runs += c["runs"].get<int64_t>();
  }
  // Every run the searches spent is a job of the sweep, each once.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM sweep_jobs JOIN sweeps "
                  "USING (sweep_id) WHERE name = 'b2'"),
            runs);
  // The stored spec says what the command line changed.
  EXPECT_NE(QueryText("SELECT spec FROM sweeps WHERE name = 'b2'")
                .find("overrides: [stop_after_collapse=0, name=b2]"),
            std::string::npos);
  // The table of boundaries, and the ordinary one per probe point.
  const testing::CommandResult table = Cli("results b2");
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("where 'collapsed' flips along lr"),
            std::string::npos)
      << table.out;
  const testing::CommandResult probes = Cli("results b2 --probes");
  EXPECT_EQ(probes.exit_code, 0) << probes.err;
  EXPECT_NE(probes.out.find("lr=0.001"), std::string::npos) << probes.out;
  // Runs that collapsed stopped there (K = 0) and say so in their result;
  // status counts them with the steps they did not run.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results WHERE "
                  "json_extract(result, '$.collapse_step') < 30 AND "
                  "json_extract(result, '$.steps_done') > "
                  "json_extract(result, '$.collapse_step')"),
            0);
  const int64_t early = Query(
      "SELECT COUNT(*) FROM results WHERE json_extract(result, "
      "'$.early_stop') IS NOT NULL");
  const json status =
      json::parse(Cli("status b2 --format json").out, nullptr, false);
  ASSERT_TRUE(status.is_object());
  EXPECT_EQ(status["runs_stopped_early"], early);
  if (early > 0) {
    EXPECT_GT(status["steps_saved"].get<int64_t>(), 0);
    EXPECT_NE(probes.out.find("~"), std::string::npos) << probes.out;
  }
}

}  // namespace
}  // namespace tailsweep
