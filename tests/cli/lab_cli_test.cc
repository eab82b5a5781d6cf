// End-to-end tests of `tailsweep lab ...`: the real executable (tailsweep-lab,
// which `tailsweep lab` runs), its exit codes, its files and its output
// formats.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/number_text.h"
#include "core/point_csv.h"
#include "core/schema/blas_core.h"
#include "tests/testing/run_command.h"

namespace tailsweep {
namespace {

using testing::CommandResult;
using testing::RunCommand;

CommandResult Lab(const std::string& args) {
  return RunCommand(std::string(TAILSWEEP_LAB_BIN) + " --threads 1 lab " +
                    args);
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(LabCli, HelpOnEveryCommand) {
  for (const char* sub :
       {"", "sample", "instance", "energy", "reference", "tails",
        "bench export", "bench judge", "bench list"}) {
    const CommandResult r = Lab(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
}

// The lab computes with the machine's own matrix kernels: where OpenBLAS
// does not know the CPU and falls back to its pre-AVX2 ones, the lab
// restarts itself with OPENBLAS_CORETYPE set (core/schema/blas_core.h).
// OpenBLAS says which kernels it loaded with OPENBLAS_VERBOSE=2 ("Core:
// NAME"); the last such line is the process that ran.
TEST(LabCli, RunsOnTheMachinesOwnMatrixKernels) {
  const CommandResult r =
      RunCommand("env -u OPENBLAS_CORETYPE OPENBLAS_VERBOSE=2 " +
                 std::string(TAILSWEEP_LAB_BIN) + " --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = r.out + r.err;
  const size_t last = text.rfind("Core: ");
  if (last == std::string::npos) GTEST_SKIP() << "no OpenBLAS here";
  const std::string core =
      text.substr(last + 6, text.find('\n', last) - last - 6);
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    GTEST_SKIP() << "a CPU without AVX2: " << core;
  }
  EXPECT_EQ(BlasCoreFor(core, true, true), "") << core << " kernels ran";
}

TEST(LabCli, SamplePrintsOneFullPrecisionNumberPerLineReproducibly) {
  const CommandResult a =
      Lab("sample --marginal mirrored_pareto --index 1.3 "
          "--scale 0.5 --n 50 --seed 9");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const std::vector<std::string> lines = Lines(a.out);
  ASSERT_EQ(lines.size(), 50u);
  for (const std::string& line : lines) {
    double v = 0;
    ASSERT_TRUE(absl::SimpleAtod(line, &v)) << line;
    EXPECT_EQ(FormatDouble(v), line);  // shortest round-trip form
  }
  EXPECT_EQ(Lab("sample --index 1.3 --scale 0.5 --n 50 --seed 9").out, a.out);
  const CommandResult g =
      Lab("sample --marginal gaussian --mean 2 --std 0.5 --n 7 --format json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const nlohmann::json doc = nlohmann::json::parse(g.out);
  EXPECT_EQ(doc["samples"].size(), 7u);
  EXPECT_EQ(doc["marginal"]["family"], "gaussian");
}

TEST(LabCli, BadInputExitsTwoWithOneLineNamingTheProblem) {
  struct Case {
    std::string args;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {"sample --index 0", "--index"},
      {"sample --index -2", "--index"},
      {"sample --scale 0", "--scale"},
      {"sample --marginal gaussian --std -1", "--std"},
      {"sample --marginal cauchy", "allowed: mirrored_pareto, gaussian"},
      {"sample --n 1", "--n"},
      {"sample --n lots", "--n"},
      {"instance --operator rotate --out-dir /tmp/x",
       "allowed: sheared_swap, matrix_inverse"},
      {"instance --n 1 --out-dir /tmp/x", "--n"},
      {"reference --operator nope", "allowed: sheared_swap"},
      {"reference --trials 0", "--trials"},
      {"energy /nonexistent/a.csv /nonexistent/b.csv", "/nonexistent/a.csv"},
      {"tails --index-grid 1.2:1.4:0.1", "reference index"},
      {"tails --seams 0.9,x", "--seams"},
      {"tails --budgets 1", "budget"},
      {"frobnicate", "lab commands: sample, instance"},
  };
  for (const Case& c : cases) {
    const CommandResult r = Lab(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_EQ(Lines(r.err).size(), 1u) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.mentions), std::string::npos) << c.args << "\n"
                                                         << r.err;
  }
}

class LabFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("tailsweep_lab_"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name)) << text;
  }
  std::string dir_;
};

TEST_F(LabFiles, InstanceWritesEnsemblesAndParameters) {
  const CommandResult r =
      Lab("instance --operator sheared_swap --marginal "
          "mirrored_pareto --n 300 --seed 4 --out-dir " +
          dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"input.csv", "target.csv"}) {
    auto points = ReadPointsCsv(Path(name));
    ASSERT_TRUE(points.ok()) << points.status();
    EXPECT_EQ(points->columns, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(points->rows, 300);
  }
  const nlohmann::json params =
      nlohmann::json::parse(testing::ReadFile(Path("params.json")));
  ASSERT_EQ(params["A_in"].size(), 2u);
  ASSERT_EQ(params["A_out"].size(), 2u);
  ASSERT_EQ(params["marginals"].size(), 2u);
  EXPECT_GE(params["marginals"][0]["index"].get<double>(), 1.1);
  // Sheared swap: A_out = A_in E, the columns of A_in exchanged.
  EXPECT_EQ(params["A_out"][0][0], params["A_in"][0][1]);
  EXPECT_EQ(params["A_out"][1][1], params["A_in"][1][0]);
  // Same seed, same files.
  const std::string first = testing::ReadFile(Path("input.csv"));
  ASSERT_EQ(Lab("instance --n 300 --seed 4 --out-dir " + dir_).exit_code, 0);
  EXPECT_EQ(testing::ReadFile(Path("input.csv")), first);
}

TEST_F(LabFiles, BenchExportsSealedInputsAndJudgesAnyProgramsPredictions) {
  const std::string data = Path("bench"), pred = Path("pred");
  const std::string seed = " --seed-file " + Path("secret/seed");
  const std::string sizes =
      "--set n_points=512 --set eval_instances=16 --set reference_trials=16 ";
  const CommandResult e =
      Lab("bench export " + sizes + "--out-dir " + data + seed);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  // The seed file was made, for its owner only; no targets, no seed.
  EXPECT_EQ(
      std::filesystem::status(Path("secret/seed")).permissions() &
          std::filesystem::perms::all,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_FALSE(std::filesystem::exists(data + "/target-0.csv"));
  const std::string bench_text = testing::ReadFile(data + "/bench.json");
  const nlohmann::json bench = nlohmann::json::parse(bench_text);
  EXPECT_EQ(bench["benchmark"]["name"], "sheared_swap/mirrored_pareto/n512");
  EXPECT_EQ(bench["benchmark"]["hash"].get<std::string>().size(), 16u);
  EXPECT_EQ(bench["instances"], 16);
  EXPECT_EQ(bench_text.find("eval_seed"), std::string::npos) << bench_text;
  EXPECT_GT(bench["delta"].get<double>(), 0);
  std::filesystem::create_directories(pred);
  auto judge = [&](const std::string& extra = "") {
    return Lab("bench judge --data " + data + " --predictions " + pred +
               " --out " + Path("verdict.json") + extra);
  };
  // The targets regenerated from public information (the config's
  // eval_seed, as `--debug-targets` draws them) are other instances: far
  // from 0, as any guess.
  const std::string open = Path("open");
  ASSERT_EQ(
      Lab("bench export " + sizes + "--debug-targets --out-dir " + open + seed)
          .exit_code,
      0);
  for (int k = 0; k < 16; ++k) {
    std::filesystem::copy_file(
        open + "/target-" + std::to_string(k) + ".csv",
        pred + "/prediction-" + std::to_string(k) + ".csv",
        std::filesystem::copy_options::overwrite_existing);
  }
  CommandResult j = judge(seed);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  nlohmann::json v = nlohmann::json::parse(j.out);
  EXPECT_EQ(nlohmann::json::parse(testing::ReadFile(Path("verdict.json"))), v);
  EXPECT_GT(v["eval"]["ratio_median"].get<double>(), 0.5) << v;
  EXPECT_EQ(v["benchmark"], bench["benchmark"]);
  EXPECT_EQ(v["eval_spread_threshold"], 0.25);
  EXPECT_EQ(v["ratios"].size(), 16u);
  // A debug export is never judged.
  CommandResult bad =
      Lab("bench judge --data " + open + " --predictions " + pred + seed);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("a debug export"), std::string::npos) << bad.err;
  // One point for every input point: collapsed, by its final spread.
  for (int k = 0; k < 16; ++k) {
    std::string rows;
    for (int i = 0; i < 512; ++i) rows += "0.5,-0.25\n";
    Write("pred/prediction-" + std::to_string(k) + ".csv", rows);
  }
  v = nlohmann::json::parse(judge(seed).out);
  EXPECT_EQ(v["eval_spread_collapsed"], true) << v;
  EXPECT_GT(v["eval"]["ratio_median"].get<double>(), 1.0);
  // Another seed file, an edited bench.json, sizes below the benchmark's,
  // a config that is no benchmark: refused, saying why.
  bad = judge(" --seed-file " + Path("other-seed"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no seed file"), std::string::npos) << bad.err;
  Write("other-seed", std::string(64, 'f') + "\n");
  bad = judge(" --seed-file " + Path("other-seed"));
  EXPECT_NE(bad.err.find("sealed with another seed file"), std::string::npos)
      << bad.err;
  nlohmann::json edited = bench;
  edited["config"]["eval_instances"] = 1;
  Write("bench/bench.json", edited.dump());
  bad = judge(seed);
  EXPECT_NE(bad.err.find("judges at least 16 instances"), std::string::npos)
      << bad.err;
  edited["config"]["eval_instances"] = 17;
  Write("bench/bench.json", edited.dump());
  bad = judge(seed);
  EXPECT_NE(bad.err.find("the file was changed"), std::string::npos) << bad.err;
  bad = Lab("bench export --set n_points=64 --out-dir " + Path("x") + seed);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no named benchmark is sheared_swap/mirrored_pareto "
                         "at n_points 64"),
            std::string::npos)
      << bad.err;
  bad =
      Lab("bench export --set n_points=512 --set eval_instances=3 "
          "--out-dir " +
          Path("x") + seed);
  EXPECT_NE(bad.err.find("judges at least 16 instances"), std::string::npos)
      << bad.err;
  // A wrong shape, a missing file: exit 2, one line naming the file.
  Write("bench/bench.json", bench_text);
  Write("pred/prediction-1.csv", "1,2\n3,4\n");
  bad = judge(seed);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("prediction-1.csv: 2 rows of 2 columns; expected 512"),
            std::string::npos)
      << bad.err;
  std::filesystem::remove(pred + "/prediction-1.csv");
  bad = judge(seed);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("prediction-1.csv"), std::string::npos) << bad.err;
  EXPECT_EQ(Lines(bad.err).size(), 1u) << bad.err;
}

TEST(LabCli, ConcentrationAtInitGrowsWithNForSoftmaxOnHeavyTailsOnly) {
  // The paper's mechanism (Appendix A), measured without training: on a
  // heavy-tailed input softmax's largest weight per query grows with N
  // (far above uniform 1/N); log's stays near uniform; on Gaussian inputs
  // every kernel is near uniform.
  const CommandResult r =
      Lab("concentration --n 256,4096 --kernels softmax,log --seeds 3 "
          "--set d_model=64 --set heads=4 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 8u);
  std::map<std::string, double> c;
  for (const nlohmann::json& row : rows) {
    c[absl::StrCat(row["marginal"].get<std::string>(), "/",
                   row["kernel"].get<std::string>(), "/",
                   row["n"].get<int64_t>())] = row["concentration"];
    EXPECT_LE(row["row_max_ci_low"], row["row_max_mean"]);
    EXPECT_GE(row["row_max_ci_high"], row["row_max_mean"]);
  }
  EXPECT_GT(c["mirrored_pareto/softmax/4096"],
            10 * c["mirrored_pareto/softmax/256"]);
  EXPECT_GT(c["mirrored_pareto/softmax/4096"],
            100 * c["mirrored_pareto/log/4096"]);
  EXPECT_LT(c["mirrored_pareto/log/4096"], 10);
  for (const char* k : {"softmax", "log"}) {
    EXPECT_LT(c[absl::StrCat("gaussian/", k, "/4096")], 1.5) << k;
  }
}

TEST_F(LabFiles, EnergyOfFilesInAnyDimension) {
  Write("a.csv", "1,0,0\n0,1,0\n");
  Write("b.csv", "p,q,r\n0,0,1\n");
  const CommandResult r = Lab("energy " + Path("a.csv") + " " + Path("b.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 2 sqrt(2) - (0 + sqrt(2) + sqrt(2) + 0) / 4 - 0 = 1.5 sqrt(2).
  double v = 0;
  ASSERT_TRUE(absl::SimpleAtod(Lines(r.out)[0], &v));
  EXPECT_NEAR(v, 1.5 * std::sqrt(2.0), 1e-15);
  const CommandResult same =
      Lab("energy --format json " + Path("a.csv") + " " + Path("a.csv"));
  EXPECT_NEAR(nlohmann::json::parse(same.out)["energy_distance"].get<double>(),
              0.0, 1e-15);
  Write("ragged.csv", "1,2\n3\n");
  Write("two.csv", "1,2\n");
  Write("word.csv", "x,y\n1,two\n");
  for (const auto& [args, mentions] :
       std::vector<std::pair<std::string, std::string>>{
           {Path("ragged.csv") + " " + Path("a.csv"), "ragged.csv:2"},
           {Path("word.csv") + " " + Path("a.csv"), "'two' is not a number"},
           {Path("two.csv") + " " + Path("a.csv"), "same dimension"}}) {
    const CommandResult bad = Lab("energy " + args);
    EXPECT_EQ(bad.exit_code, 2) << args;
    EXPECT_NE(bad.err.find(mentions), std::string::npos) << bad.err;
  }
}

TEST(LabCli, ReferenceJsonHasMeanAndMedian) {
  const CommandResult r =
      Lab("reference --operator matrix_inverse --marginal "
          "mirrored_pareto --n 256 --trials 5 --seed 2 "
          "--format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_GT(doc["mean"].get<double>(), 0);
  EXPECT_GT(doc["median"].get<double>(), 0);
  EXPECT_NE(r.err.find("reference: 5/5"), std::string::npos) << r.err;
}

TEST(LabCli, TailsRowsHaveTheDocumentedKeysAndShowProgress) {
  const CommandResult r =
      Lab("tails --index-grid 1.4:1.6:0.1 --seams 0.9,0.99 "
          "--budgets 256,512 --trials 3 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u * 2u * 3u);
  for (const char* key : {"seam", "n", "index", "ed_mean", "ed_sd", "w2_mean",
                          "w2_sd", "ed_noise", "w2_noise"}) {
    EXPECT_TRUE(rows[0].contains(key)) << key;
  }
  EXPECT_EQ(rows[1]["index"].get<double>(), 1.5);
  EXPECT_EQ(rows[1]["ed_noise"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("tails: 6/6"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tailsweep
