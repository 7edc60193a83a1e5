// The user's own program: one data-parallel training step of a linear model y ~ x w with squared error,
// written on ringrt's public API. The batch x (B, F) and the targets y (B, 1) are sharded by rows over the
// devices, the weights w (F, 1) replicated on them. Each device computes the gradient of its own rows,
// x_d^T (x_d w - y_d); summing over the sharded axis is an allreduce, so every device holds the whole gradient
// and takes the same step. (The gradient of the mean squared error would be this times 2 / B.)
#pragma once

#include <ringrt/ringrt.hpp>

namespace train {

// The gradient, (F,) on every device: the sum over the batch of x_r (x_r w - y_r). Lazy.
inline ringrt::Tensor gradient(const ringrt::Tensor& x, const ringrt::Tensor& y, const ringrt::Tensor& w) {
  ringrt::Tensor error = x.dot(w) - y;  // (B, 1), sharded as x
  return (x * error).sum({0});          // (F,): the devices' partial sums allreduced
}

// One step: w - lr * gradient, (F, 1) on every device. Lazy.
inline ringrt::Tensor step(const ringrt::Tensor& x, const ringrt::Tensor& y, const ringrt::Tensor& w, double lr) {
  ringrt::Shape f = w.shape();
  return w - gradient(x, y, w).reshape(f) * lr;
}

}  // namespace train
