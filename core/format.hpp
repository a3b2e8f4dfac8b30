// fmt formatting of tensors: `fmt::print("{}", t)` prints values, shape and dtype.
#pragma once

#include "core/tensor.hpp"

#include <fmt/format.h>

#include <string>

namespace attograd {

/// Renders a tensor like PyTorch: nested brackets, at most 6 entries per dimension (the first
/// and last 3 around "..."), then shape, dtype and requires_grad. Undefined -> "tensor(undefined)".
std::string to_string(const Tensor& t);

}  // namespace attograd

template <>
struct fmt::formatter<attograd::Tensor> : fmt::formatter<std::string_view> {
    auto format(const attograd::Tensor& t, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(attograd::to_string(t), ctx);
    }
};
