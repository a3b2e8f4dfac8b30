// Tensor: a cheap handle to shared, row-major contiguous storage, plus its autograd state.
#pragma once

#include "core/dtype.hpp"
#include "core/generator.hpp"
#include "core/shape.hpp"
#include "core/storage.hpp"
#include "core/tensor_index.hpp"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

namespace attograd {

class Tensor;

namespace detail {

/// Tells the tape `tape_id` that the output of its entry `seq` is gone (core/autograd.cpp): the
/// entry's backward, and whatever it holds, is released at that tape's next record instead of
/// waiting for a sweep of the whole tape, whichever thread the output dies on.
void note_output_destroyed(std::uint32_t tape_id, std::int64_t seq) noexcept;

/// What a Tensor handle points to. Every tensor is contiguous and starts at byte 0 of its
/// storage, so views (reshape, detach) share the storage and nothing else.
struct TensorImpl {
    TensorImpl() = default;
    TensorImpl(const TensorImpl&) = default;
    TensorImpl& operator=(const TensorImpl&) = default;
    ~TensorImpl() {
        if (grad_fn_seq >= 0 && !graph_released) note_output_destroyed(tape_id, grad_fn_seq);
    }
    Shape shape;
    DType dtype = DType::Float32;
    std::shared_ptr<Storage> storage;
    bool requires_grad = false;
    bool retains_grad = false;      // non-leaf keeps its gradient after backward
    bool graph_released = false;    // the tape entry that made it was consumed by backward
    std::int64_t grad_fn_seq = -1;  // tape entry that produced it; -1 for a leaf
    std::uint32_t tape_id = 0;      // the (thread's) tape holding that entry
    std::shared_ptr<TensorImpl> grad;
};

/// A new, empty TensorImpl (allocated from the small-block lists; see storage.hpp).
std::shared_ptr<TensorImpl> make_impl();

}  // namespace detail

/// Options for the factories, with PyTorch's defaults.
struct TensorOptions {
    DType dtype = DType::Float32;  ///< element type
    bool requires_grad = false;    ///< make the result a leaf that collects gradients
};

/// An N-dimensional array, row-major and contiguous, of float32, float64, int64 or bool.
/// Copying a Tensor copies the handle: both see the same storage (like PyTorch). A default
/// constructed Tensor is undefined (`defined() == false`).
class Tensor {
public:
    Tensor() = default;
    /// A handle to `impl` (used by the library's own constructors).
    explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

    /// True unless default-constructed.
    bool defined() const { return impl_ != nullptr; }

    /// The sizes of its dimensions, e.g. [B, T, E].
    const Shape& shape() const { return checked().shape; }
    /// Number of dimensions (0 for a scalar).
    std::int64_t dim() const { return static_cast<std::int64_t>(shape().size()); }
    /// Size of one dimension; negative axes count from the end. Throws IndexError.
    std::int64_t size(std::int64_t axis) const;
    /// Number of elements (the product of the sizes; 1 for a scalar).
    std::int64_t numel() const { return attograd::numel(shape()); }
    /// Element type.
    DType dtype() const { return checked().dtype; }

    /// Typed pointer to the first element. Throws DTypeError when T does not match dtype().
    template <class T>
    T* data();
    template <class T>
    /// As data(), read-only.
    const T* data() const;
    /// Untyped pointer to the first element.
    void* raw_data() { return checked().storage->data(); }
    /// Untyped read-only pointer to the first element.
    const void* raw_data() const { return checked().storage->data(); }

    /// The single element of a one-element tensor, converted to double. Throws ValueError.
    double item() const;
    /// Element at a multi-index (one index per dimension; negative counts from the end),
    /// converted to double. Throws IndexError.
    double at(std::initializer_list<std::int64_t> index) const;
    /// All elements in row-major order, converted to T.
    template <class T>
    std::vector<T> to_vector() const;
    /// Python-style indexing, LibTorch's spelling (`using namespace attograd::indexing;`):
    /// `x.index({0, Slice(1, 3), All})` is PyTorch's `x[0, 1:3, :]`, `x.index({Ellipsis, -1})`
    /// is `x[..., -1]`, `x.index({Slice(None, None, 2)})` is `x[::2]`. An integer selects and
    /// removes its dimension; a Slice keeps it; Ellipsis stands for the dimensions not named;
    /// int64 tensors gather as PyTorch's advanced indexing (`x.index({arange(B), idx})`, see
    /// core/ops_index.hpp: index). A copy, differentiable. Throws IndexError (an index out of
    /// range, more indices than dimensions, two Ellipsis), ValueError (step <= 0), DTypeError
    /// (an index tensor not int64), ShapeError (index tensors that do not broadcast).
    Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;

    // --- autograd -------------------------------------------------------------------------
    /// Whether gradients flow into this tensor.
    bool requires_grad() const { return checked().requires_grad; }
    /// Marks a leaf as needing gradients (PyTorch's `requires_grad_`). Throws AutogradError on
    /// a tensor produced by a recorded op, or on a non-float tensor. Returns *this.
    Tensor& requires_grad_(bool enabled = true);
    /// True for tensors not produced by a recorded op (parameters, inputs, detached values).
    bool is_leaf() const;
    /// Accumulated gradient (undefined until a backward reaches this tensor).
    Tensor grad() const;
    /// Replaces the accumulated gradient (optimizers and clip_grad_norm use it). The shape
    /// and dtype must match: throws ShapeError / DTypeError.
    void set_grad(const Tensor& grad);
    /// Drops the accumulated gradient (PyTorch's `set_to_none=True`).
    void zero_grad();
    /// Keeps this non-leaf's gradient after backward (PyTorch's `retain_grad`).
    void retain_grad();
    /// Reverse-mode pass from this one-element tensor (upstream gradient 1). Consumed tape
    /// entries are released unless `retain_graph`. Throws AutogradError when the tensor is
    /// not a scalar, does not require grad, or its entries were already released.
    void backward(bool retain_graph = false) const;
    /// Reverse-mode pass with an explicit upstream gradient of this tensor's shape.
    void backward(const Tensor& grad_output, bool retain_graph = false) const;
    /// A leaf sharing this tensor's storage, cut from the tape (no gradient flows back).
    Tensor detach() const;

    /// The implementation handle (for ops and the tape).
    const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }

private:
    // The impl; throws ValueError on an undefined tensor.
    detail::TensorImpl& checked() const {
        if (impl_ == nullptr) [[unlikely]]
            throw_undefined();
        return *impl_;
    }
    [[noreturn]] static void throw_undefined();
    void check_dtype(DType expected) const {
        if (dtype() != expected) [[unlikely]]
            throw_dtype_mismatch(expected);
    }
    [[noreturn]] void throw_dtype_mismatch(DType expected) const;
    std::shared_ptr<detail::TensorImpl> impl_;
};

// --- factories ------------------------------------------------------------------------------

/// Uninitialised tensor of `shape` (contents unspecified).
Tensor empty(const Shape& shape, TensorOptions options = {});
/// As above, taking over `shape` (saves a copy when the caller is done with it).
Tensor empty(Shape&& shape, TensorOptions options = {});
/// Tensor of zeros.
Tensor zeros(const Shape& shape, TensorOptions options = {});
/// Tensor of ones.
Tensor ones(const Shape& shape, TensorOptions options = {});
/// Tensor filled with `value`.
Tensor full(const Shape& shape, double value, TensorOptions options = {});
/// Tensor from row-major `values`; throws ShapeError when their count is not numel(shape).
Tensor tensor(const std::vector<double>& values, const Shape& shape, TensorOptions options = {});
/// Int64 tensor from integer values, e.g. token ids or class targets (exact for any int64).
Tensor index_tensor(const std::vector<std::int64_t>& values, const Shape& shape);
/// 0-d tensor holding `value`.
Tensor scalar(double value, TensorOptions options = {});
/// 1-D tensor `start, start+step, ...` below `end` (PyTorch's arange). Throws ValueError
/// when step is 0 or has the wrong sign.
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {});
/// 1-D tensor 0, 1, ..., end-1.
Tensor arange(std::int64_t end, TensorOptions options = {.dtype = DType::Int64});
/// Standard normal samples from `generator`.
Tensor randn(const Shape& shape, Generator& generator, TensorOptions options = {});
/// Uniform samples in [low, high) from `generator`.
Tensor uniform(const Shape& shape, double low, double high, Generator& generator, TensorOptions options = {});
/// Uniform integers in [low, high) from `generator` (int64 by default).
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, Generator& generator,
               TensorOptions options = {.dtype = DType::Int64});
/// Zeros / ones with the shape and dtype of `like` (no gradient).
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);

// --- template definitions -------------------------------------------------------------------

template <class T>
T* Tensor::data() {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw_data());
}

template <class T>
const T* Tensor::data() const {
    check_dtype(dtype_of<T>());
    return static_cast<const T*>(raw_data());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
    std::vector<T> out(static_cast<std::size_t>(numel()));
    dispatch_all(dtype(), [&]<class S>(S) {
        const S* src = static_cast<const S*>(raw_data());
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(src[i]);
    });
    return out;
}

}  // namespace attograd
