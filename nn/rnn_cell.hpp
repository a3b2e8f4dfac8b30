// Single-step recurrent cells: RNNCell, GRUCell and LSTMCell (torch.nn's cells).
#pragma once

#include "core/generator.hpp"
#include "nn/module.hpp"

#include <string>
#include <utility>

namespace attograd::nn {

/// Options of the recurrent cells, with PyTorch's defaults.
struct RNNCellOptions {
    std::int64_t input_size = 0;   ///< I, width of the input x (>= 1)
    std::int64_t hidden_size = 0;  ///< H, width of the state h (>= 1)
    bool bias = true;              ///< learn bias_ih and bias_hh
    /// RNNCell only: "tanh" or "relu" (PyTorch's `nonlinearity`); GRUCell and LSTMCell take "tanh".
    std::string nonlinearity = "tanh";
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// What the three cells share: the parameters `weight_ih` [G*H, I], `weight_hh` [G*H, H],
/// `bias_ih` [G*H] and `bias_hh` [G*H] (no biases when `bias = false`) with G gates, all drawn
/// from U(-1/sqrt(H), 1/sqrt(H)) as PyTorch initialises them, and the checks of forward's inputs.
class RecurrentCell : public Module {
public:
    /// PyTorch's repr: "4, 8" (then ", bias=false", ", nonlinearity=relu" when not the default).
    std::string extra_repr() const override;
    /// The options (dtype follows Module::to).
    const RNNCellOptions& options() const { return options_; }
    /// I, the input width.
    std::int64_t input_size() const { return options_.input_size; }
    /// H, the state width.
    std::int64_t hidden_size() const { return options_.hidden_size; }
    /// The input-to-hidden weights [G*H, I], gates stacked in the cell's order.
    const Tensor& weight_ih() const { return weight_ih_; }
    /// The hidden-to-hidden weights [G*H, H].
    const Tensor& weight_hh() const { return weight_hh_; }
    /// The biases [G*H]; undefined when the cell has no biases.
    const Tensor& bias_ih() const { return bias_ih_; }
    const Tensor& bias_hh() const { return bias_hh_; }  ///< bias_hh [G*H]

protected:
    /// Throws ValueError (sizes < 1, an unknown nonlinearity, one other than tanh when
    /// `nonlinearities` is "tanh"), DTypeError (dtype not float), ResourceError (too large).
    /// `name` is the cell's type_name() (not yet callable while constructing).
    RecurrentCell(const RNNCellOptions& options, std::string_view name, std::int64_t gates,
                  std::string_view nonlinearities, Generator& generator);
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

    /// The checked input [B, I] (an unbatched [I] becomes [1, I]) and a state [B, H] (`hx`
    /// reshaped likewise; zeros when undefined). Throws ShapeError / DTypeError naming the cell,
    /// the argument and the shapes.
    std::pair<Tensor, Tensor> batched(const Tensor& input, const Tensor& hx, std::string_view hx_name) const;
    /// The checked state `s` [B, H] for a batch of `batch` (zeros when undefined).
    Tensor state(const Tensor& s, std::int64_t batch, bool unbatched, std::string_view name) const;
    /// W_ih x + b_ih [B, G*H] and W_hh h + b_hh [B, G*H].
    Tensor input_gates(const Tensor& x) const;
    Tensor hidden_gates(const Tensor& h) const;  ///< W_hh h + b_hh [B, G*H]

private:
    RNNCellOptions options_;
    Tensor weight_ih_, weight_hh_, bias_ih_, bias_hh_;
};

/// PyTorch's `nn.RNNCell` (Elman network): h' = f(W_ih x + b_ih + W_hh h + b_hh), f = tanh or
/// relu (options.nonlinearity). G = 1.
class RNNCell final : public RecurrentCell {
public:
    /// Throws as RecurrentCell's constructor.
    explicit RNNCell(const RNNCellOptions& options, Generator& generator = default_generator());
    /// input [B, I], hx [B, H] (undefined = zeros) -> h' [B, H]; unbatched input [I], hx [H] -> [H].
    /// Throws ShapeError naming the argument and the shapes, DTypeError.
    Tensor forward(const Tensor& input, const Tensor& hx = {}) const;
    std::string type_name() const override { return "RNNCell"; }
};

/// PyTorch's `nn.GRUCell` (Cho et al. 2014), gates in the order r, z, n (G = 3):
///   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
///   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
///   n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
///   h' = (1 - z) * n + z * h
class GRUCell final : public RecurrentCell {
public:
    /// Throws as RecurrentCell's constructor (nonlinearity must be "tanh").
    explicit GRUCell(const RNNCellOptions& options, Generator& generator = default_generator());
    /// input [B, I], hx [B, H] (undefined = zeros) -> h' [B, H]; unbatched input [I], hx [H] -> [H].
    /// Throws ShapeError naming the argument and the shapes, DTypeError.
    Tensor forward(const Tensor& input, const Tensor& hx = {}) const;
    std::string type_name() const override { return "GRUCell"; }
};

/// PyTorch's `nn.LSTMCell` (Hochreiter & Schmidhuber 1997; forget gate of Gers et al. 2000),
/// gates in the order i, f, g, o (G = 4), with W x + b = W_i* x + b_i* + W_h* h + b_h*:
///   i = sigmoid(...), f = sigmoid(...), g = tanh(...), o = sigmoid(...)
///   c' = f * c + i * g,  h' = o * tanh(c')
class LSTMCell final : public RecurrentCell {
public:
    /// Throws as RecurrentCell's constructor (nonlinearity must be "tanh").
    explicit LSTMCell(const RNNCellOptions& options, Generator& generator = default_generator());
    /// input [B, I], hx = (h [B, H], c [B, H]) (undefined = zeros) -> (h' [B, H], c' [B, H]);
    /// unbatched input [I] with states [H] -> states [H]. Throws ShapeError naming the argument
    /// and the shapes, DTypeError.
    std::pair<Tensor, Tensor> forward(const Tensor& input, const std::pair<Tensor, Tensor>& hx = {}) const;
    std::string type_name() const override { return "LSTMCell"; }
};

}  // namespace attograd::nn
