// Tensor handle methods and factories.
#include "core/tensor.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>

namespace attograd {
namespace {

std::shared_ptr<Storage> make_storage(const Shape& shape, DType dtype) {
    const std::size_t bytes = static_cast<std::size_t>(numel(shape)) * dtype_size(dtype);
    try {
        return std::allocate_shared<Storage>(detail::SmallBlockAllocator<Storage>{}, bytes);
    } catch (const std::bad_alloc&) {
        throw ResourceError(fmt::format("out of memory: a {} tensor of shape {} needs {:.3g} GiB", dtype,
                                        shape, static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0)));
    }
}

// Elements a tensor may hold: its byte count must fit in int64 (8 bytes per element at most).
constexpr std::int64_t kMaxElements = std::numeric_limits<std::int64_t>::max() / 8;

void check_shape(const Shape& shape, std::string_view op) {
    for (auto s : shape) AG_CHECK(s >= 0, ShapeError, "{}: negative dimension in shape {}", op, shape);
    // A product that wraps around would allocate a small buffer for a huge shape. Zero sizes
    // are skipped: the strides of [0, 2^62, 2^62] would overflow just the same.
    std::int64_t n = 1;
    for (auto s : shape) {
        AG_CHECK(s == 0 || (!__builtin_mul_overflow(n, s, &n) && n <= kMaxElements), ShapeError,
                 "{}: shape {} has too many elements (at most {})", op, shape, kMaxElements);
    }
}

template <class Fill>
Tensor filled(const Shape& shape, TensorOptions options, Fill&& fill) {
    Tensor t = empty(shape, {.dtype = options.dtype});
    dispatch_all(options.dtype, [&]<class T>(T) {
        T* p = t.data<T>();
        const std::int64_t n = t.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(fill(i));
    });
    if (options.requires_grad) t.requires_grad_();
    return t;
}

}  // namespace

std::shared_ptr<detail::TensorImpl> detail::make_impl() {
    return std::allocate_shared<TensorImpl>(SmallBlockAllocator<TensorImpl>{});
}

std::int64_t Tensor::size(std::int64_t axis) const {
    return shape()[static_cast<std::size_t>(normalize_axis(axis, dim(), "size"))];
}

void Tensor::throw_undefined() { throw ValueError("tensor: use of an undefined tensor"); }

void Tensor::throw_dtype_mismatch(DType expected) const {
    throw DTypeError(fmt::format("data: tensor has dtype {}, accessed as {}", dtype(), expected));
}

double Tensor::item() const {
    AG_CHECK(numel() == 1, ValueError, "item: needs a one-element tensor, got shape {}", shape());
    return to_vector<double>()[0];
}

double Tensor::at(std::initializer_list<std::int64_t> index) const {
    AG_CHECK(static_cast<std::int64_t>(index.size()) == dim(), IndexError,
             "at: {} indices for a tensor of shape {}", index.size(), shape());
    const Shape strides = contiguous_strides(shape());
    std::int64_t offset = 0;
    std::size_t d = 0;
    for (std::int64_t i : index) {
        const std::int64_t n = shape()[d];
        AG_CHECK(i >= -n && i < n, IndexError, "at: index {} is out of range for dimension {} of shape {}", i,
                 d, shape());
        offset += (i < 0 ? i + n : i) * strides[d];
        ++d;
    }
    return dispatch_all(
        dtype(), [&]<class T>(T) { return static_cast<double>(static_cast<const T*>(raw_data())[offset]); });
}

Tensor& Tensor::requires_grad_(bool enabled) {
    checked();
    AG_CHECK(is_leaf(), AutogradError,
             "requires_grad_: only leaf tensors can change requires_grad (this one, {}, was made "
             "by a recorded op; use detach() first)",
             shape());
    AG_CHECK(!enabled || is_floating(dtype()), DTypeError,
             "requires_grad_: only float tensors can require gradients, got {}", dtype());
    impl_->requires_grad = enabled;
    return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn_seq < 0; }

Tensor Tensor::grad() const { return Tensor(checked().grad); }

void Tensor::set_grad(const Tensor& grad) {
    checked();
    if (!grad.defined()) {
        impl_->grad.reset();
        return;
    }
    AG_CHECK(grad.shape() == shape(), ShapeError, "set_grad: gradient shape {} differs from tensor shape {}",
             grad.shape(), shape());
    AG_CHECK(grad.dtype() == dtype(), DTypeError, "set_grad: gradient dtype {} differs from tensor dtype {}",
             grad.dtype(), dtype());
    impl_->grad = grad.impl();
}

void Tensor::zero_grad() { checked(), impl_->grad.reset(); }

void Tensor::retain_grad() {
    checked();
    if (!is_leaf()) impl_->retains_grad = true;
}

void Tensor::backward(bool retain_graph) const {
    AG_CHECK(numel() == 1, AutogradError,
             "backward: implicit gradient needs a one-element tensor, got shape {}; pass the "
             "upstream gradient explicitly",
             shape());
    autograd::run_backward(*this, ones(shape(), {.dtype = dtype()}), retain_graph);
}

void Tensor::backward(const Tensor& grad_output, bool retain_graph) const {
    autograd::run_backward(*this, grad_output, retain_graph);
}

Tensor Tensor::detach() const {
    const auto& self = checked();
    auto impl = detail::make_impl();
    impl->shape = self.shape;
    impl->dtype = self.dtype;
    impl->storage = self.storage;
    return Tensor(std::move(impl));
}

Tensor empty(const Shape& shape, TensorOptions options) { return empty(Shape(shape), options); }

Tensor empty(Shape&& shape, TensorOptions options) {
    check_shape(shape, "empty");
    auto impl = detail::make_impl();
    impl->storage = make_storage(shape, options.dtype);
    impl->shape = std::move(shape);
    impl->dtype = options.dtype;
    Tensor t(std::move(impl));
    if (options.requires_grad) t.requires_grad_();
    return t;
}

Tensor zeros(const Shape& shape, TensorOptions options) {
    check_shape(shape, "zeros");
    Tensor t = empty(shape, {.dtype = options.dtype});
    std::memset(t.raw_data(), 0, static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
    if (options.requires_grad) t.requires_grad_();
    return t;
}

Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1.0, options); }

Tensor full(const Shape& shape, double value, TensorOptions options) {
    check_shape(shape, "full");
    return filled(shape, options, [value](std::int64_t) { return value; });
}

Tensor tensor(const std::vector<double>& values, const Shape& shape, TensorOptions options) {
    check_shape(shape, "tensor");
    AG_CHECK(static_cast<std::int64_t>(values.size()) == numel(shape), ShapeError,
             "tensor: {} values do not fill shape {} ({} elements)", values.size(), shape, numel(shape));
    return filled(shape, options, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; });
}

Tensor index_tensor(const std::vector<std::int64_t>& values, const Shape& shape) {
    check_shape(shape, "index_tensor");
    AG_CHECK(static_cast<std::int64_t>(values.size()) == numel(shape), ShapeError,
             "index_tensor: {} values do not fill shape {} ({} elements)", values.size(), shape,
             numel(shape));
    Tensor t = empty(shape, {.dtype = DType::Int64});
    std::copy(values.begin(), values.end(), t.data<std::int64_t>());
    return t;
}

Tensor scalar(double value, TensorOptions options) { return full({}, value, options); }

Tensor arange(double start, double end, double step, TensorOptions options) {
    AG_CHECK(step != 0.0 && std::isfinite(step), ValueError,
             "arange: step must be finite and non-zero, got {}", step);
    AG_CHECK(std::isfinite(start) && std::isfinite(end), ValueError,
             "arange: start and end must be finite, got {} and {}", start, end);
    AG_CHECK((end - start) / step >= 0.0, ValueError,
             "arange: step {} has the wrong sign for the range [{}, {})", step, start, end);
    const double count = std::ceil((end - start) / step);
    // Checked before the cast: a double beyond int64's range would make it undefined.
    AG_CHECK(count <= static_cast<double>(kMaxElements), ShapeError,
             "arange: [{}, {}) in steps of {} has too many elements ({:g})", start, end, step, count);
    const auto n = static_cast<std::int64_t>(count);
    return filled({n}, options, [&](std::int64_t i) { return start + static_cast<double>(i) * step; });
}

Tensor arange(std::int64_t end, TensorOptions options) {
    AG_CHECK(end >= 0, ValueError, "arange: end must be >= 0, got {}", end);
    return filled({end}, options, [](std::int64_t i) { return static_cast<double>(i); });
}

Tensor randn(const Shape& shape, Generator& generator, TensorOptions options) {
    check_shape(shape, "randn");
    AG_CHECK(is_floating(options.dtype), DTypeError, "randn: needs a float dtype, got {}", options.dtype);
    return filled(shape, options, [&](std::int64_t) { return generator.normal(); });
}

Tensor uniform(const Shape& shape, double low, double high, Generator& generator, TensorOptions options) {
    check_shape(shape, "uniform");
    AG_CHECK(low <= high, ValueError, "uniform: low {} exceeds high {}", low, high);
    AG_CHECK(is_floating(options.dtype), DTypeError, "uniform: needs a float dtype, got {}", options.dtype);
    return filled(shape, options, [&](std::int64_t) { return generator.uniform(low, high); });
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, Generator& generator,
               TensorOptions options) {
    check_shape(shape, "randint");
    AG_CHECK(low < high, ValueError, "randint: empty range [{}, {})", low, high);
    return filled(shape, options,
                  [&](std::int64_t) { return static_cast<double>(generator.randint(low, high)); });
}

Tensor zeros_like(const Tensor& like) { return zeros(like.shape(), {.dtype = like.dtype()}); }
Tensor ones_like(const Tensor& like) { return ones(like.shape(), {.dtype = like.dtype()}); }

}  // namespace attograd
