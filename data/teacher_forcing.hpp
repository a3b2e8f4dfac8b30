// Teacher forcing for sequence-to-sequence training: decoder input (<bos> y) and labels (y <eos>)
// built from padded target ids.
#pragma once

#include "data/batcher.hpp"
#include "data/vocabulary.hpp"

#include <cstdint>
#include <vector>

namespace attograd::data {

/// What a decoder is trained on for targets y of lengths n_b, padded to T = max n_b. Row b of
/// both tensors has n_b + 1 real positions:
///   decoder_input.ids[b] = bos, y_1 ... y_n, pad ...   (what the decoder reads)
///   labels[b]            = y_1 ... y_n, eos, pad ...   (what it must predict at each position)
/// so the decoder learns next-token prediction under a causal mask (Vaswani et al. 2017,
/// "Attention Is All You Need", sec. 3.1: the output embeddings are offset by one position).
struct TeacherForcing {
    PaddedSequences decoder_input;  ///< int64 [B, T+1] ids; its key_padding_mask [B, T+1] (true at pad)
                                    ///< is the decoder's tgt_key_padding_mask; lengths [B] = n_b + 1
    Tensor labels;  ///< int64 [B, T+1]: pad where nothing is predicted (the loss's ignore_index)
};

/// Teacher-forcing tensors of `targets` (target id sequences without `<bos>` or `<eos>`, as
/// Batch::target and Vocabulary::encode give them). Throws ValueError when there is no
/// sequence, an id is negative (naming the sequence index and position), an id is bos_id or
/// eos_id (the target would already hold one), or bos_id, eos_id or pad_id is negative, or
/// pad_id equals bos_id or eos_id.
TeacherForcing teacher_forcing(const std::vector<std::vector<std::int64_t>>& targets,
                               std::int64_t bos_id = Vocabulary::bos_id,
                               std::int64_t eos_id = Vocabulary::eos_id,
                               std::int64_t pad_id = Vocabulary::pad_id);

/// The same from padded targets, usually a Batch's `target` ([B, T] ids and their lengths;
/// the padding value does not matter). Throws ValueError as above, and when `targets` is
/// undefined (a Batcher built without targets) or its ids and lengths disagree in shape.
TeacherForcing teacher_forcing(const PaddedSequences& targets, std::int64_t bos_id = Vocabulary::bos_id,
                               std::int64_t eos_id = Vocabulary::eos_id,
                               std::int64_t pad_id = Vocabulary::pad_id);

}  // namespace attograd::data
