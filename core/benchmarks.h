#ifndef TAILSWEEP_CORE_BENCHMARKS_H_
#define TAILSWEEP_CORE_BENCHMARKS_H_

// The named benchmarks of `lab bench` (the sealed yardstick, docs/cli.md):
// what defines a benchmark's held-out instances (operator, marginal, points
// per ensemble, at least so many instances and reference trials, the
// default instance prior and batch), a name and a hash of that definition,
// and the sealed seed its instances are drawn from: derived from a secret
// the judged program never sees (a seed file) and the hash, never from the
// config's public eval_seed. Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job_config.h"

namespace tailsweep {

struct Benchmark {
  std::string name;  // "sheared_swap/mirrored_pareto/n512"
  OperatorKind op;
  MarginalFamily marginal;
  int64_t n_points;
  int64_t min_instances;         // eval_instances at least
  int64_t min_reference_trials;  // reference_trials at least
};

// Every named benchmark: each valid operator x marginal at the CPU runs'
// size (512 points, 16 instances) and the paper's (16384 points, 64).
const std::vector<Benchmark>& Benchmarks();

// The named benchmark `config` asks for (its operator, marginal and
// n_points), with its eval_instances and reference_trials at least the
// benchmark's and the default instance prior; else InvalidArgument saying
// what differs and which benchmarks there are.
absl::StatusOr<Benchmark> BenchmarkOf(const JobConfig& config);
absl::StatusOr<Benchmark> BenchmarkNamed(const std::string& name);

// The config a benchmark's instances are drawn with: the defaults, its
// operator, marginal and n_points, `instances` and `reference_trials`
// (nothing else of a caller's config changes what is drawn).
JobConfig BenchmarkConfig(const Benchmark& b, int64_t instances,
                          int64_t reference_trials);

// 16 hex digits of the SHA-256 of the definition BenchmarkConfig draws by
// (name, operator, marginal, n_points, instances, reference trials, batch,
// prior): what a verdict names.
std::string BenchmarkHash(const Benchmark& b, int64_t instances,
                          int64_t reference_trials);

// The seed of its held-out instances under `secret` (a seed file's text).
uint64_t SealedSeed(const std::string& secret, const std::string& hash);

// The secret in `path`, made (64 random hex digits, mode 0600, its
// directory made) when the file does not exist. Errors name the path.
absl::StatusOr<std::string> LoadOrMakeSecret(const std::string& path);
// The default seed file: $XDG_DATA_HOME/tailsweep/bench-seed, else
// $HOME/.local/share/tailsweep/bench-seed.
std::string DefaultSecretPath();
// 16 hex digits that tell one secret from another without giving it away.
std::string SecretFingerprint(const std::string& secret);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_BENCHMARKS_H_
