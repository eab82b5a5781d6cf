#ifndef TAILSWEEP_CORE_KERNEL_TILE_H_
#define TAILSWEEP_CORE_KERNEL_TILE_H_

// The elementwise work on one attention tile of the slower-growing kernels
// (quadratic, linear, log), each as one fused pass over float32 scores on
// the CPU (science.md section 9). Torch-free: plain arrays, row-major.
//
// Every kernel is phi(s) = e + g(p) with e = exp(min(s, 0)), p = max(s, 0)
// and g(0) = 0, and phi'(s) = g'(p) where p > 0, e where not:
//   quadratic: phi = e + p + p^2/2,  phi' = e + p
//   linear:    phi = e + p,          phi' = e
//   log:       phi = e + log(1 + p), phi' = 1/(1 + p) where p > 0, else e
// exp and log are evaluated branch-free with polynomial approximations
// (Cephes' single-precision ones, within 2 ulp; exp(s) below about -87.3
// gives the smallest normal float instead of 0), so the compiler vectorises
// each pass; the binary carries an AVX2 version chosen at run time.
// Softmax does not come here: it keeps ATen's exp and its running maximum.
//
// Thread-safe (no state). Results do not depend on the thread count: each
// row is summed in a fixed order.

#include <cstdint>

#include "core/model_kinds.h"

namespace tailsweep {

// s: rows x cols scores. Replaces each by phi(s) and adds each row's sum of
// phi into row_sums[row]. REQUIRES: kernel is not softmax.
void KernelTilePhiRowSums(AttentionKernel kernel, float* s, int64_t rows,
                          int64_t cols, float* row_sums);

// phi[i] = phi(s[i]) for `count` scores, leaving s as it is.
// REQUIRES: kernel is not softmax; s and phi do not overlap.
void KernelTilePhi(AttentionKernel kernel, const float* s, float* phi,
                   int64_t count);

// The backward pass's ds = phi'(s) (g - shift): for each row r and column c,
// g[r][c] = (g[r][c] - shift[r]) * phi'(s[r][c]).
// REQUIRES: kernel is not softmax; s and g do not overlap.
void KernelTileShiftedDerivative(AttentionKernel kernel, const float* s,
                                 const float* shift, float* g, int64_t rows,
                                 int64_t cols);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_KERNEL_TILE_H_
