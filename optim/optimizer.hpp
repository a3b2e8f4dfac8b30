// Optimizer: the base of SGD, Adam and AdamW: parameter handles, per-parameter state, the lr.
#pragma once

#include "core/tensor.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::optim {

/// Optimizer state by name, flat so that it can be saved next to the model's state_dict:
/// `lr` (and `initial_lr` once a schedule is attached) and the options as 0-d float64 tensors,
/// plus `state.<i>.<name>` per parameter `i` that has been updated at least once, e.g.
/// `state.0.momentum_buffer` or `state.0.step` (0-d int64), `state.0.exp_avg` (the parameter's
/// shape and dtype). The names are PyTorch's `optimizer.state_dict()` entries, flattened.
using StateDict = std::map<std::string, Tensor>;

/// Base of the optimizers, as PyTorch's `torch.optim.Optimizer` with one parameter group.
/// It holds handles to the parameters (the same storage the model holds), so `step()` changes
/// the model. Subclasses implement one fused pass over each parameter's data.
///
/// Typical loop: `opt.zero_grad(); loss.backward(); opt.step();`.
class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    /// Updates every parameter that has a gradient, with recording off (PyTorch's `step()`
    /// under `torch.no_grad()`). Parameters without a gradient are skipped and keep their
    /// state, as in PyTorch. Throws DTypeError when a parameter's dtype was changed after its
    /// state was made (convert the model before creating the optimizer), and ValueError when lr
    /// is beyond the float32 range of a float32 parameter (PyTorch would write inf there).
    void step();
    /// Drops every parameter's gradient. This is PyTorch's `zero_grad(set_to_none=True)`, the
    /// default since PyTorch 2.0 (1.13 zeroed in place): a parameter that gets no gradient in
    /// the next backward is then skipped by step() instead of being decayed.
    void zero_grad();

    /// The learning rate the next step() uses (PyTorch's `param_groups[0]["lr"]`).
    double lr() const { return lr_; }
    /// Sets the learning rate (schedules use it). Throws ValueError unless finite and >= 0.
    void set_lr(double lr);
    /// PyTorch's `param_groups[0]["initial_lr"]`: the lr when the first schedule was attached.
    /// Every schedule on this optimizer computes its lr from it, so a warm-up and a cosine
    /// built one after the other both start from the same base.
    std::optional<double> initial_lr() const { return initial_lr_; }
    /// Records the base lr of the schedules (done by the first schedule attached). Throws
    /// ValueError unless finite and >= 0.
    void set_initial_lr(double lr);

    /// The parameter handles, in the order given to the constructor (`state.<i>` indices).
    const std::vector<Tensor>& parameters() const { return params_; }
    /// "SGD", "Adam" or "AdamW" (used in error messages).
    const std::string& name() const { return name_; }

    /// A copy of the optimizer's state (see StateDict): later steps do not change it. Saving
    /// it with the model and loading both resumes a run exactly, bit for bit.
    StateDict state_dict() const;
    /// Restores a state_dict() of an optimizer of the same kind over parameters of the same
    /// shapes. Sets the lr and (when saved) initial_lr; the saved options must equal this
    /// optimizer's (a deliberate difference from PyTorch, which silently overwrites them).
    /// Throws ValueError listing missing and unexpected names (a parameter with part of its
    /// state shows as missing entries), and on an option that differs; ShapeError / DTypeError
    /// naming the entry and both shapes / dtypes. Nothing changes when it throws. The tensors
    /// are copied.
    void load_state_dict(const StateDict& state);

protected:
    /// Checks the parameters (ValueError: none, undefined, repeated or made by a recorded op;
    /// DTypeError: not float) and the lr (ValueError naming `name`).
    Optimizer(std::vector<Tensor> params, double lr, std::string name);

    /// Updates parameter `index` in place from `grad` (same shape and dtype) in one pass.
    virtual void update(std::size_t index, Tensor& param, const Tensor& grad) = 0;
    /// The names a parameter's state has once it was updated, e.g. {"step", "exp_avg", ...}.
    virtual std::vector<std::string> state_names() const = 0;
    /// The options saved in state_dict() and checked by load_state_dict(), e.g. {"momentum",
    /// 0.9} (booleans as 0 or 1).
    virtual std::vector<std::pair<std::string, double>> option_values() const = 0;

    /// Checks invariants of one parameter's loaded state (`state` by name, already checked for
    /// shapes, dtypes and finite values) that no run of this optimizer could break; throws
    /// ValueError naming `key_prefix` ("state.3") and the entry. Default: nothing more.
    virtual void check_loaded_state(const std::string& key_prefix,
                                    const std::map<std::string, Tensor>& state) const;

    /// Throws ValueError "<name>: <option> must be <rule>, got <value>" unless `ok`.
    void check_option(bool ok, std::string_view option, std::string_view rule, double value) const;

    /// The state of parameter `index` by name (empty until its first update).
    std::map<std::string, Tensor>& state(std::size_t index) { return state_[index]; }

private:
    std::vector<Tensor> params_;
    std::vector<std::map<std::string, Tensor>> state_;
    double lr_;
    std::optional<double> initial_lr_;
    std::string name_;
};

}  // namespace attograd::optim
