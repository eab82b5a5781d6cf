#ifndef TAILSWEEP_CORE_PAIRWISE_KERNELS_H_
#define TAILSWEEP_CORE_PAIRWISE_KERNELS_H_

// The CPU inner loops of the energy distance: sums over point pairs on raw
// arrays, vectorised (an AVX2 clone is chosen at load time where the CPU has
// it). Torch-free; energy_distance.h tiles and parallelises them.
//
// Layouts: x is row-major [n, d]; yt is y transposed, [d, m], so that
// coordinate k of point j is yt[k * m + j]. Each call handles the rows
// i in [i0, i1) and is deterministic: the summation order depends only on
// the arguments, never on threads. Thread-safe (no shared state); calls on
// disjoint row ranges may run concurrently.

#include <cstdint>

namespace tailsweep::pairwise {

// Sum over i in [i0, i1) and j in [j_begin(i), m) of |x_i - y_j|, accumulated
// in double. j_begin(i) = 0, or i + 1 when `upper` (then y must be x: the
// strict upper triangle of the self-distance matrix).
double SumDistances(const double* x, const double* yt, int64_t d, int64_t m,
                    int64_t i0, int64_t i1, bool upper);
double SumDistances(const float* x, const float* yt, int64_t d, int64_t m,
                    int64_t i0, int64_t i1, bool upper);

// For i in [i0, i1): g_i += weight * sum_j u(x_i - y_j), u(v) = v / |v| and
// u(0) = 0. g is row-major [n, d] like x; the sums are taken in double.
void AddUnitVectorSums(const double* x, const double* yt, int64_t d, int64_t m,
                       int64_t i0, int64_t i1, double weight, double* g);
void AddUnitVectorSums(const float* x, const float* yt, int64_t d, int64_t m,
                       int64_t i0, int64_t i1, double weight, float* g);

}  // namespace tailsweep::pairwise

#endif  // TAILSWEEP_CORE_PAIRWISE_KERNELS_H_
