#include "core/symlog.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace tailsweep {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SymlogFunction : torch::autograd::Function<SymlogFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    ctx->save_for_backward({x});
    return at::sign(x) * at::log1p(at::abs(x));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    return {grad[0] / (1.0 + at::abs(x))};
  }
};

struct InverseSymlogFunction
    : torch::autograd::Function<InverseSymlogFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y) {
    ctx->save_for_backward({y});
    return at::sign(y) * at::expm1(at::abs(y));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const at::Tensor y = ctx->get_saved_variables()[0];
    return {grad[0] * at::exp(at::abs(y))};
  }
};

}  // namespace

at::Tensor Symlog(const at::Tensor& x) { return SymlogFunction::apply(x); }

at::Tensor InverseSymlog(const at::Tensor& y) {
  return InverseSymlogFunction::apply(y);
}

}  // namespace tailsweep
