// Batching: variable-length id sequences padded to [B, T] with a key_padding_mask, and a
// batcher that shuffles per epoch, drops the last short batch on request and buckets by length.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"
#include "data/task.hpp"
#include "data/vocabulary.hpp"

#include <cstddef>
#include <cstdint>
#include <iterator>
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
/// `<bos>` and no `<eos>` is added. For a decoder, teacher_forcing(batch.target) builds the input
/// (`<bos>` y) and the labels (y `<eos>`).
struct Batch {
    std::vector<std::int64_t> indices;  ///< dataset index of row b
    PaddedSequences source;             ///< [B, S] each, padded to the batch's longest source
    PaddedSequences target;             ///< [B, T] each; undefined tensors when the batcher has no targets
};

class BatchStream;

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
    /// A batcher over `examples` encoded with `vocab` (unknown tokens become `<unk>`; a reserved
    /// token throws ValueError as Vocabulary::encode does). Throws as the constructor above, and
    /// ValueError when options.pad_id is not Vocabulary::pad_id.
    Batcher(const std::vector<Example>& examples, const Vocabulary& vocab, BatcherOptions options);
    /// A batcher over `examples` with separate vocabularies: sources encoded with
    /// `source_vocab`, targets with `target_vocab` (unknown tokens become `<unk>` of each; the
    /// special tokens have the same ids 0-3 in both, so padding and masks do not change). Throws
    /// as the constructor above.
    Batcher(const std::vector<Example>& examples, const Vocabulary& source_vocab,
            const Vocabulary& target_vocab, BatcherOptions options);

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
    /// `count` batches of epoch after epoch, for a training loop counted in steps:
    ///     for (const data::Batch& batch : batcher.batches(steps, gen)) ...
    /// The same batches as successive epoch(generator) calls cut after `count` (epoch_indices is
    /// drawn when the previous epoch runs out), collated one at a time as the loop reaches them.
    /// The stream keeps references to this batcher and `generator`, which must outlive it.
    /// Throws ValueError when count < 0.
    BatchStream batches(std::int64_t count, Generator& generator = default_generator()) const;

private:
    std::vector<std::vector<std::int64_t>> sources_;
    std::vector<std::vector<std::int64_t>> targets_;
    BatcherOptions options_;
};

/// A single-pass range of batches (see Batcher::batches): begin() draws the first epoch and
/// collates the first batch, each ++ the next one.
class BatchStream {
public:
    /// Reads the stream's current batch; equal to end() once `count` batches were read.
    class iterator {
    public:
        using value_type = Batch;                                     ///< what it reads
        using difference_type = std::ptrdiff_t;                       ///< as std::input_iterator requires
        const Batch& operator*() const { return stream_->batch_; }    ///< the current batch
        const Batch* operator->() const { return &stream_->batch_; }  ///< the current batch
        /// Collates the next batch (drawing the next epoch when one ends).
        iterator& operator++() {
            stream_->advance();
            return *this;
        }
        void operator++(int) { stream_->advance(); }  ///< as prefix ++
        /// True once `count` batches were read.
        bool operator==(std::default_sentinel_t) const { return stream_->remaining_ == 0; }

    private:
        friend class BatchStream;
        explicit iterator(BatchStream* stream) : stream_(stream) {}
        BatchStream* stream_;
    };

    /// The current batch (the first one on the first call; later calls do not restart).
    iterator begin();
    /// The end: reached once `count` batches were read.
    std::default_sentinel_t end() const { return {}; }

private:
    friend class Batcher;
    BatchStream(const Batcher& batcher, std::int64_t count, Generator& generator)
        : batcher_(&batcher), generator_(&generator), remaining_(count) {}
    void advance();  // one batch read: collate the next (a new epoch when this one is used up)

    const Batcher* batcher_;
    Generator* generator_;
    std::int64_t remaining_;  // batches still to read, the current one included
    std::vector<std::vector<std::int64_t>> epoch_{};
    std::size_t next_ = 0;  // index in epoch_ of the batch after the current one
    Batch batch_{};
    bool started_ = false;
};

/// Every example as one batch, in order: `examples` encoded with `vocab` and padded (Batcher
/// with batch_size examples.size(), then collate of every index), e.g. a held-out split decoded
/// in one call. Throws ValueError when `examples` is empty, and as Vocabulary::encode.
Batch collate(const std::vector<Example>& examples, const Vocabulary& vocab);
/// collate with separate vocabularies: sources encoded with `source_vocab`, targets with
/// `target_vocab`. Throws as the one-vocabulary collate.
Batch collate(const std::vector<Example>& examples, const Vocabulary& source_vocab,
              const Vocabulary& target_vocab);

}  // namespace attograd::data
