#ifndef TAILSWEEP_CORE_KERNEL_ATTENTION_H_
#define TAILSWEEP_CORE_KERNEL_ATTENTION_H_

// Non-causal multi-head attention with a kernel phi in place of exp
// (science.md sections 5 and 9). Per head, scores s_ij = q_i . k_j / sqrt(dh),
// weights phi(s_ij) / sum_j phi(s_ij), output sum_j w_ij v_j.
//
// The four kernels are C1, strictly positive, phi(0) = phi'(0) = 1, and equal
// exp(s) for s < 0; for s >= 0:
//   softmax   exp(s)
//   quadratic 1 + s + s^2 / 2
//   linear    1 + s
//   log       1 + log(1 + s)
// Only softmax subtracts a running row maximum (it is shift-invariant).

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "core/model_kinds.h"

namespace tailsweep {

// phi(s) and phi'(s), elementwise, without overflow in the unused branch.
at::Tensor KernelValue(AttentionKernel kernel, const at::Tensor& s);
at::Tensor KernelDerivative(AttentionKernel kernel, const at::Tensor& s);

// Off the CPU (a GPU), tiles grow from AttentionOptions' (never shrink)
// until a score tile of all B x H heads holds this many elements (1 GiB in
// float32) or covers N x M: a GPU's speed is bound by kernel launches, not
// by caches. Values do not depend on tiles beyond floating-point rounding.
inline constexpr int64_t kDeviceTileElements = int64_t{1} << 28;

struct AttentionOptions {
  // Queries per tile (on the CPU; see kDeviceTileElements). Default: 256.
  int64_t query_tile = 256;
  // Keys per tile. Default: 1024.
  int64_t key_tile = 1024;
  // Float32 CPU tiles of the slower-growing kernels through kernel_tile.h's
  // fused passes; false takes ATen's elementwise ops as other dtypes and
  // devices do (tests and benchmarks compare the two). Default: true.
  bool fused_tiles = true;
};

// q, k, v: [B, H, N, dh] (keys and values may have another length M) of one
// floating dtype and device; returns [B, H, N, dh]. Differentiable in q, k
// and v. Never materialises an N x M score or weight tensor: the forward
// pass accumulates tiles of queries against tiles of keys (keeping only the
// output and the row sums of phi), and the backward pass recomputes the
// tiles, so memory is O(B H N dh + B H query_tile key_tile).
// REQUIRES (TORCH_CHECKed): shapes as above, tiles >= 1.
at::Tensor KernelAttention(const at::Tensor& q, const at::Tensor& k,
                           const at::Tensor& v, AttentionKernel kernel,
                           const AttentionOptions& options = {});

// Statistics of the attention weights w_ij, averaged over batch and heads:
// the mean row entropy -sum_j w_ij log w_ij and the largest weight, computed
// (no grad) from the first `queries` queries of each head, so the cost is
// O(B H queries M) whatever N is. The paper asks for attention weights
// tracked around collapse; these are the numbers.
struct AttentionStats {
  double entropy = 0;
  double max_weight = 0;
  // Each sampled query's largest weight, averaged: how concentrated a
  // typical query is (1/M when uniform over M keys, 1 on one key).
  double row_max_mean = 0;
};
AttentionStats SampleAttentionStats(const at::Tensor& q, const at::Tensor& k,
                                    AttentionKernel kernel, int64_t queries);

// The same attention written the obvious way, materialising [B, H, N, M]
// scores and letting autograd differentiate it. For tests and benchmarks.
at::Tensor NaiveKernelAttention(const at::Tensor& q, const at::Tensor& k,
                                const at::Tensor& v, AttentionKernel kernel);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_KERNEL_ATTENTION_H_
