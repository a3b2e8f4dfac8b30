// Batching: variable-length id sequences padded to [B, T] with a key_padding_mask, and a
// batcher that shuffles per epoch, drops the last short batch on request and buckets by length.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"
#include "data/task.hpp"
#include "data/vocabulary.hpp"

#include <cstdint>
#include <vector>

namespace attograd::data {

/// Options of pad_sequences.
struct PadOptions {
    std::int64_t padding_value = Vocabulary::pad_id;  ///< the id written at padded positions
    std::int64_t length = -1;  ///< T: pad every sequence to this length; -1: to the longest one
};

/// Sequences padded into one batch, batch first.
struct PaddedSequences {
    Tensor ids;               ///< int64 [B, T]: sequence b in row b, padding_value after it
    Tensor key_padding_mask;  ///< bool [B, T]: true at padding (PyTorch's key_padding_mask convention)
    Tensor lengths;           ///< int64 [B]: the real length of each sequence
};

/// PyTorch's `nn.utils.rnn.pad_sequence(sequences, batch_first=True, padding_value)` over id
/// sequences, plus the padding mask and the lengths: B = sequences.size(), T = options.length
/// or the longest length (T = 0 when every sequence is empty; a row of an empty sequence is all
/// padding). Throws ValueError when there is no sequence, options.length < -1,
/// options.padding_value < 0, an id is negative (naming the sequence index and position), or a
/// sequence is longer than options.length (naming its index and length).
PaddedSequences pad_sequences(const std::vector<std::vector<std::int64_t>>& sequences,
                              const PadOptions& options = {});

/// Options of a Batcher, with PyTorch DataLoader's defaults.
struct BatcherOptions {
    std::int64_t batch_size = 1;  ///< examples per batch
    bool shuffle = false;         ///< a new random order every epoch (drawn from the epoch's generator)
    bool drop_last = false;       ///< drop the last batch when it has fewer than batch_size examples
    /// Bucketing by length: 0 = off; k >= 1 = cut the epoch's order into chunks of k batches,
    /// sort each chunk by (source length, target length), cut it into batches and, when
    /// shuffling, shuffle the order of the batches. Batches then hold similar lengths (less
    /// padding) while every example is still used exactly once per epoch.
    std::int64_t bucket_batches = 0;
    /// padding_value of every padded tensor (>= 0); with the Vocabulary constructor it must be
    /// Vocabulary::pad_id, since any other id is a real token's.
    std::int64_t pad_id = Vocabulary::pad_id;
};

/// One batch: the dataset indices of its rows and their padded sources and targets. Both hold
/// exactly the ids given to the Batcher (or Vocabulary::encode of the examples' tokens): no
/// <bos> and no <eos> is added. For a decoder, teacher_forcing(batch.target) builds the input
/// (<bos> y) and the labels (y <eos>).
struct Batch {
    std::vector<std::int64_t> indices;  ///< dataset index of row b
    PaddedSequences source;             ///< [B, S] each, padded to the batch's longest source
    PaddedSequences target;             ///< [B, T] each; undefined tensors when the batcher has no targets
};

/// Batches of a dataset of id sequences (sources, and optionally targets), like PyTorch's
/// DataLoader with a pad_sequence collate function. The batcher is immutable: each epoch is
/// drawn from the generator passed to it, so the same generator state gives the same epoch and
/// successive calls with one generator give different shuffles.
class Batcher {
public:
    /// A batcher over `sources` and `targets` (same count; pass no targets for source-only
    /// data). Throws ValueError for an empty dataset, batch_size < 1, bucket_batches < 0,
    /// pad_id < 0, a negative id (naming the source or target index and the position), a
    /// target count different from the source count, or drop_last with fewer examples than
    /// batch_size (an epoch without batches).
    Batcher(std::vector<std::vector<std::int64_t>> sources, std::vector<std::vector<std::int64_t>> targets,
            BatcherOptions options);
    /// A batcher over `examples` encoded with `vocab` (unknown tokens become <unk>; a reserved
    /// token throws ValueError as Vocabulary::encode does). Throws as the constructor above, and
    /// ValueError when options.pad_id is not Vocabulary::pad_id.
    Batcher(const std::vector<Example>& examples, const Vocabulary& vocab, BatcherOptions options);

    /// Number of examples.
    std::int64_t size() const { return static_cast<std::int64_t>(sources_.size()); }
    /// Batches per epoch: ceil(size / batch_size), or floor with drop_last.
    std::int64_t num_batches() const;
    /// The options given.
    const BatcherOptions& options() const { return options_; }

    /// The example indices of each batch of one epoch. Uses `generator` only when shuffling.
    std::vector<std::vector<std::int64_t>> epoch_indices(Generator& generator = default_generator()) const;
    /// The padded batch of examples `indices` (in that order). Throws ValueError when `indices`
    /// is empty, IndexError when one is outside [0, size()).
    Batch collate(const std::vector<std::int64_t>& indices) const;
    /// Every batch of one epoch: collate of each of epoch_indices(generator).
    std::vector<Batch> epoch(Generator& generator = default_generator()) const;

private:
    std::vector<std::vector<std::int64_t>> sources_;
    std::vector<std::vector<std::int64_t>> targets_;
    BatcherOptions options_;
};

}  // namespace attograd::data
