#ifndef TAILSWEEP_TESTS_TESTING_BRUTE_FORCE_H_
#define TAILSWEEP_TESTS_TESTING_BRUTE_FORCE_H_

// Plain all-pairs formulas, written as directly as possible, that the
// optimised code is checked against. Row-major [n, d] points.

#include <cmath>
#include <cstdint>
#include <vector>

namespace tailsweep::testing {

inline double Distance(const double* a, const double* b, int64_t d) {
  double s = 0;
  for (int64_t k = 0; k < d; ++k) s += (a[k] - b[k]) * (a[k] - b[k]);
  return std::sqrt(s);
}

inline double MeanDistance(const std::vector<double>& x,
                           const std::vector<double>& y, int64_t d) {
  const int64_t n = x.size() / d, m = y.size() / d;
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) total += Distance(&x[i * d], &y[j * d], d);
  }
  return total / (static_cast<double>(n) * m);
}

// The V-statistic energy distance of science.md section 4.
inline double BruteForceEnergy(const std::vector<double>& x,
                               const std::vector<double>& y, int64_t d) {
  return 2 * MeanDistance(x, y, d) - MeanDistance(x, x, d) -
         MeanDistance(y, y, d);
}

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_BRUTE_FORCE_H_
