// ModuleList: submodules held in order under the names "0", "1", ... (PyTorch's nn.ModuleList).
#include "nn/module_list.hpp"

namespace attograd::nn {

std::shared_ptr<Module> ModuleList::at(std::size_t index) const {
    AG_CHECK(index < size(), IndexError, "ModuleList::at: index {} out of range for {} modules", index,
             size());
    return named_children()[index].second;
}

}  // namespace attograd::nn
