// Optimizer base: parameter checks, step() over the parameters with a gradient, state_dict.
#include "optim/optimizer.hpp"

#include "core/autograd.hpp"
#include "core/detail/key_mismatch.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops_elementwise.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace attograd::optim {
namespace {

void check_lr(double lr, std::string_view who, std::string_view what) {
    AG_CHECK(std::isfinite(lr) && lr >= 0.0, ValueError, "{}: {} must be a finite number >= 0, got {}", who,
             what, lr);
}

// "state.<i>.<name>" -> (i, name) when i indexes a parameter and name is a state name.
std::optional<std::pair<std::size_t, std::string>> parse_state_key(const std::string& key, std::size_t count,
                                                                   const std::vector<std::string>& names) {
    constexpr std::string_view prefix = "state.";
    if (!key.starts_with(prefix)) return std::nullopt;
    const char* first = key.data() + prefix.size();
    const char* last = key.data() + key.size();
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(first, last, index);
    if (ec != std::errc{} || end == first || end == last || *end != '.' || index >= count)
        return std::nullopt;
    std::string name(end + 1, last);
    if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
    return std::pair{index, std::move(name)};
}

// The value of a 0-d float64 entry, checked.
double scalar_entry(const Tensor& t, const std::string& key, std::string_view who) {
    AG_CHECK(t.defined(), ValueError, "{}.load_state_dict: '{}' is an undefined tensor", who, key);
    AG_CHECK(t.shape().empty(), ShapeError, "{}.load_state_dict: '{}' has shape {} but must be a 0-d tensor",
             who, key, t.shape());
    AG_CHECK(t.dtype() == DType::Float64, DTypeError,
             "{}.load_state_dict: '{}' has dtype {} but must be float64", who, key, t.dtype());
    return t.item();
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr, std::string name)
    : params_(std::move(params)), state_(params_.size()), lr_(lr), name_(std::move(name)) {
    AG_CHECK(!params_.empty(), ValueError, "{}: got an empty parameter list", name_);
    for (std::size_t i = 0; i < params_.size(); ++i) {
        const Tensor& p = params_[i];
        AG_CHECK(p.defined(), ValueError, "{}: parameter {} is an undefined tensor", name_, i);
        AG_CHECK(is_floating(p.dtype()), DTypeError,
                 "{}: parameter {} is {}; only float32 and float64 tensors can be optimized", name_, i,
                 p.dtype());
        AG_CHECK(p.is_leaf(), ValueError,
                 "{}: parameter {} {} was made by a recorded op; only leaf tensors can be optimized", name_,
                 i, p.shape());
        for (std::size_t j = 0; j < i; ++j)
            AG_CHECK(params_[j].impl() != p.impl(), ValueError,
                     "{}: parameter {} is the same tensor as parameter {}", name_, i, j);
    }
    check_lr(lr, name_, "lr");
}

void Optimizer::check_loaded_state(const std::string&, const std::map<std::string, Tensor>&) const {}

void Optimizer::check_option(bool ok, std::string_view option, std::string_view rule, double value) const {
    AG_CHECK(ok, ValueError, "{}: {} must be {}, got {}", name_, option, rule, value);
}

void Optimizer::step() {
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor& p = params_[i];
        const Tensor grad = p.grad();
        if (!grad.defined()) continue;
        for (const auto& [key, t] : state_[i])
            AG_CHECK(
                t.dtype() == DType::Int64 || t.dtype() == p.dtype(), DTypeError,
                "{}.step: parameter {} is {} but its state '{}' is {}; convert the model before creating "
                "the optimizer",
                name_, i, p.dtype(), key, t.dtype());
        // lr is a double; cast to a float32 parameter's dtype it may overflow and turn every
        // element into inf or NaN
        AG_CHECK(p.dtype() != DType::Float32 || std::isfinite(static_cast<float>(lr_)), ValueError,
                 "{}.step: lr {} is beyond the float32 range of parameter {} {}", name_, lr_, i, p.shape());
        update(i, p, grad);
    }
}

void Optimizer::zero_grad() {
    for (Tensor& p : params_) p.zero_grad();
}

void Optimizer::set_lr(double lr) {
    check_lr(lr, name_, "lr");
    lr_ = lr;
}

void Optimizer::set_initial_lr(double lr) {
    check_lr(lr, name_, "initial_lr");
    initial_lr_ = lr;
}

StateDict Optimizer::state_dict() const {
    StateDict out;
    const auto put = [&out](const std::string& key, double value) {
        out.emplace(key, scalar(value, {.dtype = DType::Float64}));
    };
    put("lr", lr_);
    if (initial_lr_) put("initial_lr", *initial_lr_);
    for (const auto& [key, value] : option_values()) put(key, value);
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < state_.size(); ++i)
        for (const auto& [key, t] : state_[i]) out.emplace(fmt::format("state.{}.{}", i, key), clone(t));
    return out;
}

void Optimizer::load_state_dict(const StateDict& state) {
    const auto names = state_names();
    const auto opts = option_values();
    const auto is_option = [&opts](const std::string& key) {
        return std::any_of(opts.begin(), opts.end(), [&key](const auto& o) { return o.first == key; });
    };

    // Sort every entry into the parameter state it belongs to; collect what is missing or extra.
    std::vector<std::map<std::string, Tensor>> loaded(params_.size());
    std::vector<std::string> missing, unexpected;
    for (const auto& [key, t] : state) {
        if (key == "lr" || key == "initial_lr" || is_option(key)) continue;
        auto entry = parse_state_key(key, params_.size(), names);
        if (entry)
            loaded[entry->first].emplace(std::move(entry->second), t);
        else
            unexpected.push_back(key);
    }
    if (!state.contains("lr")) missing.emplace_back("lr");
    for (const auto& [key, value] : opts)
        if (!state.contains(key)) missing.push_back(key);
    for (std::size_t i = 0; i < loaded.size(); ++i) {
        if (loaded[i].empty()) continue;  // never updated: no state at all
        for (const auto& name : names)
            if (!loaded[i].contains(name)) missing.push_back(fmt::format("state.{}.{}", i, name));
    }
    AG_CHECK(missing.empty() && unexpected.empty(), ValueError, "{}.load_state_dict: {}", name_,
             attograd::detail::key_mismatch(missing, unexpected));

    // Check every value before changing anything.
    const double lr = scalar_entry(state.at("lr"), "lr", name_);
    check_lr(lr, name_ + ".load_state_dict", "lr");
    std::optional<double> initial_lr;
    if (auto it = state.find("initial_lr"); it != state.end()) {
        initial_lr = scalar_entry(it->second, "initial_lr", name_);
        check_lr(*initial_lr, name_ + ".load_state_dict", "initial_lr");
    }
    for (const auto& [key, value] : opts) {
        const double saved = scalar_entry(state.at(key), key, name_);
        AG_CHECK(saved == value, ValueError,
                 "{}.load_state_dict: option '{}' is {} in the saved state but {} in this optimizer", name_,
                 key, saved, value);
    }
    for (std::size_t i = 0; i < loaded.size(); ++i) {
        const Tensor& p = params_[i];
        for (const auto& [name, t] : loaded[i]) {
            const std::string key = fmt::format("state.{}.{}", i, name);
            AG_CHECK(t.defined(), ValueError, "{}.load_state_dict: '{}' is an undefined tensor", name_, key);
            if (name == "step") {
                AG_CHECK(t.shape().empty(), ShapeError,
                         "{}.load_state_dict: '{}' has shape {} but must be 0-d", name_, key, t.shape());
                AG_CHECK(t.dtype() == DType::Int64, DTypeError,
                         "{}.load_state_dict: '{}' has dtype {} but must be int64", name_, key, t.dtype());
                AG_CHECK(t.item() >= 0, ValueError, "{}.load_state_dict: '{}' is negative ({})", name_, key,
                         t.item());
                continue;
            }
            AG_CHECK(t.shape() == p.shape(), ShapeError,
                     "{}.load_state_dict: '{}' has shape {} in the saved state but parameter {} has shape {}",
                     name_, key, t.shape(), i, p.shape());
            AG_CHECK(t.dtype() == p.dtype(), DTypeError,
                     "{}.load_state_dict: '{}' has dtype {} in the saved state but parameter {} is {}", name_,
                     key, t.dtype(), i, p.dtype());
            const auto values = t.to_vector<double>();
            const auto bad =
                std::find_if(values.begin(), values.end(), [](double x) { return !std::isfinite(x); });
            AG_CHECK(bad == values.end(), ValueError, "{}.load_state_dict: '{}' holds {} at index {}", name_,
                     key, *bad, bad - values.begin());
        }
        if (!loaded[i].empty()) check_loaded_state(fmt::format("state.{}", i), loaded[i]);
    }

    NoGradGuard no_grad;
    for (auto& s : loaded)
        for (auto& [name, t] : s) t = clone(t);
    lr_ = lr;
    if (initial_lr) initial_lr_ = initial_lr;  // once a schedule set it, it stays set
    state_ = std::move(loaded);
}

}  // namespace attograd::optim
