#ifndef TAILSWEEP_CORE_MODEL_H_
#define TAILSWEEP_CORE_MODEL_H_

// The point-set transformer of science.md section 5: affine R^2 -> R^d,
// L blocks of kernel attention and a GELU feed-forward network, affine
// R^d -> R^2; no positional encoding, so it is permutation-equivariant.
//
// Post-norm (the paper's main setting): x = LN(alpha x + Attn(x)), then
// x = LN(alpha x + FFN(x)), with DeepNet's alpha = (2L)^(1/4) and Xavier
// gain beta = (8L)^(-1/4) on the value, output and FFN projections.
// Pre-norm: x = x + Attn(LN(x)), x = x + FFN(LN(x)), and a final LN.
// With symlog the predictor is InverseSymlog . f . Symlog.
//
// Modules follow the LibTorch frontend: FooOptions + FooImpl +
// TORCH_MODULE(Foo); the device is chosen by the caller with ->to(device).

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/kernel_attention.h"
#include "core/model_kinds.h"

namespace tailsweep {

// The tensor type of a precision: the model's parameters and activations.
at::ScalarType ModelScalarType(Precision precision);
// Where the loss and the metrics are computed: the model's type, or float32
// for bfloat16.
at::ScalarType LossScalarType(Precision precision);

struct ModelOptions {
  int64_t layers = 6;        // L. Default: 6.
  int64_t d_model = 256;     // d. Default: 256.
  int64_t heads = 8;         // must divide d_model. Default: 8.
  int64_t ffn_multiple = 4;  // FFN width = ffn_multiple * d. Default: 4.
  AttentionKernel kernel = AttentionKernel::kSoftmax;
  NormPlacement norm = NormPlacement::kPost;
  bool symlog = false;
  AttentionOptions attention;  // tiling only; no effect on values
  // Benchmarks only: materialise the N x N weights (NaiveKernelAttention)
  // instead of tiling. Default: false.
  bool naive_attention = false;
  // Queries per head sampled for AttentionStats. Default: 32.
  int64_t stats_queries = 32;

  // InvalidArgument naming the field for a non-positive size or heads that
  // do not divide d_model.
  absl::Status Validate() const;
  // DeepNet's residual scale alpha (1 for pre-norm) and Xavier gain beta.
  double ResidualScale() const;
  double InitGain() const;
};

// Multi-head kernel attention with its four projections.
class KernelSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit KernelSelfAttentionImpl(const ModelOptions& options);
  // x [B, N, d] -> [B, N, d]. Appends this layer's weight statistics to
  // `stats` when it is not null.
  torch::Tensor forward(const torch::Tensor& x,
                        std::vector<AttentionStats>* stats = nullptr);
  // Only the weight statistics forward would append, for input x.
  AttentionStats Stats(const torch::Tensor& x);

  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr},
      output{nullptr};

 private:
  ModelOptions options_;
};
TORCH_MODULE(KernelSelfAttention);

class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(const ModelOptions& options);
  torch::Tensor forward(const torch::Tensor& x,
                        std::vector<AttentionStats>* stats = nullptr);

  KernelSelfAttention attention{nullptr};
  torch::nn::Linear ffn_in{nullptr}, ffn_out{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  ModelOptions options_;
  double alpha_;
};
TORCH_MODULE(TransformerBlock);

class PointTransformerImpl : public torch::nn::Module {
 public:
  // REQUIRES: options.Validate().ok().
  explicit PointTransformerImpl(const ModelOptions& options);
  // points [B, N, 2] -> predicted points [B, N, 2]. With `stats`, also
  // one AttentionStats per layer, in order.
  torch::Tensor forward(const torch::Tensor& points,
                        std::vector<AttentionStats>* stats = nullptr);

  // The first layer's AttentionStats on `points` [B, N, 2], without
  // running the model: O(B H stats_queries N), whatever N is.
  AttentionStats FirstLayerAttentionStats(const torch::Tensor& points);

  const ModelOptions& options() const { return options_; }

  torch::nn::Linear embed{nullptr}, unembed{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};  // pre-norm only

 private:
  ModelOptions options_;
};
TORCH_MODULE(PointTransformer);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_MODEL_H_
