// Sequential: a chain of modules, each fed the previous one's output.
#pragma once

#include "nn/module.hpp"

#include <concepts>
#include <functional>
#include <memory>
#include <vector>

namespace attograd::nn {

/// A module with `Tensor forward(const Tensor&)`.
template <class M>
concept ForwardModule = std::derived_from<M, Module> && requires(M& m, const Tensor& x) {
    { m.forward(x) } -> std::convertible_to<Tensor>;
};

/// PyTorch's `nn.Sequential`: forward(x) runs the modules in order. The children are named
/// "0", "1", ..., so parameters are `0.weight`, `1.bias`, ... as in PyTorch. An empty
/// Sequential returns its input.
class Sequential : public Module {
public:
    Sequential() = default;
    /// A chain of the given modules, in order.
    template <ForwardModule... Ms>
    explicit Sequential(std::shared_ptr<Ms>... modules) {
        (push_back(std::move(modules)), ...);
    }

    /// Appends `module` as child "<size()>". Throws ValueError when it is null.
    template <ForwardModule M>
    std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
        AG_CHECK(module != nullptr, ValueError, "Sequential::push_back: null module");
        register_module(std::to_string(forwards_.size()), module);
        forwards_.emplace_back([m = module.get()](const Tensor& x) { return Tensor(m->forward(x)); });
        return module;
    }

    /// x -> modules[n-1](...(modules[0](x))).
    Tensor forward(const Tensor& x) const;

    /// Number of modules.
    std::size_t size() const { return forwards_.size(); }
    /// Module `index`. Throws IndexError when index >= size().
    std::shared_ptr<Module> at(std::size_t index) const;

    std::string type_name() const override { return "Sequential"; }

private:
    std::vector<std::function<Tensor(const Tensor&)>> forwards_;
};

}  // namespace attograd::nn
