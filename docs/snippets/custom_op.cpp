// A new differentiable op: compute the forward, and when the tape records, give the backward
// that adds the input's gradient. Then check it against central differences in float64.
#include <attograd/attograd.hpp>
using namespace attograd;

/// softplus(x) = log(1 + exp(x)), elementwise; PyTorch's torch.nn.functional.softplus (beta 1).
Tensor softplus(const Tensor& x) {
    Tensor out;
    {
        NoGradGuard no_grad;  // the forward's own ops stay off the tape: one entry for the whole op
        out = log(1.0 + exp(x));
    }
    if (autograd::needs_record({&x})) {
        // dx = dy * sigmoid(x)
        autograd::record("softplus", {x}, out,
                         [x](const Tensor& dy, autograd::Gradients& g) { g.add(0, dy * sigmoid(x)); });
    }
    return out;
}

int main() {
    Generator gen(0);
    const Tensor x = randn({3, 4}, gen, {.dtype = DType::Float64, .requires_grad = true});
    const GradcheckResult check =
        gradcheck([](const std::vector<Tensor>& in) { return softplus(in[0]); }, {x});
    fmt::print("gradcheck {}: max error {:.2e}\n", check.ok ? "passed" : "failed", check.max_abs_error);
    return check.ok ? 0 : 1;
}
