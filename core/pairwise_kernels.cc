#include "core/pairwise_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

// Compiled with -fno-math-errno (see core/CMakeLists.txt) so that sqrt
// vectorises. Each public function is cloned for AVX2 and for the baseline
// ISA; the loader picks one per machine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TAILSWEEP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TAILSWEEP_CLONES
#endif
#define TAILSWEEP_INLINE inline __attribute__((always_inline))

namespace tailsweep::pairwise {
namespace {

constexpr int64_t kChunk = 256;  // points of y per inner pass
constexpr int kLanes = 8;        // independent accumulators of a reduction

// Squared distances from xi to the points [jb, jb + len) of yt, into r.
// D > 0 fixes the dimension at compile time; D == 0 reads it from d.
template <typename T, int D>
TAILSWEEP_INLINE void SquaredDistances(const T* xi, const T* yt, int64_t d,
                                       int64_t m, int64_t jb, int64_t len,
                                       T* r) {
  const int64_t dims = D > 0 ? D : d;
  for (int64_t j = 0; j < len; ++j) r[j] = 0;
  for (int64_t k = 0; k < dims; ++k) {
    const T xk = xi[k];
    const T* yk = yt + k * m + jb;
    for (int64_t j = 0; j < len; ++j) {
      const T t = xk - yk[j];
      r[j] += t * t;
    }
  }
}

// Sum of r[0, len) in double, in a fixed order.
template <typename T>
TAILSWEEP_INLINE double SumInOrder(const T* r, int64_t len) {
  double lanes[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(r[j + l]);
  }
  double total = 0;
  for (; j < len; ++j) total += static_cast<double>(r[j]);
  for (int l = 0; l < kLanes; ++l) total += lanes[l];
  return total;
}

template <typename T, int D>
TAILSWEEP_INLINE double SumDistancesImpl(const T* x, const T* yt, int64_t d,
                                         int64_t m, int64_t i0, int64_t i1,
                                         bool upper) {
  alignas(64) T r[kChunk];
  const int64_t dims = D > 0 ? D : d;
  double total = 0;
  for (int64_t i = i0; i < i1; ++i) {
    const T* xi = x + i * dims;
    for (int64_t jb = upper ? i + 1 : 0; jb < m; jb += kChunk) {
      const int64_t len = std::min(kChunk, m - jb);
      SquaredDistances<T, D>(xi, yt, dims, m, jb, len, r);
      for (int64_t j = 0; j < len; ++j) r[j] = std::sqrt(r[j]);
      total += SumInOrder(r, len);
    }
  }
  return total;
}

template <typename T, int D>
TAILSWEEP_INLINE void AddUnitVectorSumsImpl(const T* x, const T* yt, int64_t d,
                                            int64_t m, int64_t i0, int64_t i1,
                                            double weight, T* g) {
  alignas(64) T r[kChunk];
  alignas(64) T w[kChunk];
  const int64_t dims = D > 0 ? D : d;
  std::vector<double> sums(dims);
  for (int64_t i = i0; i < i1; ++i) {
    const T* xi = x + i * dims;
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t jb = 0; jb < m; jb += kChunk) {
      const int64_t len = std::min(kChunk, m - jb);
      SquaredDistances<T, D>(xi, yt, dims, m, jb, len, r);
      for (int64_t j = 0; j < len; ++j) {
        r[j] = r[j] > 0 ? T(1) / std::sqrt(r[j]) : T(0);
      }
      for (int64_t k = 0; k < dims; ++k) {
        const T xk = xi[k];
        const T* yk = yt + k * m + jb;
        for (int64_t j = 0; j < len; ++j) w[j] = (xk - yk[j]) * r[j];
        sums[k] += SumInOrder(w, len);
      }
    }
    for (int64_t k = 0; k < dims; ++k) {
      g[i * dims + k] += static_cast<T>(weight * sums[k]);
    }
  }
}

template <typename T>
TAILSWEEP_INLINE double DispatchSum(const T* x, const T* yt, int64_t d,
                                    int64_t m, int64_t i0, int64_t i1,
                                    bool upper) {
  switch (d) {
    case 1:
      return SumDistancesImpl<T, 1>(x, yt, d, m, i0, i1, upper);
    case 2:
      return SumDistancesImpl<T, 2>(x, yt, d, m, i0, i1, upper);
    case 3:
      return SumDistancesImpl<T, 3>(x, yt, d, m, i0, i1, upper);
    default:
      return SumDistancesImpl<T, 0>(x, yt, d, m, i0, i1, upper);
  }
}

template <typename T>
TAILSWEEP_INLINE void DispatchUnit(const T* x, const T* yt, int64_t d,
                                   int64_t m, int64_t i0, int64_t i1,
                                   double weight, T* g) {
  switch (d) {
    case 1:
      return AddUnitVectorSumsImpl<T, 1>(x, yt, d, m, i0, i1, weight, g);
    case 2:
      return AddUnitVectorSumsImpl<T, 2>(x, yt, d, m, i0, i1, weight, g);
    case 3:
      return AddUnitVectorSumsImpl<T, 3>(x, yt, d, m, i0, i1, weight, g);
    default:
      return AddUnitVectorSumsImpl<T, 0>(x, yt, d, m, i0, i1, weight, g);
  }
}

}  // namespace

TAILSWEEP_CLONES double SumDistances(const double* x, const double* yt,
                                     int64_t d, int64_t m, int64_t i0,
                                     int64_t i1, bool upper) {
  return DispatchSum(x, yt, d, m, i0, i1, upper);
}

TAILSWEEP_CLONES double SumDistances(const float* x, const float* yt, int64_t d,
                                     int64_t m, int64_t i0, int64_t i1,
                                     bool upper) {
  return DispatchSum(x, yt, d, m, i0, i1, upper);
}

TAILSWEEP_CLONES void AddUnitVectorSums(const double* x, const double* yt,
                                        int64_t d, int64_t m, int64_t i0,
                                        int64_t i1, double weight, double* g) {
  DispatchUnit(x, yt, d, m, i0, i1, weight, g);
}

TAILSWEEP_CLONES void AddUnitVectorSums(const float* x, const float* yt,
                                        int64_t d, int64_t m, int64_t i0,
                                        int64_t i1, double weight, float* g) {
  DispatchUnit(x, yt, d, m, i0, i1, weight, g);
}

}  // namespace tailsweep::pairwise
