// Batching: padding id sequences with their masks, and per-epoch shuffled, bucketed batches.
#include "data/batcher.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <numeric>

namespace attograd::data {

namespace {

/// Fisher-Yates shuffle drawing from `generator` (the same state gives the same order).
template <class T>
void shuffle(std::vector<T>& items, Generator& generator) {
    for (std::size_t i = items.size(); i > 1; --i) {
        const auto j = static_cast<std::size_t>(generator.randint(0, static_cast<std::int64_t>(i)));
        std::swap(items[i - 1], items[j]);
    }
}

std::vector<std::vector<std::int64_t>> encode_all(const std::vector<Example>& examples,
                                                  const Vocabulary& vocab, bool targets) {
    std::vector<std::vector<std::int64_t>> out;
    out.reserve(examples.size());
    for (const auto& example : examples)
        out.push_back(vocab.encode(targets ? example.target : example.source));
    return out;
}

/// Throws ValueError naming the sequence index and position of the first negative id.
void check_ids(const std::vector<std::vector<std::int64_t>>& sequences, const char* function,
               const char* what) {
    for (std::size_t i = 0; i < sequences.size(); ++i) {
        const auto& s = sequences[i];
        const auto bad = std::find_if(s.begin(), s.end(), [](std::int64_t id) { return id < 0; });
        AG_CHECK(bad == s.end(), ValueError, "{}: {} {} has id {} at position {}; ids must be >= 0", function,
                 what, i, *bad, bad - s.begin());
    }
}

}  // namespace

PaddedSequences pad_sequences(const std::vector<std::vector<std::int64_t>>& sequences,
                              const PadOptions& options) {
    AG_CHECK(!sequences.empty(), ValueError, "pad_sequences: no sequences");
    AG_CHECK(options.length >= -1, ValueError,
             "pad_sequences: length must be >= 0 (or -1: the longest), got {}", options.length);
    AG_CHECK(options.padding_value >= 0, ValueError,
             "pad_sequences: padding_value must be an id >= 0, got {}", options.padding_value);
    check_ids(sequences, "pad_sequences", "sequence");
    const auto b = static_cast<std::int64_t>(sequences.size());
    std::int64_t t = options.length;
    if (t < 0) {
        t = 0;
        for (const auto& s : sequences) t = std::max<std::int64_t>(t, std::ssize(s));
    }
    std::vector<std::int64_t> ids(static_cast<std::size_t>(b * t), options.padding_value);
    std::vector<std::int64_t> lengths;
    Tensor mask = empty({b, t}, {.dtype = DType::Bool});
    std::fill_n(mask.data<bool>(), mask.numel(), true);
    for (std::int64_t i = 0; i < b; ++i) {
        const auto& s = sequences[static_cast<std::size_t>(i)];
        const auto n = std::ssize(s);
        AG_CHECK(n <= t, ValueError, "pad_sequences: sequence {} has {} ids, longer than length {}", i, n, t);
        std::copy(s.begin(), s.end(), ids.begin() + i * t);
        std::fill_n(mask.data<bool>() + i * t, n, false);
        lengths.push_back(n);
    }
    return {index_tensor(ids, {b, t}), mask, index_tensor(lengths, {b})};
}

Batcher::Batcher(std::vector<std::vector<std::int64_t>> sources,
                 std::vector<std::vector<std::int64_t>> targets, BatcherOptions options)
    : sources_(std::move(sources)), targets_(std::move(targets)), options_(options) {
    AG_CHECK(!sources_.empty(), ValueError, "Batcher: empty dataset");
    AG_CHECK(options_.batch_size >= 1, ValueError, "Batcher: batch_size must be >= 1, got {}",
             options_.batch_size);
    AG_CHECK(options_.bucket_batches >= 0, ValueError,
             "Batcher: bucket_batches must be >= 0 (0 = off), got {}", options_.bucket_batches);
    AG_CHECK(targets_.empty() || targets_.size() == sources_.size(), ValueError,
             "Batcher: {} targets for {} sources", targets_.size(), sources_.size());
    AG_CHECK(options_.pad_id >= 0, ValueError, "Batcher: pad_id must be an id >= 0, got {}", options_.pad_id);
    check_ids(sources_, "Batcher", "source");
    check_ids(targets_, "Batcher", "target");
    AG_CHECK(!options_.drop_last || size() >= options_.batch_size, ValueError,
             "Batcher: drop_last with {} examples and batch_size {} leaves no batch", size(),
             options_.batch_size);
}

Batcher::Batcher(const std::vector<Example>& examples, const Vocabulary& vocab, BatcherOptions options)
    : Batcher(examples, vocab, vocab, options) {}

Batcher::Batcher(const std::vector<Example>& examples, const Vocabulary& source_vocab,
                 const Vocabulary& target_vocab, BatcherOptions options)
    : Batcher(encode_all(examples, source_vocab, false), encode_all(examples, target_vocab, true), options) {
    // Any other pad id is a real token's id: padding would read as that token.
    AG_CHECK(options_.pad_id == Vocabulary::pad_id, ValueError,
             "Batcher: pad_id {} with a Vocabulary is the id of '{}'; it must be Vocabulary::pad_id ({})",
             options_.pad_id,
             options_.pad_id < source_vocab.size() ? source_vocab.token(options_.pad_id) : "<none>",
             Vocabulary::pad_id);
}

std::int64_t Batcher::num_batches() const {
    const std::int64_t bs = options_.batch_size;
    return options_.drop_last ? size() / bs : (size() + bs - 1) / bs;
}

std::vector<std::vector<std::int64_t>> Batcher::epoch_indices(Generator& generator) const {
    std::vector<std::int64_t> order(static_cast<std::size_t>(size()));
    std::iota(order.begin(), order.end(), 0);
    if (options_.shuffle) shuffle(order, generator);
    const auto bs = static_cast<std::size_t>(options_.batch_size);
    if (options_.bucket_batches > 0) {
        const auto length_of = [&](std::int64_t i) {
            const auto k = static_cast<std::size_t>(i);
            return std::pair(sources_[k].size(), targets_.empty() ? std::size_t{0} : targets_[k].size());
        };
        const std::size_t chunk = bs * static_cast<std::size_t>(options_.bucket_batches);
        for (std::size_t start = 0; start < order.size(); start += chunk) {
            const auto end =
                order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + chunk));
            std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(start), end,
                             [&](std::int64_t a, std::int64_t b) { return length_of(a) < length_of(b); });
        }
    }
    std::vector<std::vector<std::int64_t>> batches;
    for (std::size_t start = 0; start < order.size(); start += bs) {
        const std::size_t end = std::min(order.size(), start + bs);
        if (options_.drop_last && end - start < bs) break;
        batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                             order.begin() + static_cast<std::ptrdiff_t>(end));
    }
    // Sorted chunks would otherwise give batches in rising length within each chunk.
    if (options_.bucket_batches > 0 && options_.shuffle) shuffle(batches, generator);
    return batches;
}

Batch Batcher::collate(const std::vector<std::int64_t>& indices) const {
    AG_CHECK(!indices.empty(), ValueError, "Batcher::collate: no indices");
    std::vector<std::vector<std::int64_t>> sources, targets;
    for (const std::int64_t i : indices) {
        AG_CHECK(i >= 0 && i < size(), IndexError, "Batcher::collate: index {} outside [0, {})", i, size());
        sources.push_back(sources_[static_cast<std::size_t>(i)]);
        if (!targets_.empty()) targets.push_back(targets_[static_cast<std::size_t>(i)]);
    }
    Batch batch;
    batch.indices = indices;
    batch.source = pad_sequences(sources, {.padding_value = options_.pad_id});
    if (!targets_.empty()) batch.target = pad_sequences(targets, {.padding_value = options_.pad_id});
    return batch;
}

std::vector<Batch> Batcher::epoch(Generator& generator) const {
    std::vector<Batch> out;
    for (const auto& indices : epoch_indices(generator)) out.push_back(collate(indices));
    return out;
}

BatchStream Batcher::batches(std::int64_t count, Generator& generator) const {
    AG_CHECK(count >= 0, ValueError, "Batcher::batches: count must be >= 0, got {}", count);
    return BatchStream(*this, count, generator);
}

BatchStream::iterator BatchStream::begin() {
    if (!started_) {
        started_ = true;
        if (remaining_ > 0) {
            epoch_ = batcher_->epoch_indices(*generator_);
            batch_ = batcher_->collate(epoch_[next_++]);
        }
    }
    return iterator(this);
}

void BatchStream::advance() {
    AG_ASSERT(started_ && remaining_ > 0, "BatchStream advanced past its end");
    if (--remaining_ == 0) return;
    if (next_ == epoch_.size()) {  // the constructor refuses epochs without batches
        epoch_ = batcher_->epoch_indices(*generator_);
        next_ = 0;
    }
    batch_ = batcher_->collate(epoch_[next_++]);
}

Batch collate(const std::vector<Example>& examples, const Vocabulary& vocab) {
    return collate(examples, vocab, vocab);
}

Batch collate(const std::vector<Example>& examples, const Vocabulary& source_vocab,
              const Vocabulary& target_vocab) {
    AG_CHECK(!examples.empty(), ValueError, "collate: no examples");
    const Batcher all(examples, source_vocab, target_vocab,
                      {.batch_size = static_cast<std::int64_t>(examples.size())});
    std::vector<std::int64_t> indices(examples.size());
    std::iota(indices.begin(), indices.end(), std::int64_t{0});
    return all.collate(indices);
}

}  // namespace attograd::data
