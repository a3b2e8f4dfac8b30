// The small-buffer function type of a tape entry's backward (autograd::record takes one).
// Installed with the public headers only because record() takes it by value; its inline
// storage is an implementation detail.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace attograd {
class Tensor;
namespace autograd {
class Gradients;

/// Backward of one op: receives dL/d(output) and adds dL/d(input_i) through `grads`.
/// It runs with recording off, so it may call ops freely. It behaves as
/// `std::function<void(const Tensor&, Gradients&)>` (any copyable callable converts to it),
/// but keeps callables of up to 64 bytes inline -- the captures of nearly every op -- so that
/// recording an op does not allocate for its backward.
class BackwardFn {
public:
    BackwardFn() = default;
    BackwardFn(std::nullptr_t) {}
    template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, BackwardFn> &&
             std::is_invocable_v<std::remove_cvref_t<F>&, const Tensor&, Gradients&>)
        BackwardFn(F&& fn) {  // NOLINT(google-explicit-constructor): converts like std::function
        using Fn = std::remove_cvref_t<F>;
        static_assert(std::is_copy_constructible_v<Fn>, "a backward function must be copyable");
        if constexpr (fits_inline<Fn>()) {
            ::new (static_cast<void*>(buffer_)) Fn(std::forward<F>(fn));
        } else {
            heap_ = new Fn(std::forward<F>(fn));
        }
        ops_ = &ops_for<Fn>;
    }
    BackwardFn(const BackwardFn& other) { copy_from(other); }
    BackwardFn(BackwardFn&& other) noexcept { move_from(other); }
    BackwardFn& operator=(const BackwardFn& other) {
        if (this != &other) {
            BackwardFn copy(other);
            *this = std::move(copy);
        }
        return *this;
    }
    BackwardFn& operator=(BackwardFn&& other) noexcept {
        if (this != &other) {
            reset();
            move_from(other);
        }
        return *this;
    }
    ~BackwardFn() { reset(); }

    /// Calls the function. Throws AutogradError when empty.
    void operator()(const Tensor& grad_output, Gradients& grads) const;
    explicit operator bool() const { return ops_ != nullptr; }

private:
    static constexpr std::size_t kInlineBytes = 64;
    struct Ops {
        void (*call)(const void* fn, const Tensor& grad_output, Gradients& grads);
        void (*copy)(const void* from, BackwardFn& to);
        void (*move)(BackwardFn& from, BackwardFn& to) noexcept;  // leaves `from` empty
        void (*destroy)(BackwardFn& self) noexcept;
    };

    template <class Fn>
    static constexpr bool fits_inline() {
        return sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
               std::is_nothrow_move_constructible_v<Fn>;
    }
    template <class Fn>
    Fn* target() const {
        if constexpr (fits_inline<Fn>())
            return std::launder(reinterpret_cast<Fn*>(const_cast<unsigned char*>(buffer_)));
        else
            return static_cast<Fn*>(heap_);
    }
    template <class Fn>
    static void call_fn(const void* fn, const Tensor& grad_output, Gradients& grads) {
        (*static_cast<Fn*>(const_cast<void*>(fn)))(grad_output, grads);
    }
    template <class Fn>
    static void copy_fn(const void* from, BackwardFn& to) {
        to = BackwardFn(*static_cast<const Fn*>(from));
    }
    template <class Fn>
    static void move_fn(BackwardFn& from, BackwardFn& to) noexcept {
        if constexpr (fits_inline<Fn>()) {
            ::new (static_cast<void*>(to.buffer_)) Fn(std::move(*from.target<Fn>()));
            from.target<Fn>()->~Fn();
        } else {
            to.heap_ = from.heap_;
            from.heap_ = nullptr;
        }
        to.ops_ = from.ops_;
        from.ops_ = nullptr;
    }
    template <class Fn>
    static void destroy_fn(BackwardFn& self) noexcept {
        if constexpr (fits_inline<Fn>())
            self.target<Fn>()->~Fn();
        else
            delete self.target<Fn>();
        self.heap_ = nullptr;
        self.ops_ = nullptr;
    }
    template <class Fn>
    static constexpr Ops ops_for = {&call_fn<Fn>, &copy_fn<Fn>, &move_fn<Fn>, &destroy_fn<Fn>};

    const void* callable() const { return heap_ != nullptr ? heap_ : static_cast<const void*>(buffer_); }
    void copy_from(const BackwardFn& other) {
        if (other.ops_ != nullptr) other.ops_->copy(other.callable(), *this);
    }
    void move_from(BackwardFn& other) noexcept {
        if (other.ops_ != nullptr) other.ops_->move(other, *this);
    }
    void reset() noexcept {
        if (ops_ != nullptr) ops_->destroy(*this);
    }

    alignas(std::max_align_t) unsigned char buffer_[kInlineBytes];
    void* heap_ = nullptr;
    const Ops* ops_ = nullptr;
};

}  // namespace autograd
}  // namespace attograd
