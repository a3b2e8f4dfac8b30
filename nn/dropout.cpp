// Dropout: zeroes random elements while training.
#include "nn/dropout.hpp"

#include "core/ops_random.hpp"

namespace attograd::nn {

Dropout::Dropout(DropoutOptions options, Generator& generator) : options_(options), generator_(&generator) {
    AG_CHECK(options.p >= 0.0 && options.p <= 1.0, ValueError, "Dropout: p must be in [0, 1], got {}",
             options.p);
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, options_.p, is_training(), *generator_); }

std::string Dropout::extra_repr() const { return fmt::format("p={}", options_.p); }

}  // namespace attograd::nn
