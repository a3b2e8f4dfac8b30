// The affine map of a fully connected layer: y = x W^T + b (PyTorch's F.linear).
#include "core/ops_linear.hpp"

#include "core/autograd.hpp"

#include <Eigen/Core>

namespace attograd {
namespace {

template <class T>
using MatrixMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T>
using ConstRowMap = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;
template <class T>
using RowMap = Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>;

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

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    check_linear(x, weight, bias);
    // x [..., in] is read as X [rows, in]; y [..., out] as Y [rows, out].
    const std::int64_t in = weight.size(1), out_features = weight.size(0);
    const std::int64_t row_count = numel(Shape(x.shape().begin(), x.shape().end() - 1));
    Shape out_shape = x.shape();
    out_shape.back() = out_features;
    Tensor y = empty(out_shape, {.dtype = x.dtype()});
    dispatch_floating(x.dtype(), "linear", [&]<class T>(T) {
        const ConstMatrixMap<T> X(x.data<T>(), row_count, in);
        const ConstMatrixMap<T> W(weight.data<T>(), out_features, in);
        MatrixMap<T> Y(y.data<T>(), row_count, out_features);
        // Y = X W^T (+ b broadcast over the rows)
        Y.noalias() = X * W.transpose();
        if (bias.defined()) Y.rowwise() += ConstRowMap<T>(bias.data<T>(), out_features);
    });
    if (autograd::needs_record({&x, &weight, &bias})) {
        autograd::record("linear", {x, weight, bias}, y,
                         [x, weight, row_count](const Tensor& dy, autograd::Gradients& g) {
                             const std::int64_t in = weight.size(1), out_features = weight.size(0);
                             dispatch_floating(dy.dtype(), "linear", [&]<class T>(T) {
                                 const ConstMatrixMap<T> dY(dy.data<T>(), row_count, out_features);
                                 if (g.needs(0)) {
                                     // dX = dY W
                                     Tensor dx = empty(x.shape(), {.dtype = x.dtype()});
                                     MatrixMap<T>(dx.data<T>(), row_count, in).noalias() =
                                         dY * ConstMatrixMap<T>(weight.data<T>(), out_features, in);
                                     g.add(0, dx);
                                 }
                                 if (g.needs(1)) {
                                     // dW = dY^T X
                                     Tensor dw = empty(weight.shape(), {.dtype = weight.dtype()});
                                     MatrixMap<T>(dw.data<T>(), out_features, in).noalias() =
                                         dY.transpose() * ConstMatrixMap<T>(x.data<T>(), row_count, in);
                                     g.add(1, dw);
                                 }
                                 if (g.needs(2)) {
                                     // db = sum of dY over the rows
                                     Tensor db = empty({out_features}, {.dtype = dy.dtype()});
                                     RowMap<T>(db.data<T>(), out_features).noalias() = dY.colwise().sum();
                                     g.add(2, db);
                                 }
                             });
                         });
    }
    return y;
}

}  // namespace attograd
