#include "core/schema/sweep_spec.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

const std::string kSweeps = std::string(TAILSWEEP_SOURCE_DIR) + "/sweeps/";

TEST(SweepSpec, ShippedSpecsExpandToTheirJobs) {
  for (const auto& [file, count] : std::vector<std::pair<std::string, size_t>>{
           {"paper.yaml", 48},
           {"smoke.yaml", 48},
           {"tails.yaml", 15},
           {"repro-cpu.yaml", 84},
           {"beyond-cpu.yaml", 12},
           {"boundary-lr-cpu.yaml", 32}}) {
    TS_ASSERT_OK_AND_ASSIGN(SweepSpec spec, LoadSweepSpec(kSweeps + file));
    TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(spec));
    EXPECT_EQ(jobs.size(), count) << file;
    std::set<std::string> ids;
    for (const JobSpec& j : jobs) {
      EXPECT_EQ(j.id.size(), 64u);
      ids.insert(j.id);
    }
    EXPECT_EQ(ids.size(), jobs.size()) << file << ": ids collide";
  }
}

// sweeps/repro-cpu.yaml runs as three parts: together they are its jobs,
// each once (the same ids, so the whole adds nothing after the parts).
TEST(SweepSpec, TheReproductionsPartsAreItsJobsEachOnce) {
  auto ids_of = [](const std::string& file) {
    std::multiset<std::string> ids;
    absl::StatusOr<SweepSpec> spec = LoadSweepSpec(kSweeps + file);
    EXPECT_TRUE(spec.ok()) << file << ": " << spec.status();
    if (!spec.ok()) return ids;
    absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
    EXPECT_TRUE(jobs.ok()) << file << ": " << jobs.status();
    if (jobs.ok()) {
      for (const JobSpec& j : *jobs) ids.insert(j.id);
    }
    return ids;
  };
  std::multiset<std::string> parts;
  for (const char* part : {"repro-cpu-1-post.yaml", "repro-cpu-2-symlog.yaml",
                           "repro-cpu-3-controls.yaml"}) {
    const std::multiset<std::string> ids = ids_of(part);
    EXPECT_GT(ids.size(), 0u) << part;
    parts.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(parts, ids_of("repro-cpu.yaml"));
}

constexpr char kBase[] = R"(name: s
kind: train
grid:
  kernel: [softmax, log]
  norm: [post, pre]
exclude:
  - {kernel: log, norm: pre}
fixed:
  steps: 20
  warmup: 2
)";

TEST(SweepSpec, SameSpecSameJobsAndAnExtendedGridAddsOnlyNewCells) {
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec a, ParseSweepSpec(kBase, "a.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> first, ExpandSweep(a));
  ASSERT_EQ(first.size(), 3u);  // 4 cells, one excluded
  EXPECT_EQ(first[0].cell,
            (KeyValues{{"kernel", "softmax"}, {"norm", "post"}}));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> again, ExpandSweep(a));
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].id, again[i].id);

  std::string extended = kBase;
  extended.replace(extended.find("[softmax, log]"), 14,
                   "[softmax, log, linear]");
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec b, ParseSweepSpec(extended, "b.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> more, ExpandSweep(b));
  ASSERT_EQ(more.size(), 5u);
  std::set<std::string> old_ids;
  for (const JobSpec& j : first) old_ids.insert(j.id);
  size_t kept = 0;
  for (const JobSpec& j : more) kept += old_ids.count(j.id);
  EXPECT_EQ(kept, 3u);
  // The id covers the full assignment, defaults included (save keys added
  // since ids were first issued, job_config.h).
  EXPECT_EQ(first[0].params.size(), 26u);
  EXPECT_EQ(first[0].id, ContentHash(first[0].params));
}

// Job ids are how a resubmitted spec finds its jobs in an existing database:
// they must not change between builds. These were issued before eval_every
// existed (a key added since is left out at its default).
TEST(SweepSpec, JobIdsAreStableAcrossBuilds) {
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec spec,
      ParseSweepSpec("name: golden\ngrid: {kernel: [softmax, log]}\n"
                     "fixed: {steps: 10, warmup: 0}\n",
                     "g.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(spec));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id,
            "6f54b30ba50680397b69346f4ce562d36e56b81fbaef49b86309dfdbfa07ad22");
  EXPECT_EQ(jobs[1].id,
            "bb2aaddeb4f79681f71a4e4e8685e65a8e764b375d9c9793776bc57522e76884");

  // A job that uses the new key is a different job.
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec evaluated,
      ParseSweepSpec("name: golden\ngrid: {kernel: [softmax, log]}\n"
                     "fixed: {steps: 10, warmup: 0, eval_every: 10}\n",
                     "g.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> other, ExpandSweep(evaluated));
  EXPECT_NE(other[0].id, jobs[0].id);
}

TEST(SweepSpec, ErrorsNameFilePositionKeyAndAllowedValues) {
  struct Case {
    std::string text;
    std::string mentions;
  };
  for (const Case& c : std::vector<Case>{
           {"name: s\ngrid:\n  kernal: [log]\n",
            "f.yaml:3:3: unknown key 'kernal'; allowed: operator"},
           {"name: s\ngrid:\n  kernel: [log, relu]\n",
            "f.yaml:3:17: key 'kernel': unknown kernel 'relu'; allowed: "
            "softmax"},
           {"name: s\ngrid:\n  kernel: [log, log]\n", "lists 'log' twice"},
           {"name: s\ngrid:\n  kernel: log\n", "needs a non-empty list"},
           {"name: s\ngrid:\n  kernel: []\n", "needs a non-empty list"},
           {"name: s\ngrid:\n  steps: [0]\n", "key 'steps'"},
           {"name: s\ngrids:\n  kernel: [log]\n",
            "f.yaml:2:1: unknown top-level key 'grids'; allowed: name, kind"},
           {"name: s\nkind: sweep\ngrid:\n  kernel: [log]\n",
            "f.yaml:2:7: kind 'sweep'; allowed: train, tails"},
           {"grid:\n  kernel: [log]\n", "missing 'name'"},
           {"name: a b\ngrid:\n  kernel: [log]\n", "name 'a b'"},
           {"name: s\n", "missing 'grid'"},
           {"name: s\ngrid:\n  kernel: [log\n", "f.yaml:"},
           {"name: s\ngrid:\n  kernel: [log]\nexclude:\n  - {norm: pre}\n",
            "exclude key 'norm' is not a grid key; allowed: kernel"},
           {"name: s\ngrid:\n  kernel: [log]\nexclude:\n  - {kernel: linear}\n",
            "exclude value 'linear' for 'kernel' is not in the grid; allowed: "
            "log"},
           {"name: s\ngrid:\n  kernel: [log]\nfixed:\n  kernel: softmax\n",
            "both in 'grid' and in 'fixed'"},
           {"name: s\ngrid:\n  kernel: [log]\nfixed:\n  lr: fast\n",
            "f.yaml:5:3: key 'lr': bad value 'fast'"},
           {"name: s\nkind: tails\ngrid:\n  seam: [1.5]\n",
            "allowed: a number in (0, 1)"},
       }) {
    auto spec = ParseSweepSpec(c.text, "f.yaml");
    TS_EXPECT_CODE(spec, absl::StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find(c.mentions), std::string::npos)
        << c.text << "\n"
        << spec.status();
  }
  TS_EXPECT_CODE(LoadSweepSpec("/nonexistent.yaml"),
                 absl::StatusCode::kNotFound);
}

// yaml-cpp keeps both pairs of a key named twice; the spec must not pick
// one silently, wherever the mapping is.
TEST(SweepSpec, DuplicateKeysAnywhereAreErrorsAtTheSecondOne) {
  struct Case {
    std::string text;
    std::string mentions;
  };
  for (const Case& c : std::vector<Case>{
           {"name: s\ngrid:\n  kernel: [log]\nname: t\n",
            "f.yaml:4:1: duplicate key 'name' in the spec (first at line 1, "
            "column 1)"},
           {"name: s\ngrid:\n  kernel: [log]\ngrid:\n  kernel: [linear]\n",
            "f.yaml:4:1: duplicate key 'grid' in the spec"},
           {"name: s\ngrid:\n  kernel: [log]\n  norm: [pre]\n  kernel: "
            "[linear]\n",
            "f.yaml:5:3: duplicate key 'kernel' in 'grid' (first at line 3, "
            "column 3)"},
           {"name: s\ngrid:\n  kernel: [log]\nfixed:\n  steps: 10\n  "
            "steps: 20\n",
            "f.yaml:6:3: duplicate key 'steps' in 'fixed'"},
           {"name: s\ngrid:\n  kernel: [log, linear]\nexclude:\n  - "
            "{kernel: log, kernel: linear}\n",
            "f.yaml:5:19: duplicate key 'kernel' in an 'exclude' entry"},
       }) {
    auto spec = ParseSweepSpec(c.text, "f.yaml");
    TS_EXPECT_CODE(spec, absl::StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find(c.mentions), std::string::npos)
        << c.text << "\n"
        << spec.status();
  }
}

TEST(SweepSpec, UnidentifiableCellMustBeExcluded) {
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec spec,
      ParseSweepSpec("name: s\ngrid:\n  operator: [matrix_inverse]\n"
                     "  marginal: [gaussian, mirrored_pareto]\n",
                     "f.yaml"));
  auto jobs = ExpandSweep(spec);
  TS_EXPECT_CODE(jobs, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(
      jobs.status().message().find("operator=matrix_inverse marginal=gaussian"),
      std::string::npos)
      << jobs.status();
  EXPECT_NE(jobs.status().message().find("add the cell to 'exclude'"),
            std::string::npos);
}

// Command-line overrides (ApplyOverrides): a list widens the grid, a
// scalar fixes a key, and the changed spec round-trips through its YAML
// with the overrides recorded.
TEST(SpecOverrides, AListWidensTheGridAndAScalarFixesAKey) {
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec base,
                          LoadSweepSpec(kSweeps + "smoke.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec spec,
      ApplyOverrides(base, {"lr=1e-3", "kernel=softmax,log", "steps=[50,100]",
                            "symlog=false", "name=smoke-r2"}));
  EXPECT_EQ(spec.name, "smoke-r2");
  auto axis = [&](const std::string& key) {
    for (const auto& [k, v] : spec.grid)
      if (k == key) return v;
    return std::vector<std::string>{};
  };
  auto fixed = [&](const std::string& key) {
    for (const auto& [k, v] : spec.fixed)
      if (k == key) return v;
    return std::string("(none)");
  };
  EXPECT_EQ(axis("kernel"), (std::vector<std::string>{"softmax", "log"}));
  EXPECT_EQ(axis("steps"), (std::vector<std::string>{"50", "100"}));
  EXPECT_EQ(fixed("steps"), "(none)");
  EXPECT_EQ(fixed("lr"), "1e-3");
  EXPECT_EQ(fixed("symlog"), "false");
  EXPECT_TRUE(axis("symlog").empty());
  // The kernel axis keeps its place; the new one goes last.
  EXPECT_EQ(spec.grid.back().first, "steps");
  EXPECT_EQ(spec.overrides,
            (std::vector<std::string>{"lr=1e-3", "kernel=softmax,log",
                                      "steps=[50,100]", "symlog=false",
                                      "name=smoke-r2"}));
  // What the coordinator parses is this spec, overrides included.
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec again, ParseSweepSpec(spec.text, "sent"));
  EXPECT_EQ(again.grid, spec.grid);
  EXPECT_EQ(again.fixed, spec.fixed);
  EXPECT_EQ(again.exclude, spec.exclude);
  EXPECT_EQ(again.overrides, spec.overrides);
  // 2 operators x 2 marginals (less the excluded pair) x 2 kernels x 2
  // norms x 1 seed x 2 step counts.
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(spec));
  EXPECT_EQ(jobs.size(), 3u * 2 * 2 * 2);
}

TEST(SpecOverrides, ExcludesThatCanNoLongerMatchAreDropped) {
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec base,
                          LoadSweepSpec(kSweeps + "smoke.yaml"));
  // Its exclude names operator=matrix_inverse: gone with the value.
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec one,
                          ApplyOverrides(base, {"operator=sheared_swap"}));
  EXPECT_TRUE(one.exclude.empty());
  // Fixed at the excluded value: the entry keeps its other key.
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec two,
                          ApplyOverrides(base, {"operator=matrix_inverse"}));
  ASSERT_EQ(two.exclude.size(), 1u);
  EXPECT_EQ(two.exclude[0], (KeyValues{{"marginal", "gaussian"}}));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(two));
  EXPECT_EQ(jobs.size(), 1u * 4 * 2 * 2);  // mirrored_pareto only
  // Then fixing the other key too would exclude every cell: refused.
  const absl::Status all =
      ApplyOverrides(base, {"operator=matrix_inverse", "marginal=gaussian"})
          .status();
  EXPECT_EQ(all.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(all.message().find("exclude every cell"), std::string::npos) << all;
}

TEST(SpecOverrides, BadOverridesNameTheWordTheKeyAndWhatIsAllowed) {
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec base,
                          LoadSweepSpec(kSweeps + "smoke.yaml"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"lr", "override 'lr': expected KEY=VALUE"},
      {"=3", "override '=3': expected KEY=VALUE"},
      {"lr=", "override 'lr=': no value for 'lr'"},
      {"learning_rate=1e-3", "override 'learning_rate=1e-3': "},
      {"kernel=softmax,cosine", "override 'kernel=softmax,cosine': "},
      {"kernel=log,log", "lists 'log' twice"},
      {"kind=tails", "'kind' cannot be overridden"},
      {"name=a b", "name: allowed"},
      {"lr=fast", "override 'lr=fast': "},
  };
  for (const auto& [word, expected] : cases) {
    const absl::Status s = ApplyOverrides(base, {word}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << word;
    EXPECT_NE(s.message().find(expected), std::string::npos)
        << word << " -> " << s;
  }
  // The schema's message for an unknown key lists the allowed ones.
  const absl::Status unknown =
      ApplyOverrides(base, {"learning_rate=1e-3"}).status();
  EXPECT_NE(unknown.message().find("kernel"), std::string::npos) << unknown;
  // Every grid key fixed: a sweep needs one axis.
  SweepSpec one_axis = base;
  one_axis.grid = {{"seed", {"0", "1"}}};
  one_axis.exclude.clear();
  const absl::Status empty = ApplyOverrides(one_axis, {"seed=3"}).status();
  EXPECT_NE(empty.message().find("seed=[3]"), std::string::npos) << empty;
  TS_EXPECT_OK(ApplyOverrides(one_axis, {"seed=[3]"}));
}

}  // namespace
}  // namespace tailsweep
