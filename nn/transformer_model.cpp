// nn::Transformer: an encoder and a decoder stack with their final norms, PyTorch's xavier reset.
#include "nn/transformer_model.hpp"

#include "core/error.hpp"
#include "nn/attention_mask.hpp"
#include "nn/parameter_size.hpp"
#include "nn/transformer_inputs.hpp"

#include <cmath>

namespace attograd::nn {
namespace {

// The options every layer of the model gets.
TransformerLayerOptions layer_options(const TransformerOptions& o) {
    return {.d_model = o.d_model,
            .nhead = o.nhead,
            .dim_feedforward = o.dim_feedforward,
            .dropout = o.dropout,
            .activation = o.activation,
            .layer_norm_eps = o.layer_norm_eps,
            .norm_first = o.norm_first,
            .bias = o.bias,
            .scoring = o.scoring,
            .dtype = o.dtype};
}

// Checked here, before the layers, so the message names nn.Transformer's own option.
void check_options(const TransformerOptions& o) {
    AG_CHECK(o.d_model >= 1, ValueError, "Transformer: d_model must be >= 1, got {}", o.d_model);
    AG_CHECK(o.nhead >= 1 && o.d_model % o.nhead == 0, ValueError,
             "Transformer: nhead {} must be >= 1 and divide d_model {}", o.nhead, o.d_model);
    AG_CHECK(o.num_encoder_layers >= 0, ValueError, "Transformer: num_encoder_layers must be >= 0, got {}",
             o.num_encoder_layers);
    AG_CHECK(o.num_decoder_layers >= 0, ValueError, "Transformer: num_decoder_layers must be >= 0, got {}",
             o.num_decoder_layers);
    AG_CHECK(o.dim_feedforward >= 0, ValueError, "Transformer: dim_feedforward must be >= 0, got {}",
             o.dim_feedforward);
    AG_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, ValueError,
             "Transformer: dropout must be in [0, 1], got {}", o.dropout);
    AG_CHECK(std::isfinite(o.layer_norm_eps) && o.layer_norm_eps >= 0.0, ValueError,
             "Transformer: layer_norm_eps must be finite and >= 0, got {}", o.layer_norm_eps);
    check_transformer_sizes("Transformer", o.d_model, o.dim_feedforward, o.dtype);
}

// PyTorch's Transformer._reset_parameters: xavier_uniform_ on every parameter of dim > 1, with
// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field.
void reset_parameters(Module& model, Generator& generator) {
    StateDict fresh;
    for (const auto& [name, p] : model.named_parameters()) {
        if (p.dim() < 2) continue;
        const Shape& s = p.shape();
        std::int64_t receptive = 1;
        for (std::size_t i = 2; i < s.size(); ++i) receptive *= s[i];
        const double bound = std::sqrt(6.0 / static_cast<double>((s[0] + s[1]) * receptive));
        fresh[name] = uniform(s, -bound, bound, generator, {.dtype = p.dtype()});
    }
    model.load_state_dict(fresh, /*strict=*/false);
}

}  // namespace

Transformer::Transformer(TransformerOptions options, Generator& generator) : options_(options) {
    check_options(options_);
    const TransformerLayerOptions layer = layer_options(options_);
    encoder_ = register_module(
        "encoder",
        std::make_shared<TransformerEncoder>(
            TransformerStackOptions{.layer = layer, .num_layers = options_.num_encoder_layers, .norm = true},
            generator));
    decoder_ = register_module(
        "decoder",
        std::make_shared<TransformerDecoder>(
            TransformerStackOptions{.layer = layer, .num_layers = options_.num_decoder_layers, .norm = true},
            generator));
    reset_parameters(*this, generator);
}

Transformer::~Transformer() = default;

std::string Transformer::extra_repr() const {
    return fmt::format("d_model={}, nhead={}, num_encoder_layers={}, num_decoder_layers={}", options_.d_model,
                       options_.nhead, options_.num_encoder_layers, options_.num_decoder_layers);
}

Tensor Transformer::generate_square_subsequent_mask(std::int64_t size, DType dtype) {
    return nn::generate_square_subsequent_mask(size, dtype);
}

Tensor Transformer::encode(const Tensor& src, const TransformerEncoderArgs& args) const {
    check_encoder_inputs(src, args, layer_options(options_), "Transformer::encode");
    return encoder_->forward(src, args);
}

Tensor Transformer::decode(const Tensor& tgt, const Tensor& memory,
                           const TransformerDecoderArgs& args) const {
    check_decoder_inputs(tgt, memory, args, layer_options(options_), "Transformer::decode");
    return decoder_->forward(tgt, memory, args);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const TransformerArgs& args) const {
    // PyTorch's two checks, before either half runs.
    AG_CHECK(src.dim() == 3 && tgt.dim() == 3, ShapeError,
             "Transformer::forward: src and tgt must be [B, S, E] and [B, T, E], got {} and {}", src.shape(),
             tgt.shape());
    AG_CHECK(src.shape()[0] == tgt.shape()[0], ShapeError,
             "Transformer::forward: the batch sizes of src {} and tgt {} must be equal", src.shape(),
             tgt.shape());
    AG_CHECK(src.shape()[2] == options_.d_model && tgt.shape()[2] == options_.d_model, ShapeError,
             "Transformer::forward: src {} and tgt {} must end in d_model {}", src.shape(), tgt.shape(),
             options_.d_model);
    const TransformerEncoderArgs encoder_args{.src_mask = args.src_mask,
                                              .src_key_padding_mask = args.src_key_padding_mask,
                                              .is_causal = args.src_is_causal};
    const TransformerDecoderArgs decoder_args{.tgt_mask = args.tgt_mask,
                                              .memory_mask = args.memory_mask,
                                              .tgt_key_padding_mask = args.tgt_key_padding_mask,
                                              .memory_key_padding_mask = args.memory_key_padding_mask,
                                              .tgt_is_causal = args.tgt_is_causal,
                                              .memory_is_causal = args.memory_is_causal};
    // every argument checked before either half runs, the memory having src's shape
    const TransformerLayerOptions layer = layer_options(options_);
    check_encoder_inputs(src, encoder_args, layer, "Transformer");
    check_decoder_inputs(tgt, src, decoder_args, layer, "Transformer");
    return decode(tgt, encode(src, encoder_args), decoder_args);
}

}  // namespace attograd::nn
