// Recurrent layers over whole sequences: RNN, GRU and LSTM (PyTorch's torch.nn layers).
#pragma once

#include "core/generator.hpp"
#include "core/ops_rnn.hpp"
#include "nn/module.hpp"

#include <type_traits>
#include <vector>

namespace attograd::nn {

/// The activation of an Elman RNN (PyTorch's `nonlinearity='tanh' | 'relu'`).
enum class RNNNonlinearity { Tanh, Relu };

// The three option structs repeat their common fields instead of sharing a base struct: a C++20
// designated initialiser cannot name a base's fields (`{.input_size = 4}` would not compile).

/// Options of RNN, with PyTorch's defaults except `batch_first`.
struct RNNOptions {
    std::int64_t input_size = 0;   ///< width I of the input's last dimension (>= 1)
    std::int64_t hidden_size = 0;  ///< width H of the state (>= 1)
    std::int64_t num_layers = 1;   ///< stacked layers, 1 to 1024; layer k > 0 reads layer k-1's output
    RNNNonlinearity nonlinearity = RNNNonlinearity::Tanh;  ///< tanh or relu, as PyTorch's `nonlinearity`
    bool bias = true;                                      ///< learn b_ih and b_hh
    /// Input and output are [B, T, .] (true, attograd's layout everywhere) or [T, B, .] (false).
    /// PyTorch's default is false; attograd's is true, as for every other layer here.
    bool batch_first = true;
    double dropout = 0.0;          ///< dropout on each layer's output but the last, in training mode; [0, 1)
    bool bidirectional = false;    ///< add a second direction reading each sequence backwards
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// Options of GRU: RNNOptions' fields but the nonlinearity (batch_first defaults to true).
struct GRUOptions {
    std::int64_t input_size = 0;   ///< width I of the input's last dimension (>= 1)
    std::int64_t hidden_size = 0;  ///< width H of the state (>= 1)
    std::int64_t num_layers = 1;   ///< stacked layers, 1 to 1024; layer k > 0 reads layer k-1's output
    bool bias = true;              ///< learn b_ih and b_hh
    /// [B, T, .] (true, attograd's default) or [T, B, .] (false, PyTorch's default).
    bool batch_first = true;
    double dropout = 0.0;          ///< dropout on each layer's output but the last, in training mode; [0, 1)
    bool bidirectional = false;    ///< add a second direction reading each sequence backwards
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// Options of LSTM: GRUOptions' fields plus `proj_size` (batch_first defaults to true).
struct LSTMOptions {
    std::int64_t input_size = 0;   ///< width I of the input's last dimension (>= 1)
    std::int64_t hidden_size = 0;  ///< width H of the state (>= 1)
    std::int64_t num_layers = 1;   ///< stacked layers, 1 to 1024; layer k > 0 reads layer k-1's output
    bool bias = true;              ///< learn b_ih and b_hh
    /// [B, T, .] (true, attograd's default) or [T, B, .] (false, PyTorch's default).
    bool batch_first = true;
    double dropout = 0.0;        ///< dropout on each layer's output but the last, in training mode; [0, 1)
    bool bidirectional = false;  ///< add a second direction reading each sequence backwards
    /// When > 0 (and < hidden_size), h is projected to this width by `weight_hr_l{k}` (Sak et
    /// al. 2014, LSTMP): h_n and the output have proj_size columns per direction.
    std::int64_t proj_size = 0;
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// Results of RNN and GRU. D = 2 when bidirectional, else 1; P = hidden_size.
struct RNNOutput {
    Tensor output;  ///< [B, T, D*P] (batch_first; [T, B, D*P] otherwise, [T, D*P] unbatched): the last
                    ///< layer's h at every step, directions side by side; 0 past a sequence's length
    Tensor h_n;     ///< [num_layers*D, B, P] ([num_layers*D, P] unbatched): the state after each
                    ///< sequence's last step, per layer and direction (layer-major, as PyTorch)
};

/// Results of LSTM; P = proj_size when > 0, else hidden_size.
struct LSTMOutput {
    Tensor output;  ///< as RNNOutput::output
    Tensor h_n;     ///< as RNNOutput::h_n
    Tensor c_n;     ///< [num_layers*D, B, hidden_size] ([num_layers*D, hidden_size] unbatched)
};

/// The key padding mask [B, T] (bool, true at padding, as nn::MultiHeadAttention takes it) as the
/// lengths [B] (int64) the recurrent layers take: the count of leading non-padded steps. Throws
/// DTypeError (not bool), ShapeError (not 2-D), ValueError naming the row when padding is not a
/// suffix of it (a step after padding) or a row is all padding (a zero-length sequence).
Tensor lengths_from_padding_mask(const Tensor& key_padding_mask);

/// What RNN, GRU and LSTM share: parameters, checks, the stack of fused layers and printing.
/// Parameters per layer k (and direction suffix `_reverse`), named and shaped as PyTorch's, with
/// G gates (RNN 1, GRU 3 in the order r, z, n, LSTM 4 in the order i, f, g, o) and P the width
/// of h: `weight_ih_l{k}` [G*H, I or D*P], `weight_hh_l{k}` [G*H, P], `bias_ih_l{k}` and
/// `bias_hh_l{k}` [G*H], LSTM with proj_size `weight_hr_l{k}` [P, H]; all drawn in that order
/// from U(-1/sqrt(H), 1/sqrt(H)) as PyTorch's reset_parameters does.
class RecurrentBase : public Module {
public:
    std::string extra_repr() const override;
    /// 2 when bidirectional, else 1.
    std::int64_t num_directions() const { return config_.bidirectional ? 2 : 1; }
    /// The parameters of layer `layer`, direction `direction` (handles sharing their storage).
    const RnnDirectionWeights& layer_weights(std::int64_t layer, std::int64_t direction) const;

protected:
    /// The fields every option struct has.
    struct Config {
        RnnMode mode;  ///< RNN (tanh or relu), GRU or LSTM
        /// the widths and layer count of the options (proj_size 0 unless LSTM)
        /// @{
        std::int64_t input_size, hidden_size, num_layers, proj_size;
        /// @}
        /// the options' flags of the same names
        /// @{
        bool bias, batch_first, bidirectional;
        /// @}
        double dropout;  ///< as the options' dropout
        DType dtype;     ///< as the options' dtype
    };
    /// Checks the options (ValueError / DTypeError / ResourceError naming `name`) and draws the
    /// parameters from `generator`, which also draws the dropout masks and must outlive the module.
    RecurrentBase(const char* name, Config config, Generator& generator);
    /// The stacked layers' forward (see RNN::forward); c0 and the returned c_n are LSTM's only.
    LSTMOutput run(const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& lengths) const;
    void dtype_changed(DType dtype) override { config_.dtype = dtype; }

private:
    void check_state(const Tensor& state, const char* arg, std::int64_t batch, std::int64_t width,
                     bool unbatched) const;
    void check_lengths(const Tensor& lengths, std::int64_t batch, std::int64_t steps,
                       const Shape& input) const;

    const char* name_;
    Config config_;
    Generator* generator_;
    std::vector<RnnDirectionWeights> weights_;  // layer-major, then direction
};

/// RecurrentBase with the options struct it was built from (`options()` follows Module::to).
template <class Options>
class RecurrentLayer : public RecurrentBase {
public:
    const Options& options() const { return options_; }  ///< the options it was built with

protected:
    /// Checks `options` and draws the parameters (see RecurrentBase's constructor).
    RecurrentLayer(const char* name, const Options& options, Generator& generator)
        : RecurrentBase(name, config_of(options), generator), options_(options) {}
    /// Keeps options().dtype equal to the parameters' dtype after Module::to.
    void dtype_changed(DType dtype) override {
        RecurrentBase::dtype_changed(dtype);
        options_.dtype = dtype;
    }

private:
    static Config config_of(const Options& o) {
        Config c{RnnMode::Gru, o.input_size,  o.hidden_size,   o.num_layers, 0,
                 o.bias,       o.batch_first, o.bidirectional, o.dropout,    o.dtype};
        if constexpr (std::is_same_v<Options, RNNOptions>)
            c.mode = o.nonlinearity == RNNNonlinearity::Relu ? RnnMode::RnnRelu : RnnMode::RnnTanh;
        if constexpr (std::is_same_v<Options, LSTMOptions>) {
            c.mode = RnnMode::Lstm;
            c.proj_size = o.proj_size;
        }
        return c;
    }

    Options options_;
};

/// PyTorch's `nn.RNN` (Elman network): per layer and step, h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
/// (or relu). Parameters as RecurrentBase (G = 1). Prints as
/// `RNN(4, 8, num_layers=2, bidirectional=true)`, options at their defaults left out.
class RNN : public RecurrentLayer<RNNOptions> {
public:
    /// Throws ValueError (input_size, hidden_size or num_layers < 1, num_layers > 1024, dropout
    /// outside [0, 1)), DTypeError (dtype not float), ResourceError (parameters too large for the machine).
    explicit RNN(RNNOptions options, Generator& generator = default_generator());

    /// input [B, T, input_size] (batch_first; [T, B, input_size] otherwise; or unbatched
    /// [T, input_size]), h0 [num_layers*D, B, hidden_size] (unbatched [num_layers*D, hidden_size];
    /// undefined for zeros), lengths int64 [B] in [1, T] or undefined for all T (PyTorch's
    /// pack_padded_sequence with enforce_sorted=False: each sequence runs its own length, the
    /// reverse direction starts at its own last step, output is 0 past it, h_n is its state at its
    /// last step; lengths_from_padding_mask converts a padding mask). One fused tape entry per
    /// layer (attograd::rnn_layer). Throws ShapeError (input rank or width, h0's shape, lengths'
    /// count, an empty input), DTypeError (input or h0 not of the parameters' dtype, lengths not
    /// int64), ValueError (a length outside [1, T], lengths with an unbatched input); each message
    /// names the module, the argument and the shapes.
    RNNOutput forward(const Tensor& input, const Tensor& h0 = {}, const Tensor& lengths = {}) const;

    std::string type_name() const override { return "RNN"; }
};

/// PyTorch's `nn.GRU` (Cho et al. 2014): per layer and step, r = sigma(W_ir x + b_ir + W_hr h +
/// b_hr), z = sigma(W_iz x + b_iz + W_hz h + b_hz), n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
/// h' = (1 - z) * n + z * h. Parameters as RecurrentBase (G = 3, blocks r, z, n). Prints as
/// `GRU(64, 128, num_layers=2, bidirectional=true)`.
class GRU : public RecurrentLayer<GRUOptions> {
public:
    /// Throws as RNN's constructor.
    explicit GRU(GRUOptions options, Generator& generator = default_generator());
    /// Shapes, lengths and throws as RNN::forward.
    RNNOutput forward(const Tensor& input, const Tensor& h0 = {}, const Tensor& lengths = {}) const;

    std::string type_name() const override { return "GRU"; }
};

/// PyTorch's `nn.LSTM` (Hochreiter & Schmidhuber 1997, with a forget gate): per layer and step,
/// i, f, o = sigma(.), g = tanh(.) of W_ih x + b_ih + W_hh h + b_hh (blocks i, f, g, o),
/// c' = f * c + i * g, h' = o * tanh(c'), then h' = W_hr h' when proj_size > 0. Parameters as
/// RecurrentBase (G = 4). Prints as `LSTM(4, 8, proj_size=2)`.
class LSTM : public RecurrentLayer<LSTMOptions> {
public:
    /// Throws as RNN's constructor, and ValueError when proj_size is outside [0, hidden_size).
    explicit LSTM(LSTMOptions options, Generator& generator = default_generator());
    /// As RNN::forward, with c0 [num_layers*D, B, hidden_size] (undefined for zeros) and h0 of
    /// width P (proj_size when > 0); throws likewise for c0.
    LSTMOutput forward(const Tensor& input, const Tensor& h0 = {}, const Tensor& c0 = {},
                       const Tensor& lengths = {}) const;

    std::string type_name() const override { return "LSTM"; }
};

}  // namespace attograd::nn
