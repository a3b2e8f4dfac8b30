// Learning-rate schedules: StepLR, CosineAnnealingLR, LinearWarmup and SequentialLR.
#pragma once

#include "optim/optimizer.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace attograd::optim {

/// Base of the schedules, as PyTorch's `torch.optim.lr_scheduler` with one parameter group.
/// Constructing a schedule records the optimizer's lr as its `initial_lr` (unless a schedule
/// already did), then performs PyTorch's initial step: `last_epoch() == 0` and the optimizer's
/// lr becomes `lr_at(0)`. Call step() once after each optimizer.step().
///
/// Each schedule computes the lr in PyTorch's closed form from the optimizer's initial_lr and
/// the step count, which equals PyTorch's chainable form when the schedule alone sets the lr
/// (the case PyTorch documents); an lr set by hand between steps is overwritten at the next
/// step() rather than compounded (a deliberate difference). The optimizer must outlive it.
class LRScheduler {
public:
    virtual ~LRScheduler() = default;
    LRScheduler(const LRScheduler&) = delete;
    LRScheduler& operator=(const LRScheduler&) = delete;

    /// Advances one step and sets the optimizer's lr to lr_at(last_epoch()).
    void step();
    /// The lr set by the latest step (or the constructor). PyTorch returns one per group.
    double get_last_lr() const { return last_lr_; }
    /// Steps taken since construction (PyTorch's `last_epoch`).
    std::int64_t last_epoch() const { return last_epoch_; }
    /// The lr the schedule starts from: the optimizer's initial_lr (PyTorch's `base_lrs[0]`).
    double base_lr() const;
    /// The lr after `epoch` steps, in closed form (`epoch >= 0`).
    virtual double lr_at(std::int64_t epoch) const = 0;
    /// The optimizer whose lr this schedule sets.
    Optimizer& optimizer() const { return *optimizer_; }

    /// {"last_epoch": 0-d int64}: with the optimizer's state_dict it resumes a run exactly.
    StateDict state_dict() const;
    /// Restores last_epoch and sets the optimizer's lr to lr_at(last_epoch). Throws ValueError
    /// on missing or unexpected keys or a negative count, ShapeError / DTypeError unless the
    /// entry is a 0-d int64 tensor.
    void load_state_dict(const StateDict& state);

protected:
    /// Schedules `optimizer`'s learning rate from its current lr (base_lr).
    explicit LRScheduler(Optimizer& optimizer);
    /// PyTorch's initial step (last_epoch 0); subclass constructors call it last.
    void initial_step();

private:
    Optimizer* optimizer_;
    std::int64_t last_epoch_ = -1;
    double last_lr_ = 0.0;
};

/// Options of StepLR. `step_size` has no default in PyTorch: it must be set.
struct StepLROptions {
    std::int64_t step_size = 0;  ///< decay every step_size steps, >= 1
    double gamma = 0.1;          ///< multiplicative decay, finite and >= 0
};

/// PyTorch's `StepLR`: lr = base_lr * gamma^floor(epoch / step_size).
/// Throws ValueError naming the option (step_size < 1, gamma negative or not finite).
class StepLR : public LRScheduler {
public:
    /// Takes `optimizer`'s lr as base_lr and sets the lr of epoch 0.
    StepLR(Optimizer& optimizer, StepLROptions options);
    double lr_at(std::int64_t epoch) const override;

private:
    StepLROptions options_;
};

/// Options of CosineAnnealingLR. `T_max` has no default in PyTorch: it must be set.
struct CosineAnnealingLROptions {
    std::int64_t T_max = 0;  ///< steps of the half cosine, >= 1
    double eta_min = 0.0;    ///< lr at the end of the half cosine, finite and >= 0
};

/// PyTorch's `CosineAnnealingLR` in its documented closed form (Loshchilov & Hutter 2017,
/// SGDR without restarts): lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2.
/// Past T_max the cosine goes on (the lr rises again), as in PyTorch.
/// Throws ValueError naming the option (T_max < 1, eta_min negative or not finite).
class CosineAnnealingLR : public LRScheduler {
public:
    /// Takes `optimizer`'s lr as base_lr and sets the lr of epoch 0.
    CosineAnnealingLR(Optimizer& optimizer, CosineAnnealingLROptions options);
    double lr_at(std::int64_t epoch) const override;

private:
    CosineAnnealingLROptions options_;
};

/// Options of LinearWarmup, with the defaults of PyTorch's `LinearLR` (`warmup_steps` is
/// PyTorch's `total_iters`).
struct LinearWarmupOptions {
    double start_factor = 1.0 / 3.0;  ///< lr factor at step 0, in [0, 1] (PyTorch 2 needs > 0)
    double end_factor = 1.0;          ///< lr factor from warmup_steps on, in [0, 1]
    std::int64_t warmup_steps = 5;    ///< steps of the linear ramp, >= 1
};

/// PyTorch's `LinearLR` (a linear warm-up): lr = base_lr * (start_factor + (end_factor -
/// start_factor) * min(epoch, warmup_steps) / warmup_steps).
/// Throws ValueError naming the option (a factor outside [0, 1], warmup_steps < 1).
class LinearWarmup : public LRScheduler {
public:
    /// Takes `optimizer`'s lr as base_lr and sets the lr of epoch 0.
    LinearWarmup(Optimizer& optimizer, LinearWarmupOptions options);
    double lr_at(std::int64_t epoch) const override;

private:
    LinearWarmupOptions options_;
};

/// PyTorch's `SequentialLR`: runs `schedulers[0]` until `milestones[0]`, then `schedulers[1]`
/// from its own step 0, and so on: at step e, with m the last milestone <= e (0 if none), the
/// lr is `schedulers[i].lr_at(e - m)`. A warm-up then a cosine:
///
///     auto warmup = std::make_shared<LinearWarmup>(opt, LinearWarmupOptions{.warmup_steps = 100});
///     auto cosine = std::make_shared<CosineAnnealingLR>(opt, CosineAnnealingLROptions{.T_max = 900});
///     SequentialLR schedule(opt, {warmup, cosine}, {100});
///
/// The inner schedules serve as formulas only: step the SequentialLR, not them.
/// Throws ValueError when a schedule is null or belongs to another optimizer, when there is
/// not exactly one milestone fewer than schedules, or the milestones are not positive and
/// strictly increasing.
class SequentialLR : public LRScheduler {
public:
    /// Runs `schedulers[i]` from `milestones[i - 1]` on (the first from epoch 0).
    SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                 std::vector<std::int64_t> milestones);
    double lr_at(std::int64_t epoch) const override;

private:
    std::vector<std::shared_ptr<LRScheduler>> schedulers_;
    std::vector<std::int64_t> milestones_;
};

}  // namespace attograd::optim
