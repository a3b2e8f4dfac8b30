// Tensors, indexing, reductions and printing, as in PyTorch.
#include <attograd/attograd.hpp>
#include <iostream>
using namespace attograd;
using namespace attograd::indexing;  // Slice, All, None, Ellipsis

int main() {
    Generator gen(0);
    const Tensor x = randn({4, 6, 8}, gen);
    const Tensor idx = index_tensor({5, 0, 2, 1}, {4});
    const Tensor row = x.index({0, Slice(1, 3), All});  // x[0, 1:3, :]    -> [2, 8]
    const Tensor last = x.index({Ellipsis, -1});        // x[..., -1]      -> [4, 6]
    const Tensor picked = x.index({arange(4), idx});    // x[arange(4), idx] -> [4, 8]
    const Tensor col = unsqueeze(last, -1);             // [4, 6, 1]
    const Tensor every2 = slice(x, 1, 0, 6, 2);         // x[:, 0:6:2]     -> [4, 3, 8]
    const Tensor pos = where(x > 0.5, x, 0.0);          // comparisons give bool tensors
    const Tensor n = norm(x, 2.0, {-1}, /*keepdim=*/true);
    const Tensor c = clamp(x, -1.0, 1.0);
    fmt::print("{} {} {} {} {} {} {} {}\n", row.shape(), last.shape(), picked.shape(), col.shape(),
               every2.shape(), pos.shape(), n.shape(), c.shape());
    set_print_options({.precision = 2});
    std::cout << row << "\n";  // PyTorch's layout and summarisation

    // Gradients: the tape records whole-tensor ops; backward() fills the leaves' .grad.
    const Tensor w = randn({8, 3}, gen, {.requires_grad = true});
    const Tensor loss = sum(tanh(matmul(x, w)));
    loss.backward();
    fmt::print("loss {:.4f}, grad {}\n", loss.item(), w.grad().shape());
}
