#ifndef TAILSWEEP_CORE_SYMLOG_H_
#define TAILSWEEP_CORE_SYMLOG_H_

// Symlog preprocessing (science.md section 5):
//   Symlog(x)        = sign(x) log(1 + |x|)
//   InverseSymlog(y) = sign(y) (exp|y| - 1)
// Elementwise, any shape, device and floating dtype; differentiable with the
// exact derivatives 1 / (1 + |x|) and exp|y| (both 1 at 0, where a naive
// autograd of sign * log1p(abs) would give 0).

#include <ATen/core/Tensor.h>

namespace tailsweep {

at::Tensor Symlog(const at::Tensor& x);
at::Tensor InverseSymlog(const at::Tensor& y);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SYMLOG_H_
