// Sequential: a chain of modules, each fed the previous one's output.
#include "nn/sequential.hpp"

namespace attograd::nn {

Tensor Sequential::forward(const Tensor& x) const {
    Tensor out = x;
    for (const auto& f : forwards_) out = f(out);
    return out;
}

std::shared_ptr<Module> Sequential::at(std::size_t index) const {
    AG_CHECK(index < size(), IndexError, "Sequential::at: index {} out of range for {} modules", index,
             size());
    return named_children()[index].second;
}

}  // namespace attograd::nn
