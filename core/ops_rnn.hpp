// Fused recurrent layers over whole sequences (Elman RNN, GRU, LSTM): one tape entry per layer,
// backpropagation through time written by hand.
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd {

/// The recurrence a layer runs, with its gate count G (PyTorch's gate order).
enum class RnnMode {
    RnnTanh,  ///< h' = tanh(W_ih x + b_ih + W_hh h + b_hh); G = 1
    RnnRelu,  ///< h' = relu(W_ih x + b_ih + W_hh h + b_hh); G = 1
    Gru,      ///< gates r, z, n; G = 3
    Lstm,     ///< gates i, f, g, o; G = 4
};

/// Number of gates G of `mode` (the weights hold G blocks of H rows).
std::int64_t rnn_gate_count(RnnMode mode);

/// One direction's parameters, as PyTorch names them per layer: w_ih [G*H, I], w_hh [G*H, P],
/// b_ih and b_hh [G*H] (both undefined for a layer without bias), w_hr [P, H] (LSTM with a
/// projection only, else undefined). P, the width of h, is H without a projection.
struct RnnDirectionWeights {
    /// the weights named above, in that order
    /// @{
    Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
    /// @}
};

/// The results of rnn_layer. D is the number of directions (1 or 2).
struct RnnLayerResult {
    Tensor output;  ///< [B, T, D*P]: each direction's h at every step, forward first; 0 past a length
    Tensor h_n;     ///< [D, B, P]: each sequence's h after its last step (its first, reversed)
    Tensor c_n;     ///< [D, B, H]: the LSTM cell state likewise; undefined for RNN and GRU
};

/// One layer of PyTorch's `nn.RNN` / `nn.GRU` / `nn.LSTM` over a whole batch-first sequence,
/// in one or two directions (`directions` has 1 or 2 entries; the second runs from each
/// sequence's last step back to its first). Per step, with x the input and h, c the state
/// (torch.nn docs' formulas; * elementwise, sigma the logistic function):
///   RNN:  h' = tanh or relu(W_ih x + b_ih + W_hh h + b_hh)
///   GRU:  r = sigma(W_ir x + b_ir + W_hr h + b_hr), z = sigma(W_iz x + b_iz + W_hz h + b_hz),
///         n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h
///   LSTM: i, f, o = sigma(.), g = tanh(.) of W_ih x + b_ih + W_hh h + b_hh (blocks i, f, g, o),
///         c' = f * c + i * g, h' = o * tanh(c'), then h' = W_hr h' with a projection.
/// input [B, T, I]; h0 [D, B, P] and c0 [D, B, H] (LSTM only) or undefined for zeros; lengths
/// int64 [B] in [1, T] or undefined for all T (PyTorch's pack_padded_sequence with
/// enforce_sorted=False: each sequence stops at its own length, its output is 0 past it, and its
/// h_n, c_n are its state at its last step).
/// The input projections of all steps are one GEMM per direction, each step one recurrent GEMM
/// (plus one for the projection) and fused gates; backward runs the steps in reverse (BPTT) and
/// finishes with one GEMM per weight gradient. Sequences never meet in the recurrence, so blocks
/// of 16 sequences run through all their steps on separate threads. One tape entry for the whole
/// layer (the tape records one output per entry, so output, h_n and c_n are computed into one
/// buffer and copied out of it by `narrow`); gradients reach input, h0, c0 and every weight. Throws
/// ShapeError (ranks, widths, h0 / c0 / lengths / weights of the wrong shape, empty input, none or more than
/// two directions), DTypeError (dtypes differ, not float, lengths not int64), ValueError (a length outside
/// [1, T], c0 or w_hr where the mode has none, only one of b_ih and b_hh).
RnnLayerResult rnn_layer(RnnMode mode, const Tensor& input,
                         const std::vector<RnnDirectionWeights>& directions, const Tensor& h0 = {},
                         const Tensor& c0 = {}, const Tensor& lengths = {});

/// One GRU cell step from its pre-activations, fused (torch.nn.GRUCell's formula, PyTorch's gate
/// order r, z, n): with gi = W_ih x + b_ih and gh = W_hh h + b_hh [B, 3H], h [B, H]:
///   r = sigma(gi_r + gh_r), z = sigma(gi_z + gh_z), n = tanh(gi_n + r * gh_n),
///   h' = (1 - z) * n + z * h  -> [B, H].
/// One tape entry; backward gives gi, gh and h their gradients from the saved gates. Throws
/// ShapeError (not [B, 3H], [B, 3H], [B, H]) and DTypeError (dtypes differ or not float).
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h);

}  // namespace attograd
