// `tailsweep export` and `snapshot` read by pandas and sqlite3 (Debian's
// python3-pandas), as a user would: each export of a finished train sweep (2
// kernels x 2 seeds) and a tails sweep loads with read_csv /
// read_json(lines=True), with the expected columns, types and row counts.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/testing/cluster.h"
#include "tests/testing/run_command.h"
#include "tests/testing/tiny_spec.h"

namespace tailsweep {
namespace {

using testing::RunCommand;

// Checks one export: /usr/bin/python3 (Debian's, which python3-pandas
// serves, whatever else is first on PATH) CHECK FILE FORMAT ROWS COLUMN...
// exits 0 when pandas reads ROWS rows holding every COLUMN, and prints what it
// read.
constexpr char kCheck[] = R"(import sys
import pandas as pd
path, fmt, rows, columns = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
df = pd.read_csv(path) if fmt == "csv" else pd.read_json(path, lines=True)
print(len(df), "rows;", ", ".join(f"{c}:{t}" for c, t in df.dtypes.items()))
missing = [c for c in columns if c not in df.columns]
if len(df) != rows or missing:
    sys.exit(f"read {len(df)} rows (want {rows}); missing columns {missing}")
for c in ("ratio_median", "final_loss", "value", "ed_noise", "attempt"):
    if c in df.columns and not pd.api.types.is_numeric_dtype(df[c]):
        sys.exit(f"column {c} is {df[c].dtype}, not numeric")
)";

class ExportE2E : public ::testing::Test, public testing::Cluster {
 protected:
  ExportE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_export_") {
    std::ofstream(dir_ + "/check.py") << kCheck;
  }
  // Exports, then checks the file with pandas.
  void ExpectExport(const std::string& sweep, const std::string& what,
                    const std::string& format, int64_t rows,
                    const std::string& columns) {
    const std::string out =
        absl::StrCat(dir_, "/", sweep, "-", what, ".", format);
    const testing::CommandResult r =
        Cli(absl::StrCat("export ", sweep, " --what ", what, " --format ",
                         format, " --out ", out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
    const testing::CommandResult check =
        RunCommand(absl::StrCat("/usr/bin/python3 ", dir_, "/check.py ", out,
                                " ", format, " ", rows, " ", columns));
    EXPECT_EQ(check.exit_code, 0)
        << what << " " << format << ": " << check.out << check.err;
  }
};

TEST_F(ExportE2E, EveryExportLoadsInPandasWithItsColumnsAndRows) {
  StartCoordinator();
  StartWorker("w");
  Submit(TinySpec("ex", "  kernel: [softmax, log]\n  seed: [0, 1]\n",
                  {{"steps", "10"}}));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4));
  const std::string tails = dir_ + "/tails.yaml";
  std::ofstream(tails) << R"(name: tx
kind: tails
grid:
  seed: [0]
fixed:
  seam: 0.9
  n: 1024
  indices: "1.4:1.6:0.1"
  trials: 4
)";
  ASSERT_EQ(Cli("submit " + tails).exit_code, 0);
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 5));

  const int64_t points = Query(
      "SELECT COUNT(*) FROM metrics WHERE job_id IN (SELECT job_id FROM "
      "sweep_jobs JOIN sweeps USING (sweep_id) WHERE name = 'ex')");
  ASSERT_GT(points, 4 * 2);
  for (const std::string format : {"csv", "jsonl"}) {
    ExpectExport("ex", "jobs", format, 4,
                 "job_id state attempt epoch params_kernel params_seed");
    ExpectExport("ex", "results", format, 4,
                 "job_id params_kernel params_seed params_d_model "
                 "params_steps final_loss ratio_median collapsed steps_done");
    ExpectExport("ex", "metrics", format, points,
                 "job_id params_kernel params_seed name step value");
    // One row per testbed row: 3 indices at one seam and budget.
    ExpectExport("tx", "results", format, 3,
                 "job_id params_seed seam n index ed_noise w2_noise");
  }
  // Typed columns: the seed is a number, the kernel text, booleans are
  // true/false.
  const std::string csv = testing::ReadFile(dir_ + "/ex-results.csv");
  EXPECT_NE(csv.find("softmax"), std::string::npos);
  EXPECT_EQ(csv.find("\"softmax\""), std::string::npos);
  EXPECT_NE(csv.find("false"), std::string::npos);

  // A snapshot of sweep ex, taken while the coordinator runs: only its
  // rows, all of them, and queryable with the same SQL.
  const std::string snap = dir_ + "/ex.db";
  const testing::CommandResult taken =
      Cli(absl::StrCat("snapshot ex --db ", dir_, "/db --out ", snap));
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  const auto in_copy = [&](const std::string& sql) {
    return RunCommand(absl::StrCat("sqlite3 ", snap, " \"", sql, "\"")).out;
  };
  EXPECT_EQ(in_copy("SELECT name FROM sweeps"), "ex\n");
  EXPECT_EQ(in_copy("SELECT COUNT(*) FROM jobs"), "4\n");
  EXPECT_EQ(in_copy("SELECT COUNT(*) FROM results"), "4\n");
  EXPECT_EQ(in_copy("SELECT COUNT(*) FROM metrics"),
            absl::StrCat(points, "\n"));
  EXPECT_EQ(in_copy("PRAGMA integrity_check"), "ok\n");
  const testing::CommandResult again =
      Cli(absl::StrCat("snapshot ex --db ", dir_, "/db --out ", snap));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("never overwritten"), std::string::npos);
  const testing::CommandResult none = Cli(
      absl::StrCat("snapshot nope --db ", dir_, "/db --out ", dir_, "/n.db"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no sweep 'nope'; sweeps: ex, tx"), std::string::npos)
      << none.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/n.db"));

  // An unknown sweep is bad input (exit 2), and writes no file.
  const testing::CommandResult unknown =
      Cli("export nope --out " + dir_ + "/nope.csv");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("sweeps: ex, tx"), std::string::npos)
      << unknown.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/nope.csv"));
}

}  // namespace
}  // namespace tailsweep
