// Masks have PyTorch's semantics: a bool mask is true where attention is NOT allowed, a float
// mask is added to the scores. A query whose keys are all masked gets weights 0 and output 0.
#include <attograd/attograd.hpp>
#include <iostream>
using namespace attograd;

int main() {
    Generator gen(0);
    nn::MultiHeadAttention attention({.embed_dim = 8, .num_heads = 2}, gen);
    const Tensor x = randn({2, 4, 8}, gen);  // [B, T, E]
    const Tensor lengths = index_tensor({4, 2}, {2});
    const Tensor padding = nn::lengths_to_padding_mask(lengths, 4);  // bool [B, T], true at padding
    const Tensor causal = nn::causal_mask(4);                        // bool [T, T], true above the diagonal
    const auto out = attention.forward(x, {.key_padding_mask = padding, .attn_mask = causal});
    std::cout << out.weights << "\n";  // [B, Tq, Tk], heads averaged
    // The same causal mask without building it, and PyTorch's float form (-inf above the diagonal):
    const auto same = attention.forward(x, {.key_padding_mask = padding, .is_causal = true});
    const auto as_float = attention.forward(
        x, {.key_padding_mask = padding, .attn_mask = nn::generate_square_subsequent_mask(4)});
    const double d1 = max(abs(out.output - same.output)).item(),
                 d2 = max(abs(out.output - as_float.output)).item();
    fmt::print("same output with is_causal: {}, with the float mask: {}\n", d1 == 0.0, d2 < 1e-6);

    // Every key masked: weights 0 and output 0 (PyTorch gives NaN).
    const Tensor all_masked = full({1, 4}, 1.0, {.dtype = DType::Bool});
    const auto empty = attention.forward(x.index({indexing::Slice(0, 1)}), {.key_padding_mask = all_masked});
    fmt::print("all keys masked: max |weight| {}, finite output: {}\n", max(abs(empty.weights)).item(),
               std::isfinite(sum(empty.output).item()));
    return d1 == 0.0 && d2 < 1e-6 ? 0 : 1;
}
