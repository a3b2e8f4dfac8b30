// Absolute position encodings added to a sequence: sinusoidal (fixed) and learned.
#pragma once

#include "core/generator.hpp"
#include "nn/module.hpp"

namespace attograd::nn {

/// Options of SinusoidalPositionalEncoding and LearnedPositionalEmbedding.
struct PositionalEncodingOptions {
    std::int64_t embedding_dim = 0;  ///< E, width of the sequence (> 0)
    std::int64_t max_len = 5000;     ///< positions available, [0, max_len) (> 0; PyTorch tutorial's 5000)
    DType dtype = DType::Float32;    ///< dtype of the table (float32 or float64)
};

/// The fixed sinusoidal encoding of Vaswani et al. 2017, §3.5:
///   PE[pos, 2i] = sin(pos / 10000^(2i / E)),  PE[pos, 2i + 1] = cos(pos / 10000^(2i / E))
/// (an odd E ends with a sine column), added to the input: x [..., T, E] -> x + PE[offset :
/// offset + T]. The table [max_len, E] is computed once in double and registered as the buffer
/// `pe` (in the state_dict, not trained), as in PyTorch's Transformer tutorial; it has no
/// gradient, the input's passes through. Prints as
/// `SinusoidalPositionalEncoding(embedding_dim=8, max_len=5000)`.
class SinusoidalPositionalEncoding : public Module {
public:
    /// Throws ValueError (embedding_dim or max_len < 1), DTypeError (not float), ResourceError
    /// naming max_len and embedding_dim when the float64 table would be too large.
    explicit SinusoidalPositionalEncoding(PositionalEncodingOptions options);

    /// x [..., T, E] -> x + PE[offset : offset + T] (positions offset.. for a sequence that
    /// continues an earlier one). Throws ShapeError (rank < 2, width not E, offset + T above
    /// max_len), ValueError (offset < 0), DTypeError (x not of the table's dtype).
    Tensor forward(const Tensor& x, std::int64_t offset = 0) const;
    /// x [B, T, E] -> x + PE[positions]: each sequence at its own positions, int64 [B, T] (or
    /// [T] for all), e.g. counted from each sequence's end (positions_from_end). Throws
    /// ShapeError (positions neither [B, T] nor [T] of x's B and T), IndexError (a position
    /// outside [0, max_len)), DTypeError (positions not int64, x not of the table's dtype).
    Tensor forward_at(const Tensor& x, const Tensor& positions) const;

    std::string type_name() const override { return "SinusoidalPositionalEncoding"; }
    std::string extra_repr() const override;

    const PositionalEncodingOptions& options() const { return options_; }  ///< the options it was built with
    /// The table [max_len, E] (the buffer `pe`).
    Tensor pe() const { return pe_; }

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    PositionalEncodingOptions options_;
    Tensor pe_;
};

/// Learned absolute positions (as in BERT and GPT-2's position table): an embedding of the
/// positions, `weight` [max_len, E] initialised N(0, 1) as nn::Embedding, added to the input:
/// x [..., T, E] -> x + weight[offset : offset + T]; the rows used receive gradients. Prints as
/// `LearnedPositionalEmbedding(embedding_dim=8, max_len=16)`.
class LearnedPositionalEmbedding : public Module {
public:
    /// Draws the table from `generator`. Throws ValueError (embedding_dim or max_len < 1),
    /// DTypeError (not float), ResourceError naming max_len and embedding_dim when the table would
    /// be too large.
    explicit LearnedPositionalEmbedding(PositionalEncodingOptions options,
                                        Generator& generator = default_generator());

    /// x [..., T, E] -> x + weight[offset : offset + T]. Throws as
    /// SinusoidalPositionalEncoding::forward.
    Tensor forward(const Tensor& x, std::int64_t offset = 0) const;
    /// x [B, T, E] -> x + weight[positions] with int64 positions [B, T] (or [T]); the rows used
    /// receive gradients (summed over repeats). Throws as SinusoidalPositionalEncoding::forward_at.
    Tensor forward_at(const Tensor& x, const Tensor& positions) const;

    std::string type_name() const override { return "LearnedPositionalEmbedding"; }
    std::string extra_repr() const override;

    const PositionalEncodingOptions& options() const { return options_; }  ///< the options it was built with
    /// The table [max_len, E] (the parameter `weight`).
    Tensor weight() const { return weight_; }

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    PositionalEncodingOptions options_;
    Tensor weight_;
};

/// Positions counted from each sequence's end, for forward_at: bool key_padding_mask [B, T]
/// (true at padding) -> int64 [B, T] holding, at each real position, the number of real
/// positions after it (n - 1 - t for a sequence of n tokens followed by padding), and 0 at
/// padding. With them a query can find "the k-th token from the end" (the reverse of a source)
/// by one dot product, as absolute positions find "the k-th from the start". Throws DTypeError
/// (mask not bool), ShapeError (mask not 2-D).
Tensor positions_from_end(const Tensor& key_padding_mask);

}  // namespace attograd::nn
