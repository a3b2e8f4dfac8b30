// The reverse-mode tape: recording ops, gradient accumulation, grad mode and anomaly mode.
#pragma once

#include "core/tensor.hpp"

#include <cstddef>
#include <initializer_list>
#include <new>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace attograd {

/// True while recording is on for this thread (the default).
bool grad_enabled();

/// RAII: turns recording off for the current thread while alive (PyTorch's `torch.no_grad`).
class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

/// True while anomaly detection is on for this thread.
bool anomaly_mode_enabled();

/// RAII: while alive, every recorded op's output and every gradient computed in backward is
/// checked for NaN/Inf; the first one found throws AutogradError naming the op
/// (PyTorch's `torch.autograd.detect_anomaly`). Costs a pass over each tensor.
class AnomalyModeGuard {
public:
    AnomalyModeGuard();
    ~AnomalyModeGuard();
    AnomalyModeGuard(const AnomalyModeGuard&) = delete;
    AnomalyModeGuard& operator=(const AnomalyModeGuard&) = delete;

private:
    bool previous_;
};

namespace autograd {

/// Number of live entries on this thread's tape. After `loss.backward()` of a training step
/// it is 0: consumed entries are released. An entry whose output tensor is destroyed without a
/// backward is released at the next recorded op (with the tensors its backward saved), as a
/// PyTorch graph dies with its outputs; entries kept alive only through such an entry's inputs
/// go in the same pass.
std::size_t tape_size();

/// Drops every entry of this thread's tape (tensors made by them can no longer backward).
void clear_tape();

/// Handed to a backward function: accumulates the gradient of each input.
class Gradients {
public:
    /// Whether input `i` needs a gradient (skip computing it otherwise).
    bool needs(std::size_t i) const;
    /// Adds `grad` into input `i`'s gradient. `grad` must have the input's shape and dtype
    /// (an internal invariant). Ignored when the input needs no gradient.
    void add(std::size_t i, const Tensor& grad);

    // Used by the tape.
    /// Made by the tape for one op's `inputs` (`op` names it in internal errors).
    Gradients(std::span<const std::shared_ptr<detail::TensorImpl>> inputs, std::string_view op)
        : inputs_(inputs), op_(op) {}

private:
    std::span<const std::shared_ptr<detail::TensorImpl>> inputs_;
    std::string_view op_;
};

/// Backward of one op: receives dL/d(output) and adds dL/d(input_i) through `grads`.
/// It runs with recording off, so it may call ops freely. It behaves as
/// `std::function<void(const Tensor&, Gradients&)>` (any copyable callable converts to it),
/// but keeps callables of up to 64 bytes inline -- the captures of nearly every op -- so that
/// recording an op does not allocate for its backward.
class BackwardFn {
public:
    /// An empty function.
    BackwardFn() = default;
    /// An empty function, as from `nullptr` (calling it throws AutogradError).
    BackwardFn(std::nullptr_t) {}
    /// Wraps any copyable callable `void(const Tensor&, Gradients&)`, inline when it fits 64 bytes.
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
    BackwardFn(const BackwardFn& other) { copy_from(other); }  ///< Copies the callable.
    /// Takes the callable; `other` is left empty.
    BackwardFn(BackwardFn&& other) noexcept { move_from(other); }
    /// Copies the callable.
    BackwardFn& operator=(const BackwardFn& other) {
        if (this != &other) {
            BackwardFn copy(other);
            *this = std::move(copy);
        }
        return *this;
    }
    /// Takes the callable; `other` is left empty.
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
    /// True when it holds a callable.
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

/// True when an op on these inputs must be recorded (grad mode on and some input needs grad).
bool needs_record(std::initializer_list<const Tensor*> inputs);
bool needs_record(const std::vector<Tensor>& inputs);

/// Appends one tape entry for `op`: `output` was computed from `inputs`; `backward` maps the
/// output's gradient to the inputs' gradients. Marks `output` as requiring grad. Call only
/// when needs_record() is true. `op` must be a string literal (it is kept).
void record(const char* op, const std::vector<Tensor>& inputs, Tensor& output, BackwardFn backward);
/// As above, for a braced list of inputs (`record("add", {a, b}, out, ...)`) without building
/// a vector.
void record(const char* op, std::initializer_list<Tensor> inputs, Tensor& output, BackwardFn backward);

/// Adds `grad` into the gradient of `target` (shape-checked). Used by backward() for the root.
void accumulate(detail::TensorImpl& target, const Tensor& grad, std::string_view op);

/// Runs reverse mode from `root` with upstream gradient `grad_output` (see Tensor::backward).
void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph);

}  // namespace autograd
}  // namespace attograd
