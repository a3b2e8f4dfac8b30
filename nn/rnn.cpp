// Recurrent layers over whole sequences: RNN, GRU and LSTM (PyTorch's torch.nn layers).
#include "nn/rnn.hpp"

#include "core/ops_index.hpp"
#include "core/ops_random.hpp"
#include "core/ops_shape.hpp"
#include "nn/parameter_size.hpp"

#include <cmath>

namespace attograd::nn {
namespace {

// Registering a layer's tensors checks each name against those before it, so construction grows
// with the square of the layer count; no recurrent stack comes near this depth.
constexpr std::int64_t max_rnn_layers = 1024;

}  // namespace

Tensor lengths_from_padding_mask(const Tensor& key_padding_mask) {
    const Tensor& m = key_padding_mask;
    AG_CHECK(m.defined(), ValueError, "lengths_from_padding_mask: key_padding_mask is undefined");
    AG_CHECK(m.dtype() == DType::Bool, DTypeError,
             "lengths_from_padding_mask: key_padding_mask must be bool (true at padding), got {} {}",
             m.dtype(), m.shape());
    AG_CHECK(m.dim() == 2, ShapeError, "lengths_from_padding_mask: key_padding_mask must be [B, T], got {}",
             m.shape());
    const std::int64_t batch = m.size(0), steps = m.size(1);
    std::vector<std::int64_t> lengths(static_cast<std::size_t>(batch));
    const bool* p = m.data<bool>();
    for (std::int64_t b = 0; b < batch; ++b) {
        const bool* row = p + b * steps;
        std::int64_t len = 0;
        while (len < steps && !row[len]) ++len;
        for (std::int64_t t = len; t < steps; ++t)
            AG_CHECK(row[t], ValueError,
                     "lengths_from_padding_mask: row {} of key_padding_mask {} has a step after padding "
                     "(step {}); padding must come last",
                     b, m.shape(), t);
        AG_CHECK(len > 0, ValueError,
                 "lengths_from_padding_mask: row {} of key_padding_mask {} is all padding (a zero-length "
                 "sequence)",
                 b, m.shape());
        lengths[static_cast<std::size_t>(b)] = len;
    }
    return index_tensor(lengths, {batch});
}

RecurrentBase::RecurrentBase(const char* name, Config config, Generator& generator)
    : name_(name), config_(config), generator_(&generator) {
    const Config& c = config;
    AG_CHECK(c.input_size >= 1 && c.hidden_size >= 1 && c.num_layers >= 1, ValueError,
             "{}: input_size, hidden_size and num_layers must be >= 1, got {}, {} and {}", name, c.input_size,
             c.hidden_size, c.num_layers);
    AG_CHECK(c.num_layers <= max_rnn_layers, ValueError,
             "{}: num_layers must be at most {}, got {} (each layer's tensors are registered by name, "
             "a cost that grows with the square of their count)",
             name, max_rnn_layers, c.num_layers);
    AG_CHECK(c.dropout >= 0.0 && c.dropout < 1.0, ValueError, "{}: dropout must be in [0, 1), got {}", name,
             c.dropout);
    AG_CHECK(c.proj_size >= 0 && c.proj_size < c.hidden_size, ValueError,
             "{}: proj_size must be in [0, hidden_size = {}), got {}", name, c.hidden_size, c.proj_size);
    AG_CHECK(is_floating(c.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", name, c.dtype);
    const std::int64_t h = c.hidden_size, g = gate_rows(name, rnn_gate_count(c.mode), h, "weight_ih_l0");
    const std::int64_t p = c.proj_size > 0 ? c.proj_size : h, directions = num_directions();
    const std::string sizes = fmt::format("input_size {} and hidden_size {}", c.input_size, h);
    check_parameter_size(name, sizes, "weight_ih_l0", {g, c.input_size}, c.dtype);
    if (c.num_layers > 1) check_parameter_size(name, sizes, "weight_ih_l1", {g, directions * p}, c.dtype);
    check_parameter_size(name, sizes, "weight_hh_l0", {g, p}, c.dtype);
    // Every layer's tensors together, before the first is drawn (num_layers is unbounded).
    const double per_direction = static_cast<double>(g) * (static_cast<double>(p) + (c.bias ? 2.0 : 0.0)) +
                                 (c.proj_size > 0 ? static_cast<double>(p) * static_cast<double>(h) : 0.0);
    const double inputs = static_cast<double>(g) *
                          (static_cast<double>(c.input_size) +
                           static_cast<double>(c.num_layers - 1) * static_cast<double>(directions * p));
    check_total_parameter_size(
        name, fmt::format("{} with num_layers {}", sizes, c.num_layers),
        static_cast<double>(directions) * (static_cast<double>(c.num_layers) * per_direction + inputs),
        c.dtype);
    // PyTorch's reset_parameters: every parameter from U(-1/sqrt(H), 1/sqrt(H)), in order.
    const double bound = 1.0 / std::sqrt(static_cast<double>(h));
    const auto draw = [&](const std::string& pname, const Shape& shape) {
        return register_parameter(pname, uniform(shape, -bound, bound, generator, {.dtype = c.dtype}));
    };
    for (std::int64_t layer = 0; layer < c.num_layers; ++layer) {
        const std::int64_t in = layer == 0 ? c.input_size : directions * p;
        for (std::int64_t k = 0; k < directions; ++k) {
            const std::string suffix = fmt::format("_l{}{}", layer, k == 1 ? "_reverse" : "");
            RnnDirectionWeights w;
            w.w_ih = draw("weight_ih" + suffix, {g, in});
            w.w_hh = draw("weight_hh" + suffix, {g, p});
            if (c.bias) {
                w.b_ih = draw("bias_ih" + suffix, {g});
                w.b_hh = draw("bias_hh" + suffix, {g});
            }
            if (c.proj_size > 0) w.w_hr = draw("weight_hr" + suffix, {p, h});
            weights_.push_back(w);
        }
    }
}

const RnnDirectionWeights& RecurrentBase::layer_weights(std::int64_t layer, std::int64_t direction) const {
    AG_CHECK(layer >= 0 && layer < config_.num_layers && direction >= 0 && direction < num_directions(),
             IndexError, "{}: no layer {} direction {} (num_layers {}, directions {})", name_, layer,
             direction, config_.num_layers, num_directions());
    return weights_[static_cast<std::size_t>(layer * num_directions() + direction)];
}

std::string RecurrentBase::extra_repr() const {
    const Config& c = config_;
    std::string s = fmt::format("{}, {}", c.input_size, c.hidden_size);
    if (c.mode == RnnMode::RnnRelu) s += ", nonlinearity=relu";
    if (c.proj_size != 0) s += fmt::format(", proj_size={}", c.proj_size);
    if (c.num_layers != 1) s += fmt::format(", num_layers={}", c.num_layers);
    if (!c.bias) s += ", bias=false";
    if (!c.batch_first) s += ", batch_first=false";
    if (c.dropout != 0.0) s += fmt::format(", dropout={}", c.dropout);
    if (c.bidirectional) s += ", bidirectional=true";
    return s;
}

void RecurrentBase::check_state(const Tensor& state, const char* arg, std::int64_t batch, std::int64_t width,
                                bool unbatched) const {
    if (!state.defined()) return;
    check_input_dtype(state, config_.dtype, name_, arg);
    const std::int64_t rows = config_.num_layers * num_directions();
    const Shape expected = unbatched ? Shape{rows, width} : Shape{rows, batch, width};
    AG_CHECK(state.shape() == expected, ShapeError,
             "{}: {} must be {} ([num_layers * num_directions, {}{}]), got {}", name_, arg, expected,
             unbatched ? "" : "B, ", width, state.shape());
}

void RecurrentBase::check_lengths(const Tensor& lengths, std::int64_t batch, std::int64_t steps,
                                  const Shape& input) const {
    if (!lengths.defined()) return;
    AG_CHECK(lengths.dtype() == DType::Int64, DTypeError, "{}: lengths must be int64, got {} {}", name_,
             lengths.dtype(), lengths.shape());
    AG_CHECK(lengths.shape() == Shape{batch}, ShapeError,
             "{}: lengths must be [{}] (one per sequence of input {}), got {}", name_, batch, input,
             lengths.shape());
    const std::int64_t* len = lengths.data<std::int64_t>();
    for (std::int64_t b = 0; b < batch; ++b) {
        AG_CHECK(len[b] != 0, ValueError,
                 "{}: lengths[{}] is 0 (input {}): zero-length sequences are not allowed, as in PyTorch",
                 name_, b, input);
        AG_CHECK(len[b] >= 1 && len[b] <= steps, ValueError,
                 "{}: lengths[{}] = {} is outside [1, {}] (input {})", name_, b, len[b], steps, input);
    }
}

LSTMOutput RecurrentBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                              const Tensor& lengths) const {
    const Config& c = config_;
    AG_CHECK(input.defined(), ValueError, "{}: input is undefined", name_);
    check_input_dtype(input, c.dtype, name_, "input");
    const char* layout = c.batch_first ? "[B, T, input_size]" : "[T, B, input_size]";
    AG_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError,
             "{}: input must be {} or unbatched [T, input_size] with input_size {}, got {}", name_, layout,
             c.input_size, input.shape());
    AG_CHECK(input.shape().back() == c.input_size, ShapeError,
             "{}: input must be {} with input_size {}, got {}", name_, layout, c.input_size, input.shape());
    const bool unbatched = input.dim() == 2;
    AG_CHECK(!unbatched || !lengths.defined(), ValueError,
             "{}: lengths need a batched input, got unbatched input {}", name_, input.shape());
    // x [B, T, I], whatever the caller's layout
    Tensor x = unbatched ? reshape(input, {1, input.size(0), input.size(1)})
                         : (c.batch_first ? input : transpose(input, 0, 1));
    const std::int64_t batch = x.size(0), steps = x.size(1);
    AG_CHECK(batch > 0 && steps > 0, ShapeError, "{}: input {} has no sequences or no steps", name_,
             input.shape());
    const std::int64_t D = num_directions(), p = c.proj_size > 0 ? c.proj_size : c.hidden_size;
    check_state(h0, "h0", batch, p, unbatched);
    check_state(c0, "c0", batch, c.hidden_size, unbatched);
    check_lengths(lengths, batch, steps, input.shape());
    const auto batched = [&](const Tensor& s) {
        return unbatched ? reshape(s, {s.size(0), 1, s.size(1)}) : s;
    };
    const Tensor h0b = h0.defined() ? batched(h0) : Tensor(), c0b = c0.defined() ? batched(c0) : Tensor();

    std::vector<Tensor> h_n, c_n;
    for (std::int64_t layer = 0; layer < c.num_layers; ++layer) {
        const std::vector<RnnDirectionWeights> directions(weights_.begin() + layer * D,
                                                          weights_.begin() + (layer + 1) * D);
        const auto layer_state = [&](const Tensor& s) {
            return s.defined() ? (c.num_layers == 1 ? s : narrow(s, 0, layer * D, D)) : Tensor();
        };
        RnnLayerResult r = rnn_layer(c.mode, x, directions, layer_state(h0b), layer_state(c0b), lengths);
        x = r.output;
        if (layer + 1 < c.num_layers && c.dropout > 0.0)
            x = dropout(x, c.dropout, is_training(), *generator_);
        h_n.push_back(r.h_n);
        if (r.c_n.defined()) c_n.push_back(r.c_n);
    }
    LSTMOutput out;
    const auto joined = [](const std::vector<Tensor>& parts) {
        return parts.size() == 1 ? parts[0] : concat(parts, 0);
    };
    out.h_n = joined(h_n);
    if (!c_n.empty()) out.c_n = joined(c_n);
    out.output = x;
    if (unbatched) {
        out.output = reshape(x, {steps, x.size(2)});
        out.h_n = reshape(out.h_n, {out.h_n.size(0), out.h_n.size(2)});
        if (out.c_n.defined()) out.c_n = reshape(out.c_n, {out.c_n.size(0), out.c_n.size(2)});
    } else if (!c.batch_first) {
        out.output = transpose(x, 0, 1);
    }
    return out;
}

RNN::RNN(RNNOptions options, Generator& generator) : RecurrentLayer("RNN", options, generator) {}

RNNOutput RNN::forward(const Tensor& input, const Tensor& h0, const Tensor& lengths) const {
    LSTMOutput r = run(input, h0, Tensor(), lengths);
    return {r.output, r.h_n};
}

GRU::GRU(GRUOptions options, Generator& generator) : RecurrentLayer("GRU", options, generator) {}

RNNOutput GRU::forward(const Tensor& input, const Tensor& h0, const Tensor& lengths) const {
    LSTMOutput r = run(input, h0, Tensor(), lengths);
    return {r.output, r.h_n};
}

LSTM::LSTM(LSTMOptions options, Generator& generator) : RecurrentLayer("LSTM", options, generator) {}

LSTMOutput LSTM::forward(const Tensor& input, const Tensor& h0, const Tensor& c0,
                         const Tensor& lengths) const {
    return run(input, h0, c0, lengths);
}

}  // namespace attograd::nn
