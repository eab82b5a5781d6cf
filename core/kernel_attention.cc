#include "core/kernel_attention.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>

#include "core/kernel_tile.h"

namespace tailsweep {

namespace {

// Every kernel is phi(s) = e + g(p) with e = exp(min(s, 0)), p = max(s, 0)
// and g(0) = 0: exp(s) below zero, 1 + g(s) above (science.md section 5).
// Since e = 1 wherever p > 0, phi' = e + [p > 0] (g'(p) - 1), which for
// these g needs no mask. A tile's phi and phi' are then a few in-place
// passes, each vectorised by ATen, instead of a mask, two clamped copies and
// a select for each of them:
//   quadratic: phi = e + p + p^2/2,  phi' = e + p
//   linear:    phi = e + p,          phi' = e
//   log:       phi = e + log(1 + p), phi' = 1/(1 + p) where p > 0, else e
// (not e + 1/(1 + p) - 1, which loses 1/(1 + p) to cancellation for large p)
struct KernelTile {
  at::Tensor phi, phi_prime;  // phi_prime undefined unless asked for
};

// Whether a tile of these scores goes through kernel_tile.h's fused passes
// (float32 on the CPU, slower-growing kernels); otherwise NonSoftmaxTile's
// ATen passes, which run on every device and dtype.
bool FusedTile(AttentionKernel kernel, const at::Tensor& like, bool allowed) {
  return allowed && kernel != AttentionKernel::kSoftmax && like.is_cpu() &&
         like.scalar_type() == at::kFloat;
}

// Consumes `s` (its storage is reused). Not for softmax.
KernelTile NonSoftmaxTile(AttentionKernel kernel, at::Tensor s,
                          bool derivative) {
  at::Tensor e = s.clamp_max(0).exp_();
  at::Tensor& p = s.clamp_min_(0);
  KernelTile t;
  switch (kernel) {
    case AttentionKernel::kQuadratic: {
      at::Tensor first = e.add_(p);  // e + p: phi'
      t.phi = at::addcmul(first, p, p, 0.5);
      if (derivative) t.phi_prime = first;
      break;
    }
    case AttentionKernel::kLinear:
      if (derivative) t.phi_prime = e.clone();
      t.phi = e.add_(p);
      break;
    case AttentionKernel::kLog:
      if (!derivative) {
        t.phi = e.add_(p.log1p_());
      } else {
        at::Tensor one_plus = p.add_(1);
        t.phi_prime = at::where(one_plus > 1, one_plus.reciprocal(), e);
        t.phi = e.add_(one_plus.log_());
      }
      break;
    case AttentionKernel::kSoftmax:
      TORCH_CHECK(false, "softmax has its own path");
  }
  return t;
}

}  // namespace

// The same formulas out of place, so autograd can differentiate them (the
// naive reference attention uses these; the tiled one NonSoftmaxTile, and
// the tests hold the two equal).
at::Tensor KernelValue(AttentionKernel kernel, const at::Tensor& s) {
  if (kernel == AttentionKernel::kSoftmax) return s.exp();
  const at::Tensor e = s.clamp_max(0).exp(), p = s.clamp_min(0);
  switch (kernel) {
    case AttentionKernel::kQuadratic:
      return e + p + 0.5 * p * p;
    case AttentionKernel::kLinear:
      return e + p;
    case AttentionKernel::kLog:
      return e + p.log1p();
    case AttentionKernel::kSoftmax:
      break;
  }
  TORCH_CHECK(false, "unknown attention kernel");
}

at::Tensor KernelDerivative(AttentionKernel kernel, const at::Tensor& s) {
  if (kernel == AttentionKernel::kSoftmax) return s.exp();
  const at::Tensor e = s.clamp_max(0).exp(), p = s.clamp_min(0);
  switch (kernel) {
    case AttentionKernel::kQuadratic:
      return e + p;
    case AttentionKernel::kLinear:
      return e;
    case AttentionKernel::kLog:
      return at::where(p > 0, 1 / (1 + p), e);
    case AttentionKernel::kSoftmax:
      break;
  }
  TORCH_CHECK(false, "unknown attention kernel");
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Tensors are [R, N, dh] with R = B * H rows of independent heads.
struct Tiles {
  int64_t query;
  int64_t key;
  bool fused;  // AttentionOptions::fused_tiles
};

// Forward pass. Returns {o, stat}: stat [R, N] is the row sum l of phi, or
// for softmax the log-sum-exp m + log l, so that w = exp(s - stat).
void ForwardRows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                 AttentionKernel kernel, Tiles tiles, at::Tensor out,
                 at::Tensor stat) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const bool softmax = kernel == AttentionKernel::kSoftmax;
  const bool fused = FusedTile(kernel, q, tiles.fused);
  const int64_t n = q.size(1), m = k.size(1);
  for (int64_t i0 = 0; i0 < n; i0 += tiles.query) {
    const int64_t i1 = std::min(n, i0 + tiles.query);
    const at::Tensor qt = q.slice(1, i0, i1) * scale;
    at::Tensor acc = at::zeros_like(qt);
    at::Tensor l = at::zeros({q.size(0), i1 - i0}, q.options());
    at::Tensor row_max;
    if (softmax) row_max = at::full_like(l, -INFINITY);
    for (int64_t j0 = 0; j0 < m; j0 += tiles.key) {
      const at::Tensor kt = k.slice(1, j0, j0 + tiles.key);
      const at::Tensor vt = v.slice(1, j0, j0 + tiles.key);
      at::Tensor s = at::bmm(qt, kt.transpose(1, 2));  // [R, tq, tk]
      if (softmax) {
        // FlashAttention's running maximum: rescale what was summed so far.
        const at::Tensor new_max = at::maximum(row_max, s.amax(-1));
        const at::Tensor correction = (row_max - new_max).exp();
        s.sub_(new_max.unsqueeze(-1)).exp_();
        l.mul_(correction).add_(s.sum(-1));
        acc.mul_(correction.unsqueeze(-1)).baddbmm_(s, vt);
        row_max = new_max;
      } else if (fused) {  // s becomes phi, its row sums go into l
        KernelTilePhiRowSums(kernel, s.data_ptr<float>(), s.size(0) * s.size(1),
                             s.size(2), l.data_ptr<float>());
        acc.baddbmm_(s, vt);
      } else {
        const at::Tensor phi = NonSoftmaxTile(kernel, s, false).phi;
        l.add_(phi.sum(-1));
        acc.baddbmm_(phi, vt);
      }
    }
    out.slice(1, i0, i1).copy_(acc / l.unsqueeze(-1));
    stat.slice(1, i0, i1).copy_(softmax ? row_max + l.log() : l);
  }
}

// Bytes of score tile worth keeping in a core's L2 cache: the tile of a
// group of heads is written by one matrix product and then read and written
// by the elementwise passes and the next products, so a group whose tiles
// fit is processed without going out to L3 or memory.
constexpr int64_t kTileGroupBytes = 512 * 1024;

// Runs fn(r0, r1) over ranges of the R independent heads: in parallel on the
// CPU (each head's tile loop on one thread, no shared accumulators, so the
// result does not depend on the thread count), in groups whose score tiles
// fit kTileGroupBytes; in one call on other devices, which parallelise
// within each op.
template <typename Fn>
void ForEachHeadRange(const at::Tensor& q, int64_t m, Tiles tiles,
                      const Fn& fn) {
  if (!q.device().is_cpu() || q.size(0) == 1) return fn(0, q.size(0));
  const int64_t tile_bytes = std::min(tiles.query, q.size(1)) *
                             std::min(tiles.key, m) *
                             static_cast<int64_t>(q.element_size());
  const int64_t group = std::max<int64_t>(1, kTileGroupBytes / tile_bytes);
  at::parallel_for(0, q.size(0), 1, [&](int64_t r0, int64_t r1) {
    // Grad mode is thread-local and OpenMP workers start with it on: without
    // this guard every tile op would be recorded and kept alive.
    at::NoGradGuard no_grad;
    for (int64_t g0 = r0; g0 < r1; g0 += group)
      fn(g0, std::min(r1, g0 + group));
  });
}

std::pair<at::Tensor, at::Tensor> Forward(const at::Tensor& q,
                                          const at::Tensor& k,
                                          const at::Tensor& v,
                                          AttentionKernel kernel, Tiles tiles) {
  at::Tensor out = at::empty_like(q);
  at::Tensor stat = at::empty({q.size(0), q.size(1)}, q.options());
  ForEachHeadRange(q, k.size(1), tiles, [&](int64_t r0, int64_t r1) {
    ForwardRows(q.slice(0, r0, r1), k.slice(0, r0, r1), v.slice(0, r0, r1),
                kernel, tiles, out.slice(0, r0, r1), stat.slice(0, r0, r1));
  });
  return {out, stat};
}

// Backward pass over some heads: recomputes each tile's scores and adds the
// gradients into dq, dk, dv (zero on entry).
void BackwardRows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const at::Tensor& out, const at::Tensor& stat,
                  const at::Tensor& grad, AttentionKernel kernel, Tiles tiles,
                  at::Tensor dq, at::Tensor dk, at::Tensor dv) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const bool softmax = kernel == AttentionKernel::kSoftmax;
  const bool fused = FusedTile(kernel, q, tiles.fused);
  const int64_t n = q.size(1), m = k.size(1);
  const at::Tensor delta = (grad * out).sum(-1);  // D_i = dO_i . o_i
  for (int64_t i0 = 0; i0 < n; i0 += tiles.query) {
    const int64_t i1 = std::min(n, i0 + tiles.query);
    const at::Tensor qt = q.slice(1, i0, i1) * scale;
    const at::Tensor gt = grad.slice(1, i0, i1);
    const at::Tensor dt = delta.slice(1, i0, i1).unsqueeze(-1);
    const at::Tensor st = stat.slice(1, i0, i1).unsqueeze(-1);
    // Other kernels: w = phi / l is never formed; dO and D are divided by
    // l instead (rows of [tq, dh] and [tq], not the [tq, tk] tiles):
    // dV += phi^T (dO / l), ds = phi' ((dO / l) . v - D / l).
    const at::Tensor gs = softmax ? gt : gt / st;
    const at::Tensor ds_shift = softmax ? dt : (dt / st).contiguous();
    at::Tensor dq_tile = at::zeros_like(qt);
    for (int64_t j0 = 0; j0 < m; j0 += tiles.key) {
      const int64_t j1 = std::min(m, j0 + tiles.key);
      const at::Tensor kt = k.slice(1, j0, j1);
      const at::Tensor vt = v.slice(1, j0, j1);
      at::Tensor s = at::bmm(qt, kt.transpose(1, 2));
      if (fused) {  // phi, and phi' in s; ds = phi' (dO v^T / l - D / l)
        const at::Tensor phi = at::empty_like(s);
        KernelTilePhiAndDerivative(kernel, s.data_ptr<float>(),
                                   phi.data_ptr<float>(), s.numel());
        dv.slice(1, j0, j1).baddbmm_(phi.transpose(1, 2), gs);
        at::Tensor ds = at::bmm(gs, vt.transpose(1, 2));
        TileShiftedProduct(s.data_ptr<float>(), ds_shift.data_ptr<float>(),
                           ds.data_ptr<float>(), s.size(0) * s.size(1),
                           s.size(2));
        dq_tile.baddbmm_(ds, kt);
        dk.slice(1, j0, j1).baddbmm_(ds.transpose(1, 2), qt);
        continue;
      }
      at::Tensor w, w_prime;  // softmax: phi / l; others: phi and phi'
      if (softmax) {
        w = (s - st).exp_();
        w_prime = w;
      } else {
        KernelTile t = NonSoftmaxTile(kernel, s, true);
        w = std::move(t.phi);
        w_prime = std::move(t.phi_prime);
      }
      dv.slice(1, j0, j1).baddbmm_(w.transpose(1, 2), gs);
      // ds_ij = phi'(s_ij) (dO_i . v_j - D_i) / l_i
      const at::Tensor ds =
          at::bmm(gs, vt.transpose(1, 2)).sub_(ds_shift).mul_(w_prime);
      dq_tile.baddbmm_(ds, kt);
      dk.slice(1, j0, j1).baddbmm_(ds.transpose(1, 2), qt);
    }
    dq.slice(1, i0, i1).copy_(dq_tile.mul_(scale));
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Backward(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& stat, const at::Tensor& grad,
    AttentionKernel kernel, Tiles tiles) {
  at::Tensor dq = at::zeros_like(q);
  at::Tensor dk = at::zeros_like(k);
  at::Tensor dv = at::zeros_like(v);
  ForEachHeadRange(q, k.size(1), tiles, [&](int64_t r0, int64_t r1) {
    auto rows = [&](const at::Tensor& t) { return t.slice(0, r0, r1); };
    BackwardRows(rows(q), rows(k), rows(v), rows(out), rows(stat), rows(grad),
                 kernel, tiles, rows(dq), rows(dk), rows(dv));
  });
  return {dq, dk, dv};
}

struct KernelAttentionFunction
    : torch::autograd::Function<KernelAttentionFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q,
                            const at::Tensor& k, const at::Tensor& v,
                            int64_t kernel, int64_t query_tile,
                            int64_t key_tile, bool fused) {
    const Tiles tiles{query_tile, key_tile, fused};
    auto [out, stat] =
        Forward(q, k, v, static_cast<AttentionKernel>(kernel), tiles);
    ctx->save_for_backward({q, k, v, out, stat});
    ctx->saved_data["kernel"] = kernel;
    ctx->saved_data["query_tile"] = query_tile;
    ctx->saved_data["key_tile"] = key_tile;
    ctx->saved_data["fused"] = fused;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tiles tiles{ctx->saved_data["query_tile"].toInt(),
                      ctx->saved_data["key_tile"].toInt(),
                      ctx->saved_data["fused"].toBool()};
    const auto kernel =
        static_cast<AttentionKernel>(ctx->saved_data["kernel"].toInt());
    auto [dq, dk, dv] =
        Backward(saved[0], saved[1], saved[2], saved[3], saved[4],
                 grads[0].contiguous(), kernel, tiles);
    return {dq, dk, dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor KernelAttention(const at::Tensor& q, const at::Tensor& k,
                           const at::Tensor& v, AttentionKernel kernel,
                           const AttentionOptions& options) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
              "KernelAttention: q, k, v must be [B, H, N, dh]");
  TORCH_CHECK(k.sizes() == v.sizes() && q.size(0) == k.size(0) &&
                  q.size(1) == k.size(1) && q.size(3) == k.size(3),
              "KernelAttention: q, k, v shapes disagree");
  TORCH_CHECK(options.query_tile >= 1 && options.key_tile >= 1,
              "KernelAttention: tiles must be >= 1");
  const int64_t b = q.size(0), h = q.size(1), n = q.size(2), dh = q.size(3);
  const int64_t m = k.size(2);
  int64_t query_tile = options.query_tile, key_tile = options.key_tile;
  if (!q.device().is_cpu()) {
    // Off the CPU, kernel launches bound the speed, not caches: tiles grow
    // (key tile first) until one score tile of all heads holds
    // kDeviceTileElements or covers N x M.
    while (key_tile < m &&
           b * h * query_tile * key_tile * 2 <= kDeviceTileElements) {
      key_tile *= 2;
    }
    while (query_tile < n &&
           b * h * query_tile * key_tile * 2 <= kDeviceTileElements) {
      query_tile *= 2;
    }
  }
  const at::Tensor out = KernelAttentionFunction::apply(
      q.reshape({b * h, n, dh}).contiguous(),
      k.reshape({b * h, m, dh}).contiguous(),
      v.reshape({b * h, m, dh}).contiguous(), static_cast<int64_t>(kernel),
      query_tile, key_tile, options.fused_tiles);
  return out.view({b, h, n, dh});
}

namespace {

// Weights [B, H, N, M] of the materialised attention.
at::Tensor NaiveWeights(const at::Tensor& q, const at::Tensor& k,
                        AttentionKernel kernel) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const at::Tensor s = at::matmul(q, k.transpose(-1, -2)) * scale;
  if (kernel == AttentionKernel::kSoftmax) return s.softmax(-1);
  const at::Tensor phi = KernelValue(kernel, s);
  return phi / phi.sum(-1, /*keepdim=*/true);
}

}  // namespace

AttentionStats SampleAttentionStats(const at::Tensor& q, const at::Tensor& k,
                                    AttentionKernel kernel, int64_t queries) {
  at::NoGradGuard no_grad;
  const at::Tensor w =
      NaiveWeights(q.slice(2, 0, queries), k, kernel).to(at::kDouble);
  const at::Tensor entropy = -(w * w.clamp_min(1e-300).log()).sum(-1);
  return {entropy.mean().item<double>(), w.max().item<double>(),
          std::get<0>(w.max(-1)).mean().item<double>()};
}

at::Tensor NaiveKernelAttention(const at::Tensor& q, const at::Tensor& k,
                                const at::Tensor& v, AttentionKernel kernel) {
  return at::matmul(NaiveWeights(q, k, kernel), v);
}

}  // namespace tailsweep
