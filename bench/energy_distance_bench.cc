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
#include <vector>

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
  CLI::App app{"Tiled vs naive 2-D energy distance: time and peak memory"};
  bench::CommonFlags common;
  bench::AddCommonFlags(app, &common);
  std::vector<int64_t> sizes = {4096, 16384};
  app.add_option("--sizes", sizes, "Point counts N")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 40))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const int reps = common.reps;
  SetComputeThreads(common.threads);
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
