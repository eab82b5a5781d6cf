#ifndef TAILSWEEP_CORE_SCHEMA_SEARCH_SPACE_H_
#define TAILSWEEP_CORE_SCHEMA_SEARCH_SPACE_H_

// Search beyond grids: how a spec's jobs are chosen (sweeps/README.md,
// "Search methods"). In the spec:
//   method: random        # grid (the default) | random | sobol: the
//                         # coordinator draws the samples itself;
//                         # tpe | cmaes | qmc | nsgaii: an Optuna study run
//                         # by `tailsweep optimize` adds the jobs
//   parameters:           # the space, one distribution per key
//     lr:    {min: 1e-4, max: 1, log: true}   # log-uniform
//     width: {min: 8, max: 64, int: true}     # whole numbers (log allowed)
//     drop:  {min: 0, max: 0.5, q: 0.1}       # on a step of q from min
//     act:   {values: [relu, gelu]}           # one of the values
//   run_cap: 200          # runs in all: samples x the grid's cells
//   sample_seed: 7        # the draw's seed; default from the sweep's name,
//                         # written into the stored spec
//   metric: {name: loss, goal: minimize}      # what a study optimizes
// The grid's axes (e.g. seed: [0, 1]) are crossed with every sample, so
// each sample runs on each seed. The same spec always draws the same
// samples, so jobs keep their content-hash ids and a resubmit adds nothing.
// Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tailsweep {

enum class SearchMethod { kGrid, kRandom, kSobol, kDriven };

// One key's distribution. `values` set: one of them, uniformly. Else a
// number in [min, max]: uniform, or uniform in log space (`log`), whole
// numbers only (`integer`), or on the steps min + k*q (`q` > 0).
struct Distribution {
  std::vector<std::string> values;
  double min = 0, max = 0;
  bool log = false;
  bool integer = false;
  double q = 0;
};

struct SearchParameter {
  std::string key;
  Distribution distribution;
};

struct MetricGoal {
  std::string name;
  bool maximize = false;
};

struct SearchSpace {
  SearchMethod method = SearchMethod::kGrid;
  // The method as the spec names it ("grid", "random", "sobol", "tpe", ...).
  std::string method_name = "grid";
  std::vector<SearchParameter> parameters;
  int64_t run_cap = 0;  // 0: unset (a driven study's default)
  uint64_t sample_seed = 0;
  bool sample_seed_given = false;  // by the spec's text (else the default)
  std::optional<MetricGoal> metric;
};

// The methods, for messages: "grid, random, sobol, tpe, cmaes, qmc, nsgaii".
std::string SearchMethodNames();
// Sobol draws at most this many parameters (its direction numbers).
inline constexpr int kMaxSobolDimensions = 21;

// `count` samples of the space, in draw order: each the parameters' values
// as job key text (whole numbers as integers, others to 6 significant
// digits). Random: a counter-based generator seeded by sample_seed; sobol:
// a scrambled Sobol sequence (a random linear matrix scramble and digital
// shift of Joe and Kuo's direction numbers, as scipy's qmc.Sobol does),
// seeded the same way. Deterministic on every platform.
std::vector<std::vector<std::pair<std::string, std::string>>> DrawSamples(
    const SearchSpace& space, int64_t count);

// The first `count` points of the unscrambled Sobol sequence in `dims`
// dimensions (point 0 is the origin), as 32-bit integers: for tests.
std::vector<std::vector<uint32_t>> SobolPoints(int dims, int64_t count);

// A parameter's value `u` in [0, 1) mapped through its distribution, as
// DrawSamples writes it.
std::string SampleText(const Distribution& d, double u);

// The default sample_seed of a sweep: from its name.
uint64_t DefaultSampleSeed(absl::string_view sweep_name);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SEARCH_SPACE_H_
