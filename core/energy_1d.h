#ifndef TAILSWEEP_CORE_ENERGY_1D_H_
#define TAILSWEEP_CORE_ENERGY_1D_H_

// One-dimensional distances between samples, exact, by sorting. Torch-free.
//
// The energy distance here is the squared V-statistic with p = 1 of
// science.md section 4; in 1-D it equals 2 * integral (F_n - G_m)^2, which a
// merge of the sorted samples computes exactly in O(n + m).

#include <cstdint>
#include <vector>

namespace tailsweep {

// REQUIRES: x (n values) and y (m values) sorted ascending, n, m >= 1.
double EnergyDistance1DSorted(const double* x, int64_t n, const double* y,
                              int64_t m);

// Sorts copies of x and y and calls EnergyDistance1DSorted.
// REQUIRES: both non-empty.
double EnergyDistance1D(std::vector<double> x, std::vector<double> y);

// Unbiased (U-statistic) energy distance between two pools:
//   2/(n m) sum_ij |a_i - b_j| - 1/(n(n-1)) sum_{i!=i'} |a_i - a_i'|
//                              - 1/(m(m-1)) sum_{j!=j'} |b_j - b_j'|.
// Its expectation is 0 when both pools come from one law; estimates can be
// negative. O((n + m) log(n + m)). REQUIRES: n, m >= 2.
double UnbiasedEnergyDistance1D(std::vector<double> a, std::vector<double> b);

// Empirical 2-Wasserstein distance between equal-size samples:
// sqrt(mean_i (x_(i) - y_(i))^2). REQUIRES: both sorted ascending, n >= 1.
double Wasserstein2Sorted(const double* x, const double* y, int64_t n);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_ENERGY_1D_H_
