// Shared by the attention tests: float64 layers with their own generators, and mask cases.
#pragma once

#include "helpers.hpp"

#include <memory>
#include <string>
#include <vector>

namespace testing {

using namespace attograd;
using namespace attograd::nn;

/// An Attention layer converted to float64, with the generator it draws from (kept alive).
struct Layer64 {
    std::unique_ptr<Generator> generator;
    std::shared_ptr<Attention> attention;
    Attention* operator->() const { return attention.get(); }
};

inline Layer64 make_layer64(const AttentionOptions& options, std::uint64_t seed = 1) {
    auto generator = std::make_unique<Generator>(seed);
    auto attention = std::make_shared<Attention>(options, *generator);
    attention->to(DType::Float64);
    return {std::move(generator), attention};
}

/// One kind of mask for B = 2, Tq = 3, Tk = 4, with a name for INFO.
struct MaskCase {
    std::string name;
    AttentionArgs masks;
};

inline Tensor bool_tensor(const std::vector<int>& values, const Shape& shape) {
    Tensor t = empty(shape, {.dtype = DType::Bool});
    for (std::size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i] != 0;
    return t;
}

/// Every mask kind attention takes, none of them masking a whole row.
inline std::vector<MaskCase> mask_cases() {
    return {
        {"none", {}},
        {"bool attn_mask [Tq, Tk]", {.attn_mask = bool_tensor({0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0}, {3, 4})}},
        {"float attn_mask [B, Tq, Tk]",
         {.key_padding_mask = {}, .attn_mask = rand64({2, 3, 4}, 99).detach(), .is_causal = false}},
        {"bool key_padding_mask", {.key_padding_mask = bool_tensor({0, 0, 0, 1, 0, 1, 0, 0}, {2, 4})}},
        {"float key_padding_mask", {.key_padding_mask = rand64({2, 4}, 98).detach()}},
        {"is_causal", {.is_causal = true}},
    };
}

/// Masks that leave query 1 of batch 0 with no allowed key (and every other query some).
inline AttentionArgs fully_masked_row() {
    return {.attn_mask = bool_tensor({0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                                     {2, 3, 4})};
}

/// The four scores, the options to try each with.
inline constexpr Score kAllScores[] = {Score::Additive, Score::Dot, Score::ScaledDot, Score::Bilinear};

}  // namespace testing
