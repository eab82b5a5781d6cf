#include "core/energy_1d.h"

#include <algorithm>
#include <cmath>

namespace tailsweep {

double EnergyDistance1DSorted(const double* x, int64_t n, const double* y,
                              int64_t m) {
  // Walk the merged sample; between consecutive distinct values z_k, z_{k+1}
  // the empirical CDFs are constant at F = i/n and G = j/m.
  int64_t i = 0, j = 0;
  double previous = std::min(x[0], y[0]);
  double integral = 0;
  while (i < n || j < m) {
    const double next = j >= m || (i < n && x[i] <= y[j]) ? x[i] : y[j];
    const double diff = static_cast<double>(i) / n - static_cast<double>(j) / m;
    integral += diff * diff * (next - previous);
    while (i < n && x[i] == next) ++i;
    while (j < m && y[j] == next) ++j;
    previous = next;
  }
  return 2.0 * integral;
}

double EnergyDistance1D(std::vector<double> x, std::vector<double> y) {
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return EnergyDistance1DSorted(x.data(), static_cast<int64_t>(x.size()),
                                y.data(), static_cast<int64_t>(y.size()));
}

namespace {

// sum over i < i' of |a_i - a_i'| for sorted a.
double SortedSelfSum(const std::vector<double>& a) {
  const int64_t n = static_cast<int64_t>(a.size());
  double total = 0;
  for (int64_t k = 0; k < n; ++k) total += (2.0 * k - n + 1.0) * a[k];
  return total;
}

// sum over i, j of |a_i - b_j| for sorted a and b.
double SortedCrossSum(const std::vector<double>& a,
                      const std::vector<double>& b) {
  double b_total = 0;
  for (double v : b) b_total += v;
  double below_sum = 0;  // sum of b_j <= a_i
  size_t below = 0;
  double total = 0;
  const double m = static_cast<double>(b.size());
  for (double v : a) {
    while (below < b.size() && b[below] <= v) below_sum += b[below++];
    const double count = static_cast<double>(below);
    total += v * count - below_sum + (b_total - below_sum) - v * (m - count);
  }
  return total;
}

}  // namespace

double UnbiasedEnergyDistance1D(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double n = static_cast<double>(a.size());
  const double m = static_cast<double>(b.size());
  return 2.0 * SortedCrossSum(a, b) / (n * m) -
         2.0 * SortedSelfSum(a) / (n * (n - 1)) -
         2.0 * SortedSelfSum(b) / (m * (m - 1));
}

double Wasserstein2Sorted(const double* x, const double* y, int64_t n) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double t = x[i] - y[i];
    total += t * t;
  }
  return std::sqrt(total / n);
}

}  // namespace tailsweep
