// The reverse-mode tape: recording ops, gradient accumulation, grad mode and anomaly mode.
#pragma once

#include "core/detail/backward_fn.hpp"
#include "core/tensor.hpp"

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string_view>
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
    /// Input `i`'s gradient buffer (its shape and dtype), for a backward that adds a part of it
    /// in place (`+=`): zeros when the input has no gradient yet, a private copy when the
    /// current one is shared. A narrow, or one step of a recurrent decoder reading a whole
    /// memory, then adds only what it touches instead of a full-size zero-filled gradient.
    /// Call only when needs(i). In anomaly mode the buffer is checked after the backward.
    Tensor accumulator(std::size_t i);
    /// Whether input `i` already holds a gradient, so that accumulator() needs no zero fill (a
    /// backward whose product covers the whole input writes it fresh through add() otherwise).
    bool has_gradient(std::size_t i) const;

    // Used by the tape.
    /// Made by the tape for one op's `inputs` (`op` names it in internal errors).
    Gradients(std::span<const std::shared_ptr<detail::TensorImpl>> inputs, std::string_view op)
        : inputs_(inputs), op_(op) {}

    /// Anomaly mode: throws AutogradError when a buffer handed out by accumulator() holds NaN/Inf.
    void check_accumulators() const;

private:
    std::span<const std::shared_ptr<detail::TensorImpl>> inputs_;
    std::string_view op_;
    std::vector<std::size_t> handed_out_;  // inputs given an accumulator (anomaly mode only)
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
