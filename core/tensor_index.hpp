// Index items for Tensor::index: integers, Slice (Python's start:stop:step), Ellipsis and int64
// tensors (advanced indexing), as in LibTorch's torch::indexing.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <variant>

namespace attograd {
class Tensor;
}

namespace attograd::indexing {

/// An open end of a Slice (Python's empty `:` bound), e.g. `Slice(2, None)` for `2:`.
inline constexpr std::nullopt_t None = std::nullopt;

/// Python's `start:stop:step` along one dimension: negative bounds count from the end, bounds are
/// clamped to the dimension (never an error, possibly empty), an open bound (None) means the
/// start or the end. step must be positive (as in PyTorch).
struct Slice {
    /// `start:stop:step`; every argument may be left out, as in Python.
    constexpr Slice(std::optional<std::int64_t> start_ = None, std::optional<std::int64_t> stop_ = None,
                    std::int64_t step_ = 1)
        : start(start_), stop(stop_), step(step_) {}
    std::optional<std::int64_t> start;  ///< first index (None: the start)
    std::optional<std::int64_t> stop;   ///< one past the last index (None: the end)
    std::int64_t step;                  ///< distance between indices (> 0)
};

/// Every element of a dimension (Python's `:`).
inline constexpr Slice All{};

/// Stands for as many `:` as needed to reach the remaining indices (Python's `...`).
struct EllipsisIndex {};
inline constexpr EllipsisIndex Ellipsis{};

/// One index item: an integer (selects and removes the dimension), a Slice, Ellipsis, or an
/// int64 tensor of indices into its dimension (PyTorch's advanced indexing, core/ops_index.hpp).
class TensorIndex {
public:
    /// What the index holds.
    using Item = std::variant<std::int64_t, Slice, EllipsisIndex, std::shared_ptr<const Tensor>>;
    template <std::integral I>
    /// An integer index (negative counts from the end).
    constexpr TensorIndex(I i) : item_(static_cast<std::int64_t>(i)) {}
    constexpr TensorIndex(Slice s) : item_(s) {}          ///< A slice.
    constexpr TensorIndex(EllipsisIndex e) : item_(e) {}  ///< Ellipsis.
    /// An index tensor (a template only so that Tensor may be incomplete here).
    template <class T>
    requires std::same_as<T, Tensor> TensorIndex(const T& indices)
        : item_(std::make_shared<const T>(indices)) {}
    const Item& item() const { return item_; }  ///< The index held.

private:
    Item item_;
};

}  // namespace attograd::indexing
