// Search beyond grids (search_space.h) and sweep control keys
// (sweep_control.h): samples drawn deterministically within their
// distributions, Sobol's stratification, zip axes, and the errors a user
// sees for bad input.

#include "core/schema/search_space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/schema/submission.h"
#include "core/schema/sweep_control.h"
#include "core/schema/sweep_spec.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

constexpr char kHead[] = "name: s\nkind: command\ncommand: [prog]\n";

absl::StatusOr<std::vector<JobSpec>> JobsOf(const std::string& body) {
  absl::StatusOr<SweepSpec> spec =
      ParseSweepSpec(std::string(kHead) + body, "s.yaml");
  if (!spec.ok()) return spec.status();
  return ExpandSweep(*spec);
}

std::string ErrorOf(const std::string& body) {
  absl::StatusOr<SweepSpec> spec =
      ParseSweepSpec(std::string(kHead) + body, "s.yaml");
  return spec.ok() ? "parsed" : std::string(spec.status().message());
}

std::string Param(const JobSpec& job, const std::string& key) {
  for (const auto& [k, v] : job.params) {
    if (k == key) return v;
  }
  return "";
}

double Number(const std::string& text) {
  double v = NAN;
  EXPECT_TRUE(absl::SimpleAtod(text, &v)) << text;
  return v;
}

constexpr char kRandom[] =
    "method: random\n"
    "parameters:\n"
    "  lr: {min: 1.0e-4, max: 1.0, log: true}\n"
    "  width: {min: 8, max: 64, int: true}\n"
    "  drop: {min: 0, max: 0.5, q: 0.1}\n"
    "  act: {values: [relu, gelu]}\n"
    "run_cap: 200\n"
    "grid: {seed: [0, 1]}\n";

TEST(SearchSpace, RandomDrawsRunCapRunsEachSampleOnEverySeed) {
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, JobsOf(kRandom));
  ASSERT_EQ(jobs.size(), 200u);
  std::set<std::string> ids, samples;
  std::map<std::string, int> seeds_per_sample;
  std::set<std::string> acts;
  for (const JobSpec& j : jobs) {
    ids.insert(j.id);
    const double lr = Number(Param(j, "lr"));
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1.0);
    const std::string width = Param(j, "width");
    EXPECT_EQ(width.find('.'), std::string::npos) << width;
    EXPECT_GE(Number(width), 8);
    EXPECT_LE(Number(width), 64);
    const double drop = Number(Param(j, "drop"));
    EXPECT_NEAR(drop * 10, std::round(drop * 10), 1e-9) << drop;
    EXPECT_LE(drop, 0.5);
    acts.insert(Param(j, "act"));
    const std::string sample =
        Param(j, "lr") + Param(j, "width") + Param(j, "drop") + Param(j, "act");
    samples.insert(sample);
    ++seeds_per_sample[sample];
    // The sample's keys first, then the grid's.
    ASSERT_EQ(j.cell.size(), 5u);
    EXPECT_EQ(j.cell[0].first, "lr");
    EXPECT_EQ(j.cell[4].first, "seed");
  }
  EXPECT_EQ(ids.size(), 200u);
  EXPECT_EQ(samples.size(), 100u);
  for (const auto& [sample, n] : seeds_per_sample) EXPECT_EQ(n, 2) << sample;
  EXPECT_EQ(acts, (std::set<std::string>{"relu", "gelu"}));
  // The same spec draws the same samples: the same ids.
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> again, JobsOf(kRandom));
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].id, again[i].id);
  // Another seed draws others.
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> other,
                          JobsOf(std::string(kRandom) + "sample_seed: 5\n"));
  EXPECT_NE(jobs[0].id, other[0].id);
}

TEST(SearchSpace, TheSubmittedTextRecordsTheSeedOfTheDraw) {
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec spec, ParseSweepSpec(std::string(kHead) + kRandom, "s.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(Submission sub,
                          PrepareSubmission(spec, "s.yaml", {}, std::nullopt));
  EXPECT_NE(
      sub.spec.text.find(absl::StrCat("sample_seed: ", DefaultSampleSeed("s"))),
      std::string::npos)
      << sub.spec.text;
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> before, ExpandSweep(spec));
  ASSERT_EQ(before.size(), sub.jobs.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].id, sub.jobs[i].id);
  }
}

TEST(SearchSpace, LogUniformSpreadsOverDecades) {
  Distribution d;
  d.min = 1e-4;
  d.max = 1;
  d.log = true;
  int below = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    if (Number(SampleText(d, (i + 0.5) / n)) < 1e-2) ++below;
  }
  EXPECT_NEAR(below, n / 2, 2);  // half the range in log space
}

TEST(SearchSpace, SobolPointsStratifyEachDimension) {
  // Every dimension of a Sobol sequence is a (0, m, 1)-net: the first 2^m
  // points put one point in each interval [k/2^m, (k+1)/2^m).
  const int m = 8;
  const auto points = SobolPoints(kMaxSobolDimensions, 1 << m);
  for (int d = 0; d < kMaxSobolDimensions; ++d) {
    std::set<uint32_t> cells;
    for (const auto& p : points) cells.insert(p[d] >> (32 - m));
    EXPECT_EQ(cells.size(), 1u << m) << "dimension " << d;
  }
  // The first points in Gray-code order, as scipy's qmc.Sobol(2,
  // scramble=False) draws them: (0, 0), (1/2, 1/2), (3/4, 1/4), (1/4, 3/4).
  EXPECT_EQ(points[1][0], 0x80000000u);
  EXPECT_EQ(points[2][0], 0xC0000000u);
  EXPECT_EQ(points[3][0], 0x40000000u);
  EXPECT_EQ(points[1][1], 0x80000000u);
  EXPECT_EQ(points[2][1], 0x40000000u);
  EXPECT_EQ(points[3][1], 0xC0000000u);
  // Two dimensions together: the first 4 points of dims 1 and 2 take one
  // quadrant each.
  std::set<std::pair<uint32_t, uint32_t>> quadrants;
  for (int i = 0; i < 4; ++i) {
    quadrants.insert({points[i][0] >> 31, points[i][1] >> 31});
  }
  EXPECT_EQ(quadrants.size(), 4u);
}

TEST(SearchSpace, ScrambledSobolKeepsStratificationAndVariesWithTheSeed) {
  SearchSpace space;
  space.method = SearchMethod::kSobol;
  space.parameters = {{"x", {{}, 0, 1}}, {"y", {{}, 0, 1}}};
  space.sample_seed = 11;
  const auto samples = DrawSamples(space, 64);
  std::set<int> x_cells, y_cells;
  for (const auto& s : samples) {
    x_cells.insert(static_cast<int>(Number(s[0].second) * 64));
    y_cells.insert(static_cast<int>(Number(s[1].second) * 64));
  }
  EXPECT_EQ(x_cells.size(), 64u);
  EXPECT_EQ(y_cells.size(), 64u);
  space.sample_seed = 12;
  EXPECT_NE(DrawSamples(space, 1)[0], samples[0]);
}

TEST(SearchSpace, ADrivenMethodExpandsNothingAndNeedsAMetric) {
  TS_ASSERT_OK_AND_ASSIGN(
      std::vector<JobSpec> jobs,
      JobsOf("method: tpe\nparameters: {lr: {min: 0.1, max: 1}}\n"
             "metric: {name: loss, goal: minimize}\ngrid: {}\n"));
  EXPECT_TRUE(jobs.empty());
  EXPECT_NE(ErrorOf("method: tpe\nparameters: {lr: {min: 0.1, max: 1}}\n"
                    "grid: {}\n")
                .find("s.yaml:4:9: method tpe needs 'metric"),
            std::string::npos)
      << ErrorOf("method: tpe\nparameters: {lr: {min: 0.1, max: 1}}\n");
}

TEST(SearchSpace, ZipAxesVaryTogetherBeforeTheGrid) {
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs,
                          JobsOf("zip: {lr: [0.1, 0.01], warmup: [10, 100]}\n"
                                 "grid: {seed: [0, 1]}\n"
                                 "exclude: [{lr: 0.01, seed: 1}]\n"));
  std::vector<std::string> cells;
  for (const JobSpec& j : jobs) {
    cells.push_back(Param(j, "lr") + "/" + Param(j, "warmup") + "/" +
                    Param(j, "seed"));
  }
  EXPECT_EQ(cells,
            (std::vector<std::string>{"0.1/10/0", "0.1/10/1", "0.01/100/0"}));
}

TEST(SearchSpace, TheStoredSpecParsesBackToTheSameJobs) {
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec spec,
                          ParseSweepSpec(std::string(kHead) + kRandom +
                                             "zip: {a: [1, 2], b: [3, 4]}\n"
                                             "priority: 5\nmax_running: 3\n"
                                             "timeout_s: 90\nmax_failures: 2\n"
                                             "tags: {team: vision}\n"
                                             "notes: a note\n"
                                             "stop: {rule: asha, metric: "
                                             "loss, min_steps: 10}\n",
                                         "s.yaml"));
  const std::string yaml = SweepSpecYaml(spec);
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec back, ParseSweepSpec(yaml, "stored"));
  EXPECT_EQ(back.space.sample_seed, spec.space.sample_seed);
  EXPECT_EQ(*back.control.priority, 5);
  EXPECT_EQ(*back.control.max_running, 3);
  EXPECT_EQ(*back.control.timeout_s, 90);
  EXPECT_EQ(*back.control.max_failures, 2);
  EXPECT_EQ(back.control.tags[0].second, "vision");
  EXPECT_EQ(*back.control.notes, "a note");
  EXPECT_EQ(back.control.asha->reduction, 3);
  EXPECT_EQ(AshaFromJson(AshaJson(back.control.asha))->min_steps, 10);
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> a, ExpandSweep(spec));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> b, ExpandSweep(back));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].id, b[i].id);
}

TEST(SearchSpace, OverridesRefuseDrawnAndZippedKeys) {
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec spec, ParseSweepSpec(std::string(kHead) + kRandom, "s.yaml"));
  EXPECT_NE(ApplyOverrides(spec, {"lr=0.1"})
                .status()
                .message()
                .find("drawn by method random"),
            std::string::npos);
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec fixed, ApplyOverrides(spec, {"seed=3"}));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(fixed));
  EXPECT_EQ(jobs.size(), 200u);  // run_cap runs, each on the one seed
}

TEST(SearchSpace, BadInputIsAnErrorAtItsPlace) {
  const std::string p = "method: random\nrun_cap: 10\ngrid: {}\nparameters:\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {p + "  lr: {min: 1, max: 1}\n",
       "s.yaml:8:13: parameter 'lr': min (1) must be below max (1)"},
      {p + "  lr: {min: 0, max: 1, log: true}\n",
       "s.yaml:8:13: parameter 'lr': a log range must stay above 0 (min is 0)"},
      {p + "  n: {min: 0.2, max: 0.8, int: true}\n",
       "parameter 'n': no whole number lies in [0.2, 0.8]"},
      {p + "  lr: {min: 0, max: 1, step: 2}\n",
       "s.yaml:8:24: parameter 'lr': unknown key 'step'; allowed: values, "
       "min, max, log, int, q"},
      {p + "  lr: [1, 2]\n", "parameter 'lr' must be a distribution"},
      {"method: random\nrun_cap: 100001\nparameters: {lr: {min: 0, max: 1}}\n",
       "s.yaml:5:10: 'run_cap' '100001': allowed: a whole number from 1 to "
       "100000"},
      {"method: random\nrun_cap: 3\ngrid: {seed: [0, 1]}\n"
       "parameters: {lr: {min: 0, max: 1}}\n",
       "run_cap 3 must be a multiple of the 2 grid cells"},
      {"method: random\nparameters: {lr: {min: 0, max: 1}}\n",
       "method random needs 'run_cap'"},
      {"method: bayes\ngrid: {}\n", "method 'bayes'; allowed: grid, random"},
      {"grid: {}\nparameters: {lr: {min: 0, max: 1}}\n",
       "'parameters' needs a search method"},
      {"method: random\nrun_cap: 2\ngrid: {lr: [1]}\n"
       "parameters: {lr: {min: 0, max: 1}}\n",
       "parameter 'lr' is already in 'grid'"},
      {"zip: {a: [1, 2], b: [1]}\ngrid: {}\n",
       "s.yaml:4:18: zip key 'b' has 1 values but 'a' has 2"},
      {"grid: {}\npriority: 5000\n", "s.yaml:5:11: 'priority'"},
      {"grid: {}\ntags: {'bad key': x}\n", "tag key 'bad key'"},
      {"grid: {}\ntimeout_s: 0\n", "'timeout_s' is seconds per attempt"},
      {"grid: {}\nstop: {rule: hyperband, metric: loss, min_steps: 1}\n",
       "stop rule 'hyperband'; allowed: asha"},
      {"grid: {}\nstop: {rule: asha, metric: loss, min_steps: 1, "
       "reduction: 1}\n",
       "'reduction'"},
      {"grid: {}\nmetric: {name: loss, goal: lowest}\n",
       "goal 'lowest'; allowed: minimize, maximize"},
  };
  for (const auto& [body, want] : cases) {
    const std::string got = ErrorOf(body);
    EXPECT_NE(got.find(want), std::string::npos)
        << body << "\nwant: " << want << "\ngot:  " << got;
  }
}

}  // namespace
}  // namespace tailsweep
