// Printing tensors: PyTorch's layout and summarisation rule, print options, fmt and operator<<.
#pragma once

#include "core/tensor.hpp"

#include <fmt/format.h>

#include <iosfwd>
#include <optional>
#include <string>

namespace attograd {

/// How tensors print, mirroring `torch.set_printoptions` (same names, same defaults).
struct PrintOptions {
    int precision = 4;              ///< digits after the decimal point of float elements
    std::int64_t threshold = 1000;  ///< more elements than this are summarised
    std::int64_t edgeitems = 3;     ///< elements kept at each end of a summarised dimension
    std::int64_t linewidth = 80;    ///< characters per line before the last dimension wraps
    std::optional<bool>
        sci_mode{};  ///< force (true) or forbid (false) scientific notation; unset = PyTorch's choice
};

/// Sets the options every later to_string / fmt / operator<< uses (process-wide, thread-safe; like
/// torch.set_printoptions this is global state, the one exception to passing things
/// explicitly, because printing is called from everywhere). Throws ValueError when precision is
/// outside [0, 30], threshold, edgeitems or linewidth negative.
void set_print_options(const PrintOptions& options);
/// The options in force.
PrintOptions get_print_options();

/// Renders a tensor like PyTorch's `repr`: nested brackets, one common width per tensor, floats
/// with `precision` decimals (integral floats as `2.`, scientific notation when the largest
/// |x| / smallest nonzero |x| > 1000, the largest > 1e8 or the smallest < 1e-4, as PyTorch
/// decides), lines wrapped at `linewidth`. Every element is shown up to `threshold` elements;
/// beyond, each dimension longer than 2 * edgeitems shows its first and last `edgeitems`
/// around "...". Then shape, dtype and requires_grad: `tensor([1.0000, 2.5000], shape=[2],
/// dtype=float32)`. Undefined -> "tensor(undefined)".
std::string to_string(const Tensor& t);
/// As to_string with explicit options (for one call, without changing the global ones).
std::string to_string(const Tensor& t, const PrintOptions& options);

/// Writes to_string(t) (`std::cout << x`).
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace attograd

// fmt's formatter specialisations sit outside attograd's namespaces, where Doxygen cannot
// place them; the reference documents them with to_string.
/// @cond
/// `fmt::format("{}", t)`: the same text as to_string / operator<<.
template <>
struct fmt::formatter<attograd::Tensor> : fmt::formatter<std::string_view> {
    auto format(const attograd::Tensor& t, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(attograd::to_string(t), ctx);
    }
};
/// @endcond
