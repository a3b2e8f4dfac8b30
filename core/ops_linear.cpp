// The affine map of a fully connected layer: y = x W^T + b (PyTorch's F.linear).
#include "core/ops_linear.hpp"

#include "core/autograd.hpp"
#include "core/detail/matmul_blocks.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_shape.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

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

// out [cols] = the sum of each column of m [rows, cols]: whole rows added, all columns at once
// (Eigen's colwise().sum() of a row-major map walks each column down alone: 0.61 ms for a cold
// [2048, 768] dY against 0.26, AMD EPYC Zen 3). Blocks of kRowBlock rows are summed in order,
// then the block sums in order (a cascade, as PyTorch's sum: the error grows with
// kRowBlock + rows / kRowBlock, not with rows), fixed by the shape alone.
void column_sums(const Tensor& m, Tensor& out) {
    constexpr std::int64_t kRowBlock = 64;
    dispatch_floating(m.dtype(), "linear", [&]<class T>(T) {
        using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        using RowVector = Eigen::Matrix<T, 1, Eigen::Dynamic>;
        const std::int64_t rows = m.size(0), cols = m.size(1);
        const Eigen::Map<const RowMajor> rows_of(m.data<T>(), rows, cols);
        Eigen::Map<RowVector> total(out.data<T>(), cols);
        total.setZero();
        RowVector block(cols);
        for (std::int64_t first = 0; first < rows; first += kRowBlock) {
            block = rows_of.row(first);
            for (std::int64_t r = first + 1; r < std::min(rows, first + kRowBlock); ++r)
                block.noalias() += rows_of.row(r);
            total += block;
        }
    });
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    check_linear(x, weight, bias);
    // Y [rows, out] = X [rows, in] W^T + 1 b^T: one product (W transposed once when the GEMM
    // layer wants it plain), the bias added to each row block once it is written.
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
                             // dX = dY W and dW = dY^T X, their row blocks in one parallel region
                             // (one region instead of two, and a product too small to split runs
                             // beside the other's blocks); db = the sum of dY over the rows, in the
                             // dtype itself as PyTorch does (one vectorised pass), as one more task.
                             std::vector<const detail::MatmulBlocks*> products;
                             std::optional<detail::MatmulBlocks> dx, dw;
                             if (g.needs(0)) products.push_back(&dx.emplace(dy2, weight, false, false));
                             if (g.needs(1)) products.push_back(&dw.emplace(dy2, x2, true, false));
                             Tensor db;
                             std::function<void()> bias_task;
                             if (g.needs(2)) {
                                 db = empty({weight.size(0)}, {.dtype = dy.dtype()});
                                 bias_task = [&] { column_sums(dy2, db); };
                             }
                             detail::run_blocks(products, bias_task);
                             // (each held once, so the tape can take the buffers without a copy)
                             if (dx) {
                                 const Tensor dx_shaped = reshape(dx->take_output(), x_shape);
                                 g.add(0, dx_shaped);
                             }
                             if (dw) g.add(1, dw->take_output());
                             if (db.defined()) g.add(2, db);
                         });
    }
    return y;
}

}  // namespace attograd
