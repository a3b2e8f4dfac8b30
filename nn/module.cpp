// Module: registered parameters, buffers and submodules; state_dict; train/eval.
#include "nn/module.hpp"

#include "core/autograd.hpp"
#include "core/detail/key_mismatch.hpp"
#include "core/error.hpp"
#include "core/ops_elementwise.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace attograd::nn {

void Module::check_name(const std::string& name, const char* what) const {
    AG_CHECK(!name.empty(), ValueError, "{}: empty name in {}", what, type_name());
    AG_CHECK(name.find('.') == std::string::npos, ValueError, "{}: name '{}' must not contain '.' ({})", what,
             name, type_name());
    const auto taken = [&](const auto& list) {
        return std::any_of(list.begin(), list.end(), [&](const auto& entry) { return entry.first == name; });
    };
    AG_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), ValueError,
             "{}: name '{}' is already registered in {}", what, name, type_name());
}

Tensor& Module::register_parameter(const std::string& name, Tensor tensor) {
    check_name(name, "register_parameter");
    AG_CHECK(tensor.defined(), ValueError, "register_parameter: '{}' is undefined", name);
    if (!tensor.requires_grad()) tensor.requires_grad_();
    parameters_.emplace_back(name, std::move(tensor));
    return parameters_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor tensor) {
    check_name(name, "register_buffer");
    AG_CHECK(tensor.defined(), ValueError, "register_buffer: '{}' is undefined", name);
    buffers_.emplace_back(name, std::move(tensor));
    return buffers_.back().second;
}

void Module::collect(const std::string& prefix, bool recurse, bool buffers,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
    for (const auto& [name, t] : buffers ? buffers_ : parameters_) out.emplace_back(prefix + name, t);
    if (!recurse) return;
    for (const auto& [name, child] : children_) child->collect(prefix + name + ".", true, buffers, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect("", recurse, false, out);
    return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
    std::vector<Tensor> out;
    for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
    return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect("", recurse, true, out);
    return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
    std::vector<std::pair<std::string, const Module*>> out{{"", this}};
    for (const auto& [name, child] : children_)
        for (auto& [sub, module] : child->named_modules())
            out.emplace_back(sub.empty() ? name : name + "." + sub, module);
    return out;
}

StateDict Module::state_dict() const {
    StateDict state;
    for (auto& [name, t] : named_parameters()) state.emplace(name, t);
    for (auto& [name, t] : named_buffers()) state.emplace(name, t);
    return state;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
    const StateDict own = state_dict();
    std::vector<std::string> missing, unexpected;
    for (const auto& [name, t] : own)
        if (!state.contains(name)) missing.push_back(name);
    for (const auto& [name, t] : state)
        if (!own.contains(name)) unexpected.push_back(name);
    AG_CHECK(!strict || (missing.empty() && unexpected.empty()), ValueError, "load_state_dict: {}: {}",
             type_name(), attograd::detail::key_mismatch(missing, unexpected));
    // Check everything before copying anything, so a failed load changes nothing.
    for (const auto& [name, target] : own) {
        auto it = state.find(name);
        if (it == state.end()) continue;
        AG_CHECK(it->second.defined(), ValueError,
                 "load_state_dict: '{}' is an undefined tensor in the checkpoint (the model's is {} {})",
                 name, target.dtype(), target.shape());
        AG_CHECK(it->second.shape() == target.shape(), ShapeError,
                 "load_state_dict: '{}' has shape {} in the checkpoint but {} in the model", name,
                 it->second.shape(), target.shape());
        // float32 <-> float64 converts, as PyTorch's copy_; int64 / bool must match exactly
        AG_CHECK(it->second.dtype() == target.dtype() ||
                     (is_floating(it->second.dtype()) && is_floating(target.dtype())),
                 DTypeError, "load_state_dict: '{}' has dtype {} in the checkpoint but {} in the model", name,
                 it->second.dtype(), target.dtype());
    }
    for (const auto& [prefix, module] : named_modules())
        module->check_loaded_state(state, prefix.empty() ? prefix : prefix + ".");
    for (const auto& [name, target] : own) {
        auto it = state.find(name);
        if (it == state.end()) continue;
        Tensor dst = target;
        NoGradGuard no_grad;
        const Tensor src = to_dtype(it->second, dst.dtype());  // itself when the dtypes agree
        std::memmove(dst.raw_data(), src.raw_data(),
                     static_cast<std::size_t>(dst.numel()) * dtype_size(dst.dtype()));
    }
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
    for (auto& t : parameters()) t.zero_grad();
}

// dtype_changed() on `m` and every module below it.
void Module::notify_dtype(Module& m, DType dtype) {
    m.dtype_changed(dtype);
    for (auto& [name, child] : m.children_) notify_dtype(*child, dtype);
}

void Module::to(DType dtype) {
    AG_CHECK(is_floating(dtype), DTypeError, "Module::to: {} is not a float dtype", dtype);
    auto convert = [dtype](Tensor t) {
        if (t.dtype() == dtype || !is_floating(t.dtype())) return;
        const Tensor converted = to_dtype(t.detach(), dtype);
        auto& impl = *t.impl();
        impl.dtype = dtype;
        impl.storage = converted.impl()->storage;
        impl.grad.reset();
    };
    for (auto& [name, t] : named_parameters()) convert(t);
    for (auto& [name, t] : named_buffers()) convert(t);
    notify_dtype(*this, dtype);
}

namespace {
void print(const Module& m, const std::string& indent, std::string& out) {
    out += m.type_name() + "(" + m.extra_repr();
    if (!m.named_children().empty()) {
        out += "\n";
        for (const auto& [name, child] : m.named_children()) {
            out += indent + "  (" + name + "): ";
            print(*child, indent + "  ", out);
            out += "\n";
        }
        out += indent;
    }
    out += ")";
}
}  // namespace

std::string to_string(const Module& module) {
    std::string out;
    print(module, "", out);
    return out;
}

void check_input_dtype(const Tensor& input, DType parameters, std::string_view layer,
                       std::string_view input_name) {
    AG_CHECK(!input.defined() || input.dtype() == parameters, DTypeError,
             "{}: {} is {} {} but the layer's parameters are {}", layer, input_name, input.dtype(),
             input.shape(), parameters);
}

}  // namespace attograd::nn
