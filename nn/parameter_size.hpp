// check_parameter_size: a module refuses an option that would make a parameter or buffer too large,
// naming the option before any allocation does.
#pragma once

#include "core/dtype.hpp"
#include "core/shape.hpp"

#include <cstdint>
#include <string_view>

namespace attograd::nn {

/// Checks that the parameter or buffer `name` of `shape` and `dtype`, which module `op` would
/// allocate because of `option` (its name and value, e.g. "embed_dim 1099511627776"), can exist.
/// Throws ResourceError (as core does for a tensor that cannot be allocated) whose message starts
/// with `op` and names the option, the tensor and its shape: "MultiHeadAttention: embed_dim
/// 1099511627776 makes in_proj_weight [3298534883328, 1099511627776], which has too many elements"
/// when its byte count overflows int64, or "..., which needs 4 PiB, more than this machine's 16 GiB
/// of memory" when it exceeds the physical memory (sysconf), which it could never fit in.
void check_parameter_size(std::string_view op, std::string_view option, std::string_view name,
                          const Shape& shape, DType dtype);

/// Checks that `count` parameters of size `rows` x (one of) the gate blocks fit: the product
/// `gates * hidden` (the rows of a recurrent layer's stacked gate weights) must not overflow
/// int64. Throws ResourceError naming `op` and the option: "GRU: hidden_size 4611686018427387904
/// makes weight_ih [3 * 4611686018427387904, ...], which has too many elements".
std::int64_t gate_rows(std::string_view op, std::int64_t gates, std::int64_t hidden, std::string_view name);

/// Checks that `elements` parameter elements of `dtype` in all, which module `op` would allocate
/// because of `option`, fit in this machine's memory (the elements counted in double, so that a
/// count past int64 is refused rather than wrapped). Throws ResourceError: "GRU: num_layers
/// 1099511627776 makes 1.1e+14 parameter elements (400 TiB), more than this machine's 24 GiB of
/// memory".
void check_total_parameter_size(std::string_view op, std::string_view option, double elements, DType dtype);

/// The sizes a Transformer layer of width `d_model` and feed-forward width `dim_feedforward`
/// allocates, checked for module `op` (TransformerEncoderLayer, Transformer, ...) as
/// check_parameter_size does, naming d_model (self_attn.in_proj_weight [3 * d_model, d_model]) or
/// dim_feedforward (linear1.weight [dim_feedforward, d_model]). Throws ResourceError.
void check_transformer_sizes(std::string_view op, std::int64_t d_model, std::int64_t dim_feedforward,
                             DType dtype);

}  // namespace attograd::nn
