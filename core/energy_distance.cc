#include "core/energy_distance.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pairwise_kernels.h"

namespace tailsweep {
namespace {

using Backend = EnergyOptions::Backend;

bool UseCpuKernel(const at::Tensor& x, Backend backend) {
  if (backend == Backend::kAuto) return x.device().is_cpu();
  return backend == Backend::kCpuKernel;
}

int64_t NumBlocks(int64_t rows, int64_t tile) {
  return (rows + tile - 1) / tile;
}

// Pair sums of one (unbatched) pair of point sets. x [n, d], y [m, d].
// Cross(x, y) = sum_ij |x_i - y_j|; Self(x) = sum_ii' |x_i - x_i'|.
template <typename T>
double CpuCross(const at::Tensor& x, const at::Tensor& y, int64_t tile) {
  const at::Tensor xc = x.contiguous();
  const at::Tensor yt = y.t().contiguous();
  const int64_t n = x.size(0), d = x.size(1), m = y.size(0);
  std::vector<double> partial(NumBlocks(n, tile));
  at::parallel_for(0, partial.size(), 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      partial[b] = pairwise::SumDistances(
          xc.data_ptr<T>(), yt.data_ptr<T>(), d, m, b * tile,
          std::min(n, (b + 1) * tile), /*upper=*/false);
    }
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

template <typename T>
double CpuSelf(const at::Tensor& x, int64_t tile) {
  const at::Tensor xc = x.contiguous();
  const at::Tensor xt = x.t().contiguous();
  const int64_t n = x.size(0), d = x.size(1);
  const int64_t blocks = NumBlocks(n, tile);
  std::vector<double> partial(blocks);
  // Upper-triangle blocks shrink with their index; interleaving first and
  // last blocks gives every thread's contiguous share similar work.
  at::parallel_for(0, blocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t % 2 == 0 ? t / 2 : blocks - 1 - t / 2;
      partial[t] = pairwise::SumDistances(
          xc.data_ptr<T>(), xt.data_ptr<T>(), d, n, b * tile,
          std::min(n, (b + 1) * tile), /*upper=*/true);
    }
  });
  double total = 0;
  for (double p : partial) total += p;
  return 2.0 * total;
}

double TiledCross(const at::Tensor& x, const at::Tensor& y, int64_t tile) {
  at::Tensor total = at::zeros({}, x.options().dtype(at::kDouble));
  for (int64_t i0 = 0; i0 < x.size(0); i0 += tile) {
    const at::Tensor block = x.slice(0, i0, i0 + tile);
    const at::Tensor dist =
        (block.unsqueeze(1) - y.unsqueeze(0)).square_().sum(-1).sqrt_();
    total.add_(dist.sum(at::kDouble));
  }
  return total.item<double>();
}

double CrossSum(const at::Tensor& x, const at::Tensor& y,
                const EnergyOptions& options) {
  if (!UseCpuKernel(x, options.backend)) return TiledCross(x, y, options.tile);
  return x.scalar_type() == at::kFloat ? CpuCross<float>(x, y, options.tile)
                                       : CpuCross<double>(x, y, options.tile);
}

double SelfSum(const at::Tensor& x, const EnergyOptions& options) {
  if (!UseCpuKernel(x, options.backend)) return TiledCross(x, x, options.tile);
  return x.scalar_type() == at::kFloat ? CpuSelf<float>(x, options.tile)
                                       : CpuSelf<double>(x, options.tile);
}

double Energy(const at::Tensor& x, const at::Tensor& y,
              const EnergyOptions& options) {
  const double n = static_cast<double>(x.size(0));
  const double m = static_cast<double>(y.size(0));
  return 2.0 * CrossSum(x, y, options) / (n * m) -
         SelfSum(x, options) / (n * n) - SelfSum(y, options) / (m * m);
}

// g [n, d] += weight * sum_j u(x_i - y_j), in x's dtype.
template <typename T>
void CpuAddUnit(const at::Tensor& x, const at::Tensor& y, double weight,
                int64_t tile, at::Tensor& g) {
  const at::Tensor xc = x.contiguous();
  const at::Tensor yt = y.t().contiguous();
  const int64_t n = x.size(0), d = x.size(1), m = y.size(0);
  at::parallel_for(0, NumBlocks(n, tile), 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      pairwise::AddUnitVectorSums(xc.data_ptr<T>(), yt.data_ptr<T>(), d, m,
                                  b * tile, std::min(n, (b + 1) * tile), weight,
                                  g.data_ptr<T>());
    }
  });
}

void TiledAddUnit(const at::Tensor& x, const at::Tensor& y, double weight,
                  int64_t tile, at::Tensor& g) {
  for (int64_t i0 = 0; i0 < x.size(0); i0 += tile) {
    const at::Tensor diff =
        x.slice(0, i0, i0 + tile).unsqueeze(1) - y.unsqueeze(0);  // [t, m, d]
    const at::Tensor norm = diff.norm(2, -1, /*keepdim=*/true);
    const at::Tensor unit =
        at::where(norm > 0, diff / norm, at::zeros_like(diff));
    g.slice(0, i0, i0 + tile).add_(unit.sum(1), weight);
  }
}

void AddUnit(const at::Tensor& x, const at::Tensor& y, double weight,
             const EnergyOptions& options, at::Tensor& g) {
  if (!UseCpuKernel(x, options.backend)) {
    return TiledAddUnit(x, y, weight, options.tile, g);
  }
  if (x.scalar_type() == at::kFloat) {
    return CpuAddUnit<float>(x, y, weight, options.tile, g);
  }
  CpuAddUnit<double>(x, y, weight, options.tile, g);
}

// Gradient of ED(x, y) with respect to x, for one trial.
at::Tensor GradientX(const at::Tensor& x, const at::Tensor& y,
                     const EnergyOptions& options) {
  const double n = static_cast<double>(x.size(0));
  const double m = static_cast<double>(y.size(0));
  at::Tensor g = at::zeros_like(x, at::MemoryFormat::Contiguous);
  AddUnit(x, y, 2.0 / (n * m), options, g);
  AddUnit(x, x, -2.0 / (n * n), options, g);
  return g;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct EnergyDistanceFunction
    : torch::autograd::Function<EnergyDistanceFunction> {
  // x [B, n, d], y [B, m, d] -> [B].
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& y, int64_t tile,
                            int64_t backend) {
    ctx->save_for_backward({x, y});
    ctx->saved_data["tile"] = tile;
    ctx->saved_data["backend"] = backend;
    const EnergyOptions options{tile, static_cast<Backend>(backend)};
    const int64_t trials = x.size(0);
    at::Tensor out =
        at::empty({trials}, at::TensorOptions().dtype(at::kDouble));
    for (int64_t b = 0; b < trials; ++b) {
      out[b] = Energy(x[b], y[b], options);
    }
    return out.to(x.options());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& y = saved[1];
    const EnergyOptions options{
        ctx->saved_data["tile"].toInt(),
        static_cast<Backend>(ctx->saved_data["backend"].toInt())};
    const at::Tensor go = grads[0].to(at::kCPU, at::kDouble).contiguous();
    at::Tensor gx, gy;
    if (ctx->needs_input_grad(0)) gx = at::empty_like(x);
    if (ctx->needs_input_grad(1)) gy = at::empty_like(y);
    for (int64_t b = 0; b < x.size(0); ++b) {
      const double scale = go.data_ptr<double>()[b];
      if (gx.defined()) gx[b].copy_(GradientX(x[b], y[b], options).mul_(scale));
      if (gy.defined()) gy[b].copy_(GradientX(y[b], x[b], options).mul_(scale));
    }
    return {gx, gy, at::Tensor(), at::Tensor()};
  }
};

absl::Status CheckPoints(const at::Tensor& t, const char* name) {
  if (!t.defined() || t.dim() != 2 || t.size(0) < 1 ||
      !at::isFloatingType(t.scalar_type())) {
    return absl::InvalidArgumentError(absl::StrCat(
        name,
        " must be a 2-D floating tensor [points, dims] with at least one "
        "point"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> EnergyDistance(const at::Tensor& x, const at::Tensor& y,
                                      const EnergyOptions& options) {
  if (absl::Status s = CheckPoints(x, "x"); !s.ok()) return s;
  if (absl::Status s = CheckPoints(y, "y"); !s.ok()) return s;
  if (x.size(1) != y.size(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "point sets differ in dimension: ", x.size(1), " vs ", y.size(1)));
  }
  if (options.tile < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("tile must be >= 1 (got ", options.tile, ")"));
  }
  at::NoGradGuard no_grad;
  const at::Tensor xd = x.to(at::kDouble);
  return Energy(xd, y.to(xd.device(), at::kDouble), options);
}

at::Tensor EnergyDistanceLoss(const at::Tensor& x, const at::Tensor& y,
                              const EnergyOptions& options) {
  TORCH_CHECK(x.dim() == y.dim() && (x.dim() == 2 || x.dim() == 3),
              "EnergyDistanceLoss: x and y must both be [n, d] or [B, n, d]");
  TORCH_CHECK(x.size(-1) == y.size(-1), "EnergyDistanceLoss: dims differ");
  TORCH_CHECK(x.scalar_type() == y.scalar_type() && x.device() == y.device(),
              "EnergyDistanceLoss: x and y differ in dtype or device");
  TORCH_CHECK(options.tile >= 1, "EnergyDistanceLoss: tile must be >= 1");
  const bool batched = x.dim() == 3;
  const at::Tensor xb = batched ? x : x.unsqueeze(0);
  const at::Tensor yb = batched ? y : y.unsqueeze(0);
  TORCH_CHECK(xb.size(0) == yb.size(0), "EnergyDistanceLoss: batch differs");
  at::Tensor out = EnergyDistanceFunction::apply(
      xb, yb, options.tile, static_cast<int64_t>(options.backend));
  return batched ? out : out.squeeze(0);
}

}  // namespace tailsweep
