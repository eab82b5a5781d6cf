#include "core/model.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/utils.h>

#include <cmath>

#include "core/energy_distance.h"
#include "core/symlog.h"

namespace tailsweep {
namespace {

ModelOptions Small(AttentionKernel kernel, NormPlacement norm, bool symlog) {
  ModelOptions o;
  o.layers = 2;
  o.d_model = 16;
  o.heads = 4;
  o.kernel = kernel;
  o.norm = norm;
  o.symlog = symlog;
  return o;
}

// Copies every parameter and buffer of `from` into `to` (same architecture).
void CopyWeights(PointTransformer& from, PointTransformer& to) {
  torch::NoGradGuard no_grad;
  auto src = from->named_parameters();
  for (auto& p : to->named_parameters()) p.value().copy_(src[p.key()]);
}

TEST(ModelOptions, ValidatesAndComputesDeepNetConstants) {
  ModelOptions o;
  EXPECT_TRUE(o.Validate().ok());
  EXPECT_DOUBLE_EQ(o.ResidualScale(), std::pow(12.0, 0.25));
  EXPECT_DOUBLE_EQ(o.InitGain(), std::pow(48.0, -0.25));
  o.norm = NormPlacement::kPre;
  EXPECT_DOUBLE_EQ(o.ResidualScale(), 1.0);
  o.heads = 7;
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(o.Validate().message().find("heads"), std::string::npos);
  o.heads = 8;
  o.layers = 0;
  EXPECT_NE(o.Validate().message().find("layers"), std::string::npos);
  EXPECT_FALSE(ParseNormPlacement("middle").ok());
}

TEST(PointTransformer, ShapesAndPermutationEquivarianceForEveryVariant) {
  for (AttentionKernel kernel :
       {AttentionKernel::kSoftmax, AttentionKernel::kQuadratic,
        AttentionKernel::kLinear, AttentionKernel::kLog}) {
    for (NormPlacement norm : {NormPlacement::kPost, NormPlacement::kPre}) {
      for (bool symlog : {false, true}) {
        torch::manual_seed(3);
        PointTransformer model(Small(kernel, norm, symlog));
        model->to(torch::kDouble);
        const torch::Tensor x = torch::randn({2, 30, 2}, torch::kDouble) * 3;
        const torch::Tensor y = model->forward(x);
        ASSERT_EQ(y.sizes(), x.sizes());
        EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
        const torch::Tensor perm = torch::randperm(30);
        const torch::Tensor permuted = model->forward(x.index_select(1, perm));
        EXPECT_TRUE(
            torch::allclose(permuted, y.index_select(1, perm), 1e-9, 1e-12))
            << AttentionKernelName(kernel) << " " << NormPlacementName(norm)
            << " symlog " << symlog;
      }
    }
  }
}

TEST(PointTransformer, DeepNetInitAndFinalNormOnlyForPreNorm) {
  ModelOptions o = Small(AttentionKernel::kLog, NormPlacement::kPost, false);
  o.d_model = 256;
  o.heads = 8;
  o.layers = 6;
  PointTransformer post(o);
  EXPECT_FALSE(post->final_norm);
  std::shared_ptr<TransformerBlockImpl> block =
      post->blocks->ptr<TransformerBlockImpl>(0);
  const double xavier = std::sqrt(2.0 / (256 + 256));
  const double value_std = block->attention->value->weight.std().item<double>();
  const double query_std = block->attention->query->weight.std().item<double>();
  EXPECT_NEAR(value_std / xavier, o.InitGain(), 0.03);
  EXPECT_NEAR(query_std / xavier, 1.0, 0.03);
  o.norm = NormPlacement::kPre;
  PointTransformer pre(o);
  EXPECT_TRUE(pre->final_norm);
}

TEST(PointTransformer, SymlogWrapsTheSameNetwork) {
  const ModelOptions plain =
      Small(AttentionKernel::kQuadratic, NormPlacement::kPost, false);
  ModelOptions wrapped = plain;
  wrapped.symlog = true;
  PointTransformer f(plain), g(wrapped);
  f->to(torch::kDouble);
  g->to(torch::kDouble);
  CopyWeights(f, g);
  const torch::Tensor x = torch::randn({1, 20, 2}, torch::kDouble) * 100;
  EXPECT_TRUE(torch::allclose(
      g->forward(x), InverseSymlog(f->forward(Symlog(x))), 1e-10, 1e-12));
}

TEST(PointTransformer,
     TilingDoesNotChangeValuesAndGradientsReachEveryParameter) {
  ModelOptions o = Small(AttentionKernel::kSoftmax, NormPlacement::kPost, true);
  ModelOptions tiled = o;
  tiled.attention = {3, 5};
  torch::manual_seed(1);
  PointTransformer a(o), b(tiled);
  a->to(torch::kDouble);
  b->to(torch::kDouble);
  CopyWeights(a, b);
  const torch::Tensor x = torch::randn({2, 17, 2}, torch::kDouble);
  const torch::Tensor target = torch::randn({2, 17, 2}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(a->forward(x), b->forward(x), 1e-10, 1e-12));
  EnergyDistanceLoss(b->forward(x), target).sum().backward();
  for (const auto& p : b->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>())
        << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key();
  }
}

}  // namespace
}  // namespace tailsweep

namespace tailsweep {
namespace {

TEST(PointTransformer, ReportsAttentionStatsPerLayerAndNaiveAttentionAgrees) {
  ModelOptions o = Small(AttentionKernel::kLinear, NormPlacement::kPost, false);
  o.layers = 3;
  ModelOptions naive = o;
  naive.naive_attention = true;
  torch::manual_seed(4);
  PointTransformer a(o), b(naive);
  a->to(torch::kDouble);
  b->to(torch::kDouble);
  CopyWeights(a, b);
  const torch::Tensor x = torch::randn({2, 40, 2}, torch::kDouble);
  std::vector<AttentionStats> stats;
  const torch::Tensor y = a->forward(x, &stats);
  EXPECT_TRUE(torch::allclose(y, b->forward(x), 1e-10, 1e-12));
  ASSERT_EQ(stats.size(), 3u);
  for (const AttentionStats& s : stats) {
    EXPECT_GT(s.entropy, 0);
    EXPECT_LE(s.entropy, std::log(40.0) + 1e-12);
    EXPECT_GT(s.max_weight, 1.0 / 40 - 1e-12);
    EXPECT_LE(s.max_weight, 1.0);
  }
  // Zero queries give uniform weights: entropy log M, max weight 1/M.
  const torch::Tensor q = torch::zeros({1, 2, 5, 4}, torch::kDouble);
  const torch::Tensor k = torch::randn({1, 2, 10, 4}, torch::kDouble);
  const AttentionStats uniform =
      SampleAttentionStats(q, k, AttentionKernel::kSoftmax, 3);
  EXPECT_NEAR(uniform.entropy, std::log(10.0), 1e-12);
  EXPECT_NEAR(uniform.max_weight, 0.1, 1e-12);
}

}  // namespace
}  // namespace tailsweep
