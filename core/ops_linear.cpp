// The affine map of a fully connected layer: y = x W^T + b (PyTorch's F.linear).
#include "core/ops_linear.hpp"

#include "core/autograd.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_shape.hpp"

#include <Eigen/Core>

namespace attograd {
namespace {

void check_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    AG_CHECK(x.defined() && weight.defined(), ValueError, "linear: undefined tensor argument");
    AG_CHECK(weight.dim() == 2, ShapeError, "linear: weight must be [out_features, in_features], got {}",
             weight.shape());
    AG_CHECK(x.dim() >= 1, ShapeError, "linear: x must have at least one dimension, got {}", x.shape());
    AG_CHECK(x.shape().back() == weight.size(1), ShapeError,
             "linear: x {} does not match weight {} (last dimension {} != in_features {})", x.shape(),
             weight.shape(), x.shape().back(), weight.size(1));
    AG_CHECK(x.dtype() == weight.dtype(), DTypeError, "linear: dtypes differ: x {} {}, weight {} {}",
             x.dtype(), x.shape(), weight.dtype(), weight.shape());
    dispatch_floating(x.dtype(), "linear", [](auto) {});
    if (!bias.defined()) return;
    AG_CHECK(bias.shape() == Shape{weight.size(0)}, ShapeError,
             "linear: bias must be [{}] to match weight {}, got {}", weight.size(0), weight.shape(),
             bias.shape());
    AG_CHECK(bias.dtype() == x.dtype(), DTypeError, "linear: dtypes differ: x {}, bias {}", x.dtype(),
             bias.dtype());
}

// [rows, cols] -> [cols]: the sum of each column.
Tensor column_sums(const Tensor& m) {
    Tensor out = empty({m.size(1)}, {.dtype = m.dtype()});
    dispatch_floating(m.dtype(), "linear", [&]<class T>(T) {
        using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(out.data<T>(), m.size(1)).noalias() =
            Eigen::Map<const RowMajor>(m.data<T>(), m.size(0), m.size(1)).colwise().sum();
    });
    return out;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    check_linear(x, weight, bias);
    // Y [rows, out] = 1 b^T + X [rows, in] W^T: one GEMM reading W transposed in place, its
    // rows starting from the bias.
    const std::int64_t rows = numel(Shape(x.shape().begin(), x.shape().end() - 1));
    const Tensor x2 = reshape(x.detach(), {rows, x.shape().back()});
    const Tensor y2 = detail::matmul_kernel(x2, weight.detach(), false, true, bias);
    Shape out_shape = x.shape();
    out_shape.back() = weight.size(0);
    Tensor y = reshape(y2, out_shape);
    if (autograd::needs_record({&x, &weight, &bias})) {
        autograd::record("linear", {x, weight, bias}, y,
                         [x_shape = x.shape(), weight, x2, rows](const Tensor& dy, autograd::Gradients& g) {
                             const Tensor dy2 = reshape(dy, {rows, weight.size(0)});
                             if (g.needs(0)) {
                                 // dX = dY W (held by name, so the tape can take its buffer without a copy)
                                 const Tensor dx =
                                     reshape(detail::matmul_kernel(dy2, weight, false, false), x_shape);
                                 g.add(0, dx);
                             }
                             // dW = dY^T X
                             if (g.needs(1)) g.add(1, detail::matmul_kernel(dy2, x2, true, false));
                             // db = sum of dY over the rows, in the dtype itself as PyTorch does:
                             // one vectorised pass (sum() accumulates in double, column by column)
                             if (g.needs(2)) g.add(2, column_sums(dy2));
                         });
    }
    return y;
}

}  // namespace attograd
