// Single-step recurrent cells: RNNCell, GRUCell and LSTMCell, from linear and pointwise ops (GRUCell's
// gates as one fused op).
#include "nn/rnn_cell.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "core/ops_linear.hpp"
#include "core/ops_rnn.hpp"
#include "core/ops_shape.hpp"
#include "nn/parameter_size.hpp"

#include <cmath>

namespace attograd::nn {
namespace {

// Gate k of G stacked gates [B, G*H] -> [B, H].
Tensor gate(const Tensor& gates, std::int64_t k, std::int64_t hidden) {
    return narrow(gates, 1, k * hidden, hidden);
}

}  // namespace

RecurrentCell::RecurrentCell(const RNNCellOptions& o, std::string_view name, std::int64_t gates,
                             std::string_view nonlinearities, Generator& generator)
    : options_(o) {
    AG_CHECK(o.input_size >= 1 && o.hidden_size >= 1, ValueError,
             "{}: input_size and hidden_size must be >= 1, got input_size={} hidden_size={}", name,
             o.input_size, o.hidden_size);
    AG_CHECK(o.nonlinearity == "tanh" || (nonlinearities != "tanh" && o.nonlinearity == "relu"), ValueError,
             "{}: unknown nonlinearity '{}' (choose {})", name, o.nonlinearity, nonlinearities);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", name, o.dtype);
    const std::int64_t g = gate_rows(name, gates, o.hidden_size, "weight_ih");
    const std::string dims = fmt::format("input_size {} and hidden_size {}", o.input_size, o.hidden_size);
    check_parameter_size(name, dims, "weight_ih", {g, o.input_size}, o.dtype);
    check_parameter_size(name, dims, "weight_hh", {g, o.hidden_size}, o.dtype);
    // PyTorch: every parameter ~ U(-1/sqrt(H), 1/sqrt(H)).
    const double bound = 1.0 / std::sqrt(static_cast<double>(o.hidden_size));
    auto draw = [&](const Shape& shape) {
        return uniform(shape, -bound, bound, generator, {.dtype = o.dtype});
    };
    weight_ih_ = register_parameter("weight_ih", draw({g, o.input_size}));
    weight_hh_ = register_parameter("weight_hh", draw({g, o.hidden_size}));
    if (o.bias) {
        bias_ih_ = register_parameter("bias_ih", draw({g}));
        bias_hh_ = register_parameter("bias_hh", draw({g}));
    }
}

std::string RecurrentCell::extra_repr() const {
    std::string s = fmt::format("{}, {}", options_.input_size, options_.hidden_size);
    if (!options_.bias) s += ", bias=false";
    if (options_.nonlinearity != "tanh") s += fmt::format(", nonlinearity={}", options_.nonlinearity);
    return s;
}

std::pair<Tensor, Tensor> RecurrentCell::batched(const Tensor& input, const Tensor& hx,
                                                 std::string_view hx_name) const {
    AG_CHECK(input.defined(), ValueError, "{}: input is undefined", type_name());
    const std::int64_t in = options_.input_size;
    AG_CHECK((input.dim() == 2 || input.dim() == 1) && input.size(-1) == in, ShapeError,
             "{}: input must be [B, input_size] = [B, {}] (or unbatched [{}]), got {}", type_name(), in, in,
             input.shape());
    check_input_dtype(input, options_.dtype, type_name(), "input");
    const bool unbatched = input.dim() == 1;
    const Tensor x = unbatched ? reshape(input, {1, in}) : input;
    return {x, state(hx, x.size(0), unbatched, hx_name)};
}

Tensor RecurrentCell::state(const Tensor& s, std::int64_t batch, bool unbatched,
                            std::string_view name) const {
    const std::int64_t h = options_.hidden_size;
    if (!s.defined()) return zeros({batch, h}, {.dtype = options_.dtype});
    if (unbatched) {
        AG_CHECK(s.dim() == 1 && s.size(0) == h, ShapeError,
                 "{}: {} must be [hidden_size] = [{}] for an unbatched input, got {}", type_name(), name, h,
                 s.shape());
    } else {
        AG_CHECK(s.dim() == 2 && s.size(0) == batch && s.size(1) == h, ShapeError,
                 "{}: {} must be [B, hidden_size] = [{}, {}], got {}", type_name(), name, batch, h,
                 s.shape());
    }
    check_input_dtype(s, options_.dtype, type_name(), name);
    return unbatched ? reshape(s, {1, h}) : s;
}

Tensor RecurrentCell::input_gates(const Tensor& x) const { return linear(x, weight_ih_, bias_ih_); }
Tensor RecurrentCell::hidden_gates(const Tensor& h) const { return linear(h, weight_hh_, bias_hh_); }

// --- RNNCell -----------------------------------------------------------------------------------

RNNCell::RNNCell(const RNNCellOptions& options, Generator& generator)
    : RecurrentCell(options, "RNNCell", 1, "tanh or relu", generator) {}

Tensor RNNCell::forward(const Tensor& input, const Tensor& hx) const {
    const auto [x, h] = batched(input, hx, "hx");
    const Tensor pre = input_gates(x) + hidden_gates(h);
    const Tensor out = options().nonlinearity == "relu" ? relu(pre) : tanh(pre);
    return input.dim() == 1 ? reshape(out, {hidden_size()}) : out;
}

// --- GRUCell -----------------------------------------------------------------------------------

GRUCell::GRUCell(const RNNCellOptions& options, Generator& generator)
    : RecurrentCell(options, "GRUCell", 3, "tanh", generator) {}

Tensor GRUCell::forward(const Tensor& input, const Tensor& hx) const {
    const auto [x, h] = batched(input, hx, "hx");
    // r, z, n and h' = (1 - z) n + z h fused in one op: a decoder runs this cell at every step
    const Tensor out = gru_cell(input_gates(x), hidden_gates(h), h);  // [B, 3H] pre-activations each
    return input.dim() == 1 ? reshape(out, {hidden_size()}) : out;
}

// --- LSTMCell ----------------------------------------------------------------------------------

LSTMCell::LSTMCell(const RNNCellOptions& options, Generator& generator)
    : RecurrentCell(options, "LSTMCell", 4, "tanh", generator) {}

std::pair<Tensor, Tensor> LSTMCell::forward(const Tensor& input, const std::pair<Tensor, Tensor>& hx) const {
    const auto [x, h] = batched(input, hx.first, "hx.h");
    const Tensor c = state(hx.second, x.size(0), input.dim() == 1, "hx.c");
    const std::int64_t H = hidden_size();
    const Tensor gates = input_gates(x) + hidden_gates(h);  // [B, 4H], gates i, f, g, o
    const Tensor i = sigmoid(gate(gates, 0, H)), f = sigmoid(gate(gates, 1, H));
    const Tensor g = tanh(gate(gates, 2, H)), o = sigmoid(gate(gates, 3, H));
    const Tensor c_next = f * c + i * g;
    const Tensor h_next = o * tanh(c_next);
    if (input.dim() == 1) return {reshape(h_next, {H}), reshape(c_next, {H})};
    return {h_next, c_next};
}

}  // namespace attograd::nn
