// ModuleList: submodules held in order under the names "0", "1", ... (PyTorch's nn.ModuleList).
#pragma once

#include "nn/module.hpp"

#include <memory>
#include <string>

namespace attograd::nn {

/// PyTorch's `nn.ModuleList`: an ordered list of submodules registered as "0", "1", ..., so
/// their parameters are `0.weight`, `1.self_attn.in_proj_weight`, ... and a parent that
/// registers the list as "layers" gets the keys `layers.0.weight`, as in PyTorch. It has no forward: the
/// parent calls the modules it keeps (typed) itself.
class ModuleList : public Module {
public:
    /// Appends `module` as child "<size()>" and returns it. Throws ValueError when it is null.
    template <class M>
    std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
        AG_CHECK(module != nullptr, ValueError, "ModuleList::push_back: null module");
        return register_module(std::to_string(size()), std::move(module));
    }

    /// Number of modules.
    std::size_t size() const { return named_children().size(); }
    /// Module `index`. Throws IndexError when index >= size().
    std::shared_ptr<Module> at(std::size_t index) const;

    std::string type_name() const override { return "ModuleList"; }
};

}  // namespace attograd::nn
