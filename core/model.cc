#include "core/model.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/symlog.h"

namespace tailsweep {

absl::Status ModelOptions::Validate() const {
  const std::pair<const char*, int64_t> sizes[] = {
      {"layers", layers},
      {"d_model", d_model},
      {"heads", heads},
      {"ffn_multiple", ffn_multiple}};
  for (const auto& [name, value] : sizes) {
    if (value < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must be >= 1 (got ", value, ")"));
    }
  }
  if (d_model % heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "heads (", heads, ") must divide d_model (", d_model, ")"));
  }
  if (attention.query_tile < 1 || attention.key_tile < 1) {
    return absl::InvalidArgumentError("attention tiles must be >= 1");
  }
  return absl::OkStatus();
}

at::ScalarType ModelScalarType(Precision precision) {
  switch (precision) {
    case Precision::kFloat64:
      return at::kDouble;
    case Precision::kBFloat16:
      return at::kBFloat16;
    case Precision::kFloat32:
    case Precision::kTF32:
      break;
  }
  return at::kFloat;
}

at::ScalarType LossScalarType(Precision precision) {
  return precision == Precision::kFloat64 ? at::kDouble : at::kFloat;
}

double ModelOptions::ResidualScale() const {
  return norm == NormPlacement::kPost ? std::pow(2.0 * layers, 0.25) : 1.0;
}

double ModelOptions::InitGain() const {
  return norm == NormPlacement::kPost ? std::pow(8.0 * layers, -0.25) : 1.0;
}

namespace {

torch::nn::Linear XavierLinear(int64_t in, int64_t out, double gain) {
  torch::nn::Linear layer(torch::nn::LinearOptions(in, out));
  torch::nn::init::xavier_normal_(layer->weight, gain);
  torch::nn::init::zeros_(layer->bias);
  return layer;
}

}  // namespace

KernelSelfAttentionImpl::KernelSelfAttentionImpl(const ModelOptions& options)
    : options_(options) {
  const int64_t d = options.d_model;
  query = register_module("query", XavierLinear(d, d, 1.0));
  key = register_module("key", XavierLinear(d, d, 1.0));
  value = register_module("value", XavierLinear(d, d, options.InitGain()));
  output = register_module("output", XavierLinear(d, d, options.InitGain()));
}

torch::Tensor KernelSelfAttentionImpl::forward(
    const torch::Tensor& x, std::vector<AttentionStats>* stats) {
  const int64_t b = x.size(0), n = x.size(1);
  const int64_t h = options_.heads, dh = options_.d_model / h;
  auto heads = [&](const torch::Tensor& t) {
    return t.view({b, n, h, dh}).transpose(1, 2);  // [B, H, N, dh]
  };
  const torch::Tensor q = heads(query(x)), k = heads(key(x));
  if (stats != nullptr) {
    stats->push_back(
        SampleAttentionStats(q, k, options_.kernel, options_.stats_queries));
  }
  const torch::Tensor attended =
      options_.naive_attention
          ? NaiveKernelAttention(q, k, heads(value(x)), options_.kernel)
          : KernelAttention(q, k, heads(value(x)), options_.kernel,
                            options_.attention);
  return output(attended.transpose(1, 2).reshape({b, n, options_.d_model}));
}

AttentionStats KernelSelfAttentionImpl::Stats(const torch::Tensor& x) {
  const int64_t b = x.size(0), n = x.size(1);
  const int64_t h = options_.heads, dh = options_.d_model / h;
  auto heads = [&](const torch::Tensor& t) {
    return t.view({b, n, h, dh}).transpose(1, 2);  // [B, H, N, dh]
  };
  return SampleAttentionStats(heads(query(x)), heads(key(x)), options_.kernel,
                              options_.stats_queries);
}

TransformerBlockImpl::TransformerBlockImpl(const ModelOptions& options)
    : options_(options), alpha_(options.ResidualScale()) {
  const int64_t d = options.d_model, width = options.ffn_multiple * d;
  attention = register_module("attention", KernelSelfAttention(options));
  ffn_in =
      register_module("ffn_in", XavierLinear(d, width, options.InitGain()));
  ffn_out =
      register_module("ffn_out", XavierLinear(width, d, options.InitGain()));
  norm1 = register_module(
      "norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  norm2 = register_module(
      "norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
}

torch::Tensor TransformerBlockImpl::forward(
    const torch::Tensor& x, std::vector<AttentionStats>* stats) {
  auto ffn = [&](const torch::Tensor& t) {
    return ffn_out(torch::nn::functional::gelu(ffn_in(t)));
  };
  if (options_.norm == NormPlacement::kPre) {
    const torch::Tensor y = x + attention->forward(norm1(x), stats);
    return y + ffn(norm2(y));
  }
  const torch::Tensor y = norm1(alpha_ * x + attention->forward(x, stats));
  return norm2(alpha_ * y + ffn(y));
}

PointTransformerImpl::PointTransformerImpl(const ModelOptions& options)
    : options_(options) {
  embed = register_module("embed", XavierLinear(2, options.d_model, 1.0));
  unembed = register_module("unembed", XavierLinear(options.d_model, 2, 1.0));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.layers; ++i) {
    blocks->push_back(TransformerBlock(options));
  }
  if (options.norm == NormPlacement::kPre) {
    final_norm = register_module(
        "final_norm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.d_model})));
  }
}

torch::Tensor PointTransformerImpl::forward(
    const torch::Tensor& points, std::vector<AttentionStats>* stats) {
  torch::Tensor x = embed(options_.symlog ? Symlog(points) : points);
  for (const auto& block : *blocks) {
    x = block->as<TransformerBlock>()->forward(x, stats);
  }
  if (final_norm) x = final_norm(x);
  const torch::Tensor out = unembed(x);
  return options_.symlog ? InverseSymlog(out) : out;
}

AttentionStats PointTransformerImpl::FirstLayerAttentionStats(
    const torch::Tensor& points) {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = embed(options_.symlog ? Symlog(points) : points);
  auto* first = (*blocks)[0]->as<TransformerBlock>();
  // What the first block's attention sees (TransformerBlockImpl::forward).
  return first->attention->Stats(
      options_.norm == NormPlacement::kPre ? first->norm1(x) : x);
}

}  // namespace tailsweep
