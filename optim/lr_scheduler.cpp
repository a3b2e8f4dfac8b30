// Learning-rate schedules in PyTorch's closed forms.
#include "optim/lr_scheduler.hpp"

#include "core/detail/key_mismatch.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attograd::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(&optimizer) {
    if (!optimizer.initial_lr()) optimizer.set_initial_lr(optimizer.lr());
}

double LRScheduler::base_lr() const { return *optimizer_->initial_lr(); }

void LRScheduler::initial_step() {
    last_epoch_ = -1;
    step();
}

void LRScheduler::step() {
    ++last_epoch_;
    last_lr_ = lr_at(last_epoch_);
    optimizer_->set_lr(last_lr_);
}

StateDict LRScheduler::state_dict() const { return {{"last_epoch", index_tensor({last_epoch_}, {})}}; }

void LRScheduler::load_state_dict(const StateDict& state) {
    std::vector<std::string> unexpected;
    for (const auto& [key, t] : state)
        if (key != "last_epoch") unexpected.push_back(key);
    const auto it = state.find("last_epoch");
    AG_CHECK(it != state.end() && unexpected.empty(), ValueError, "LRScheduler.load_state_dict: {}",
             attograd::detail::key_mismatch(
                 it == state.end() ? std::vector<std::string>{"last_epoch"} : std::vector<std::string>{},
                 unexpected));
    const Tensor& t = it->second;
    AG_CHECK(t.defined(), ValueError, "LRScheduler.load_state_dict: 'last_epoch' is an undefined tensor");
    AG_CHECK(t.shape().empty(), ShapeError,
             "LRScheduler.load_state_dict: 'last_epoch' must be a 0-d tensor, got shape {}", t.shape());
    AG_CHECK(t.dtype() == DType::Int64, DTypeError,
             "LRScheduler.load_state_dict: 'last_epoch' must be int64, got {}", t.dtype());
    const std::int64_t epoch = t.data<std::int64_t>()[0];
    AG_CHECK(epoch >= 0, ValueError, "LRScheduler.load_state_dict: 'last_epoch' is negative ({})", epoch);
    last_epoch_ = epoch - 1;
    step();
}

StepLR::StepLR(Optimizer& optimizer, StepLROptions options) : LRScheduler(optimizer), options_(options) {
    AG_CHECK(options.step_size >= 1, ValueError, "StepLR: step_size must be >= 1, got {}", options.step_size);
    AG_CHECK(std::isfinite(options.gamma) && options.gamma >= 0.0, ValueError,
             "StepLR: gamma must be a finite number >= 0, got {}", options.gamma);
    initial_step();
}

// lr = base_lr gamma^floor(epoch / step_size)
double StepLR::lr_at(std::int64_t epoch) const {
    return base_lr() * std::pow(options_.gamma, static_cast<double>(epoch / options_.step_size));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, CosineAnnealingLROptions options)
    : LRScheduler(optimizer), options_(options) {
    AG_CHECK(options.T_max >= 1, ValueError, "CosineAnnealingLR: T_max must be >= 1, got {}", options.T_max);
    AG_CHECK(std::isfinite(options.eta_min) && options.eta_min >= 0.0, ValueError,
             "CosineAnnealingLR: eta_min must be a finite number >= 0, got {}", options.eta_min);
    initial_step();
}

// lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2
double CosineAnnealingLR::lr_at(std::int64_t epoch) const {
    const double eta_min = options_.eta_min;
    const double angle = std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(options_.T_max);
    // max(): rounding must never make the lr negative when eta_min is 0 and base_lr is tiny
    return std::max(0.0, eta_min + (base_lr() - eta_min) * (1.0 + std::cos(angle)) / 2.0);
}

LinearWarmup::LinearWarmup(Optimizer& optimizer, LinearWarmupOptions options)
    : LRScheduler(optimizer), options_(options) {
    AG_CHECK(options.start_factor >= 0.0 && options.start_factor <= 1.0, ValueError,
             "LinearWarmup: start_factor must be in [0, 1], got {}", options.start_factor);
    AG_CHECK(options.end_factor >= 0.0 && options.end_factor <= 1.0, ValueError,
             "LinearWarmup: end_factor must be in [0, 1], got {}", options.end_factor);
    AG_CHECK(options.warmup_steps >= 1, ValueError, "LinearWarmup: warmup_steps must be >= 1, got {}",
             options.warmup_steps);
    initial_step();
}

// lr = base_lr (start + (end - start) min(epoch, warmup_steps) / warmup_steps)
double LinearWarmup::lr_at(std::int64_t epoch) const {
    const auto done = static_cast<double>(std::min(epoch, options_.warmup_steps));
    const double factor = options_.start_factor + (options_.end_factor - options_.start_factor) * done /
                                                      static_cast<double>(options_.warmup_steps);
    return base_lr() * factor;
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<std::int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
    AG_CHECK(!schedulers_.empty(), ValueError, "SequentialLR: got no schedulers");
    for (std::size_t i = 0; i < schedulers_.size(); ++i) {
        AG_CHECK(schedulers_[i] != nullptr, ValueError, "SequentialLR: scheduler {} is null", i);
        AG_CHECK(&schedulers_[i]->optimizer() == &optimizer, ValueError,
                 "SequentialLR: scheduler {} belongs to another optimizer", i);
    }
    AG_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError,
             "SequentialLR: expected {} milestones for {} schedulers, got {}", schedulers_.size() - 1,
             schedulers_.size(), milestones_.size());
    for (std::size_t i = 0; i < milestones_.size(); ++i)
        AG_CHECK(milestones_[i] > (i == 0 ? 0 : milestones_[i - 1]), ValueError,
                 "SequentialLR: milestones must be positive and strictly increasing, got [{}]",
                 fmt::join(milestones_, ", "));
    initial_step();
}

// lr = schedulers[i].lr_at(epoch - milestones[i - 1]) with i = #milestones <= epoch
double SequentialLR::lr_at(std::int64_t epoch) const {
    const auto i = static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) -
                                            milestones_.begin());
    return schedulers_[i]->lr_at(i == 0 ? epoch : epoch - milestones_[i - 1]);
}

}  // namespace attograd::optim
