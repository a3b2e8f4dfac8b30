// Internal: the matmul op's kernel without a tape entry, and 2-D products cut into row blocks
// that fixed-block parallel regions run (core/ops_matmul.cpp; linear's and the fused kernels'
// products).
#pragma once

#include "core/tensor.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace attograd {

namespace detail {
/// op(a) x op(b) for every batch, op = transpose when the flag is set; no tape entry.
/// a [..., n, k] (or [..., k, n] when transpose_a), b likewise -> [broadcast(...), n, m].
/// A defined `row_init` [m] (2-D operands only, same dtype) is added to every row of the
/// result once the product is written, block by block while it is in cache: linear's bias.
Tensor matmul_kernel(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                     const Tensor& row_init = Tensor());

/// One 2-D product op(a) op(b) (+ row_init on every row, as matmul_kernel) cut into row blocks
/// fixed by its shape alone, never by the thread count; run(i) computes block i of output(),
/// and distinct blocks may run on different threads at once. matmul_kernel runs one product's
/// blocks; linear's backward runs dX's and dW's blocks in one parallel region (run_blocks).
class MatmulBlocks {
public:
    MatmulBlocks(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                 const Tensor& row_init = Tensor());
    std::int64_t blocks() const { return chunks_; }
    /// Multiply-adds of the whole product.
    std::int64_t work() const { return n_ * m_ * inner_; }
    void run(std::int64_t block) const;
    /// The product [n, m], once every block has run; moved out, so that its taker holds the only
    /// reference (the tape then takes the buffer as a gradient without copying it).
    Tensor take_output() { return std::move(out_); }

private:
    // bt_: op(B) transposed once, when the GEMM layer wants it plain; panels_: op(B) packed for
    // gemm_b_panels (LIBXSMM)
    Tensor a_, b_, bt_, panels_, row_init_, out_;
    bool transpose_a_, transpose_b_;
    std::int64_t n_ = 0, m_ = 0, inner_ = 0, a_cols_ = 0, b_cols_ = 0, chunks_ = 1;
};

/// Runs every block of each product, and `also` (when set) as one more task, in one parallel
/// region when the products' work is worth it (core/detail/parallel.hpp), on one thread otherwise:
/// `also` first, then the blocks from the most work to the least. Each product's blocks write
/// their own rows, so the results do not depend on which thread runs what, or in what order.
void run_blocks(const std::vector<const MatmulBlocks*>& products, const std::function<void()>& also = {});
}  // namespace detail

}  // namespace attograd
