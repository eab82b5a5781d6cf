// Benchmark: the tiled 2-D energy distance against a naive all-pairs version
// (torch::cdist on full matrices, what a user would write first), side by
// side in one run, in double: wall time and peak memory above baseline.
//
//   build/bin/energy_distance_bench [--sizes 4096,16384] [--reps 3] [--threads
//   T]
//
// Threads default to the machine's cores (LibTorch's OpenMP default here is 1).

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/measure.h"
#include "core/energy_distance.h"
#include "core/marginal.h"
#include "core/number_text.h"
#include "core/point_csv.h"
#include "core/sampling.h"
#include "core/threads.h"

namespace tailsweep {
namespace {

at::Tensor Points(int64_t n, uint64_t seed) {
  at::Generator gen = MakeCpuGenerator(seed);
  const Marginal m = Marginal::MirroredPareto(1.5, 1.0);
  return at::stack({SampleMarginal(m, n, gen), SampleMarginal(m, n, gen)}, 1);
}

double NaiveEnergy(const at::Tensor& x, const at::Tensor& y) {
  return (2 * at::cdist(x, y).mean() - at::cdist(x, x).mean() -
          at::cdist(y, y).mean())
      .item<double>();
}

int Main(int argc, char** argv) {
  std::vector<int64_t> sizes = {4096, 16384};
  int reps = 3;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--sizes") {
      sizes.clear();
      for (absl::string_view s : absl::StrSplit(argv[i + 1], ',')) {
        int64_t n = 0;
        if (!absl::SimpleAtoi(s, &n) || n < 2) {
          std::fprintf(stderr, "--sizes: '%s' is not an integer >= 2\n",
                       std::string(s).c_str());
          return 2;
        }
        sizes.push_back(n);
      }
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (flag == "--reps") {
      reps = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr,
                   "unknown flag %s; allowed: --sizes, --reps, --threads\n",
                   argv[i]);
      return 2;
    }
  }
  SetComputeThreads(std::max(1, threads));
  std::printf("energy distance, 2-D, double, %d threads, median of %d runs\n",
              at::get_num_threads(), reps);
  std::printf("%8s  %-7s %10s %12s %26s\n", "N", "version", "seconds",
              "peak_MiB", "value");
  for (int64_t n : sizes) {
    at::Tensor x, y;
    auto setup = [&] {
      x = Points(n, 1);
      y = Points(n, 2);
    };
    const bench::Measurement tiled = bench::MeasureInChild(
        setup, [&] { return FormatDouble(*EnergyDistance(x, y)); }, reps);
    const bench::Measurement naive = bench::MeasureInChild(
        setup, [&] { return FormatDouble(NaiveEnergy(x, y)); }, reps);
    bench::PrintComparison(n, tiled, naive);
  }
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
