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
// each pass; the binary carries AVX-512 and AVX2+FMA versions chosen at
// run time (their last bits differ from the baseline version's; one machine
// always gives the same bits). Per score, the forward pass evaluates one exp
// (and for log one log), as does the backward pass, as softmax's do.
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

// The backward pass's tile: phi[i] = phi(s[i]) and s[i] = phi'(s[i]), from
// one exp (and one log) per score. REQUIRES: kernel is not softmax; s and
// phi do not overlap.
void KernelTilePhiAndDerivative(AttentionKernel kernel, float* s, float* phi,
                                int64_t count);

// ds = phi'(s) (g - shift) once phi' is known: for each row r and column c,
// g[r][c] = (g[r][c] - shift[r]) * factor[r][c]. Any kernel.
// REQUIRES: factor and g do not overlap.
void TileShiftedProduct(const float* factor, const float* shift, float* g,
                        int64_t rows, int64_t cols);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_KERNEL_TILE_H_
