// data/batcher: padding with masks and lengths, per-epoch shuffles, drop_last, bucketing by
// length, and the errors.
#include "core/error.hpp"
#include "data/batcher.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

using namespace attograd;
using namespace attograd::data;

namespace {

using Ids = std::vector<std::vector<std::int64_t>>;

std::vector<bool> bools(const Tensor& t) {
    return std::vector<bool>(t.data<bool>(), t.data<bool>() + t.numel());
}

/// `n` sources, source i being i % 7 + 1 copies of the id 10 + i; targets one id 100 + i.
Batcher make_batcher(std::int64_t n, BatcherOptions options) {
    Ids sources, targets;
    for (std::int64_t i = 0; i < n; ++i) {
        sources.emplace_back(static_cast<std::size_t>(i % 7 + 1), 10 + i);
        targets.push_back({100 + i});
    }
    return Batcher(sources, targets, options);
}

/// Every index of an epoch, in order.
std::vector<std::int64_t> flatten(const std::vector<std::vector<std::int64_t>>& batches) {
    std::vector<std::int64_t> out;
    for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
    return out;
}

}  // namespace

TEST_CASE("pad_sequences: batch first, padding value after each sequence, mask true at padding") {
    const auto p = pad_sequences({{5, 6, 7}, {8}, {}}, {.padding_value = 9});
    CHECK(p.ids.shape() == Shape{3, 3});
    CHECK(p.ids.dtype() == DType::Int64);
    CHECK(p.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 6, 7, 8, 9, 9, 9, 9, 9});
    CHECK(p.key_padding_mask.dtype() == DType::Bool);
    CHECK(p.key_padding_mask.shape() == Shape{3, 3});
    CHECK(bools(p.key_padding_mask) ==
          std::vector<bool>{false, false, false, false, true, true, true, true, true});
    CHECK(p.lengths.to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 1, 0});
    // A fixed length pads further; the default padding value is <pad>.
    const auto wide = pad_sequences({{5}}, {.length = 3});
    CHECK(wide.ids.to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{5, Vocabulary::pad_id, Vocabulary::pad_id});
    CHECK(pad_sequences({{}, {}}).ids.shape() == Shape{2, 0});
    CHECK_THROWS_WITH_AS(pad_sequences({}), doctest::Contains("pad_sequences: no sequences"), ValueError);
    CHECK_THROWS_WITH_AS(pad_sequences({{1}, {1, 2, 3}}, {.length = 2}),
                         doctest::Contains("sequence 1 has 3 ids, longer than length 2"), ValueError);
    CHECK_THROWS_WITH_AS(pad_sequences({{1}}, {.length = -2}), doctest::Contains("length must be >= 0"),
                         ValueError);
}

TEST_CASE("batcher: in order without shuffle, each batch padded to its own longest sequence") {
    const Batcher batcher(Ids{{1, 2}, {3}, {4, 5, 6}}, Ids{{7}, {8, 9}, {10}}, {.batch_size = 2});
    CHECK(batcher.size() == 3);
    CHECK(batcher.num_batches() == 2);
    const auto batches = batcher.epoch();
    REQUIRE(batches.size() == 2);
    CHECK(batches[0].indices == std::vector<std::int64_t>{0, 1});
    CHECK(batches[0].source.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 3, 0});
    CHECK(batches[0].target.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{7, 0, 8, 9});
    CHECK(bools(batches[0].target.key_padding_mask) == std::vector<bool>{false, true, false, false});
    CHECK(batches[1].indices == std::vector<std::int64_t>{2});
    CHECK(batches[1].source.ids.shape() == Shape{1, 3});
    CHECK(batches[1].target.lengths.to_vector<std::int64_t>() == std::vector<std::int64_t>{1});
    // Source-only data: the target tensors stay undefined.
    const Batcher sources_only(Ids{{1}, {2}}, {}, {.batch_size = 2});
    CHECK_FALSE(sources_only.epoch()[0].target.ids.defined());
}

TEST_CASE("batcher: shuffles reproducibly per generator, differently from epoch to epoch") {
    const Batcher batcher = make_batcher(40, {.batch_size = 8, .shuffle = true});
    Generator a(5), b(5);
    const auto first = batcher.epoch_indices(a);
    CHECK(batcher.epoch_indices(b) == first);  // same seed, same order
    const auto second = batcher.epoch_indices(a);
    CHECK(second != first);  // the next epoch draws a new order
    CHECK(batcher.epoch_indices(b) == second);
    std::vector<std::int64_t> all = flatten(first);
    std::vector<std::int64_t> identity(40);
    std::iota(identity.begin(), identity.end(), 0);
    CHECK(all != identity);
    std::sort(all.begin(), all.end());
    CHECK(all == identity);  // a permutation: every example once
    Generator c(6);
    CHECK(batcher.epoch_indices(c) != first);
}

TEST_CASE("batcher: drop_last drops only a short last batch") {
    const Batcher keep = make_batcher(10, {.batch_size = 4});
    const Batcher drop = make_batcher(10, {.batch_size = 4, .drop_last = true});
    CHECK(keep.num_batches() == 3);
    CHECK(drop.num_batches() == 2);
    const auto kept = keep.epoch_indices();
    CHECK(kept.back().size() == 2);
    Generator generator(1);
    const auto dropped =
        make_batcher(10, {.batch_size = 4, .shuffle = true, .drop_last = true}).epoch_indices(generator);
    REQUIRE(dropped.size() == 2);
    for (const auto& batch : dropped) CHECK(batch.size() == 4);
    CHECK(make_batcher(8, {.batch_size = 4, .drop_last = true}).num_batches() == 2);  // nothing to drop
}

TEST_CASE("batcher: bucketing keeps every example exactly once and makes batches of similar lengths") {
    const std::int64_t n = 70;
    const Batcher plain = make_batcher(n, {.batch_size = 5, .shuffle = true});
    const Batcher bucketed = make_batcher(n, {.batch_size = 5, .shuffle = true, .bucket_batches = 7});
    Generator g1(3), g2(3);
    const auto plain_batches = plain.epoch_indices(g1);
    const auto buckets = bucketed.epoch_indices(g2);
    REQUIRE(buckets.size() == 14);
    auto all = flatten(buckets);
    std::sort(all.begin(), all.end());
    std::vector<std::int64_t> identity(static_cast<std::size_t>(n));
    std::iota(identity.begin(), identity.end(), 0);
    CHECK(all == identity);
    // Padding: the summed (longest - shortest) length within a batch is smaller when bucketed.
    const auto spread = [](const std::vector<std::vector<std::int64_t>>& batches) {
        std::int64_t total = 0;
        for (const auto& b : batches) {
            std::int64_t lo = 100, hi = 0;
            for (const auto i : b) lo = std::min(lo, i % 7 + 1), hi = std::max(hi, i % 7 + 1);
            total += hi - lo;
        }
        return total;
    };
    CHECK(spread(buckets) < spread(plain_batches));
    for (const auto& b : buckets) {  // within a batch, rising length (each chunk was sorted)
        for (std::size_t k = 1; k < b.size(); ++k) CHECK(b[k - 1] % 7 <= b[k] % 7);
    }
    Generator g3(3);
    CHECK(bucketed.epoch_indices(g3) == buckets);  // reproducible
    // Without shuffling, bucketing sorts each chunk in dataset order.
    const auto sorted = make_batcher(14, {.batch_size = 7, .bucket_batches = 2}).epoch_indices();
    CHECK(sorted[0] == std::vector<std::int64_t>{0, 7, 1, 8, 2, 9, 3});
    // drop_last with bucketing: still every batch full.
    Generator g4(9);
    const auto full =
        make_batcher(23, {.batch_size = 5, .shuffle = true, .drop_last = true, .bucket_batches = 2})
            .epoch_indices(g4);
    REQUIRE(full.size() == 4);
    for (const auto& b : full) CHECK(b.size() == 5);
}

TEST_CASE("batcher: built from examples and a vocabulary") {
    const Vocabulary vocab({"a", "b"});
    const Batcher batcher({{{"a", "b"}, {"b"}}, {{"zz"}, {"a", "a"}}}, vocab, {.batch_size = 2});
    const auto batch = batcher.collate({1, 0});
    CHECK(batch.source.ids.to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{Vocabulary::unk_id, Vocabulary::pad_id, 4, 5});
    CHECK(batch.target.ids.to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{4, 4, 5, Vocabulary::pad_id});
    CHECK_THROWS_WITH_AS(Batcher({{{"<eos>"}, {"a"}}}, vocab, {}), doctest::Contains("reserved"), ValueError);
}

TEST_CASE("batcher and collate with separate source and target vocabularies") {
    // English sources, French targets: "the" has id 4 in the source vocabulary, "le" id 4 in the
    // target one; a word of one language is <unk> in the other's vocabulary.
    const Vocabulary english({"the", "cat"}), french({"le", "chat", "noir"});
    const std::vector<Example> examples{{{"the", "cat"}, {"le", "chat", "noir"}},
                                        {{"cat", "le"}, {"chat", "the"}}};
    const std::int64_t unk = Vocabulary::unk_id, pad = Vocabulary::pad_id;
    const Batcher batcher(examples, english, french, {.batch_size = 2});
    const Batch batch = batcher.collate({0, 1});
    CHECK(batch.source.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 5, 5, unk});
    CHECK(batch.target.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 5, 6, 5, unk, pad});
    // The shared-vocabulary batcher reads both sides with one vocabulary.
    const Batch shared = Batcher(examples, french, {.batch_size = 2}).collate({0, 1});
    CHECK(shared.source.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{unk, unk, unk, 4});
    const Batch all = collate(examples, english, french);
    CHECK(all.source.ids.to_vector<std::int64_t>() == batch.source.ids.to_vector<std::int64_t>());
    CHECK(all.target.ids.to_vector<std::int64_t>() == batch.target.ids.to_vector<std::int64_t>());
    CHECK_THROWS_WITH_AS(Batcher(examples, english, french, {.pad_id = 4}),
                         doctest::Contains("Batcher: pad_id 4 with a Vocabulary is the id of 'the'"),
                         ValueError);
    CHECK_THROWS_WITH_AS(collate({{{"a"}, {"<eos>"}}}, english, french), doctest::Contains("reserved"),
                         ValueError);
}

TEST_CASE("batcher: batches(count) are successive epochs cut after count, collated lazily") {
    // 10 examples in batches of 4: 3 per epoch (the last short), so 8 batches cross two epoch ends.
    const Batcher batcher = make_batcher(10, {.batch_size = 4, .shuffle = true});
    Generator by_epoch(5), by_stream(5);
    std::vector<std::vector<std::int64_t>> expected;
    while (expected.size() < 8)
        for (const auto& indices : batcher.epoch_indices(by_epoch)) expected.push_back(indices);
    expected.resize(8);
    std::vector<std::vector<std::int64_t>> seen;
    std::vector<std::int64_t> first_ids;
    for (const Batch& batch : batcher.batches(8, by_stream)) {
        seen.push_back(batch.indices);
        if (seen.size() == 1) first_ids = batch.source.ids.to_vector<std::int64_t>();
    }
    CHECK(seen == expected);
    CHECK(first_ids == batcher.collate(expected[0]).source.ids.to_vector<std::int64_t>());
    // The stream drew three epochs from its generator, as the loop above did.
    CHECK(by_stream.next() == by_epoch.next());

    Generator unused(5);
    std::int64_t zero = 0;
    for (const Batch& batch : batcher.batches(0, unused)) zero += std::ssize(batch.indices);
    CHECK(zero == 0);
    CHECK_THROWS_WITH_AS(batcher.batches(-1, unused),
                         doctest::Contains("Batcher::batches: count must be >= 0"), ValueError);
}

TEST_CASE("collate: every example as one batch, in order") {
    const Vocabulary vocab({"a", "b"});
    const std::vector<Example> examples{{{"a", "b"}, {"b"}}, {{"b"}, {"a", "a"}}, {{"a"}, {}}};
    const Batch all = collate(examples, vocab);
    CHECK(all.indices == std::vector<std::int64_t>{0, 1, 2});
    CHECK(all.source.ids.shape() == Shape{3, 2});
    CHECK(all.source.ids.to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{4, 5, 5, Vocabulary::pad_id, 4, Vocabulary::pad_id});
    CHECK(bools(all.source.key_padding_mask) == std::vector<bool>{false, false, false, true, false, true});
    CHECK(all.target.lengths.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 0});
    CHECK(collate({examples[1]}, vocab).source.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{5});
    CHECK_THROWS_WITH_AS(collate({}, vocab), doctest::Contains("collate: no examples"), ValueError);
    CHECK_THROWS_WITH_AS(collate({{{"<bos>"}, {"a"}}}, vocab), doctest::Contains("reserved"), ValueError);
}

TEST_CASE("batcher: empty dataset, batch size 0 and other bad arguments are refused") {
    CHECK_THROWS_WITH_AS(Batcher(Ids{}, Ids{}, {}), doctest::Contains("Batcher: empty dataset"), ValueError);
    CHECK_THROWS_WITH_AS(Batcher(Ids{{1}}, Ids{}, {.batch_size = 0}),
                         doctest::Contains("Batcher: batch_size must be >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(Batcher(Ids{{1}}, Ids{}, {.bucket_batches = -1}),
                         doctest::Contains("bucket_batches"), ValueError);
    CHECK_THROWS_WITH_AS(Batcher(Ids{{1}, {2}}, Ids{{1}}, {}),
                         doctest::Contains("Batcher: 1 targets for 2 sources"), ValueError);
    CHECK_THROWS_WITH_AS(Batcher(Ids{{1}, {2}}, Ids{}, {.batch_size = 3, .drop_last = true}),
                         doctest::Contains("leaves no batch"), ValueError);
    const Batcher batcher(Ids{{1}, {2}}, Ids{}, {});
    CHECK_THROWS_WITH_AS(batcher.collate({}), doctest::Contains("Batcher::collate: no indices"), ValueError);
    CHECK_THROWS_WITH_AS(batcher.collate({0, 2}), doctest::Contains("index 2 outside [0, 2)"), IndexError);
}

TEST_CASE("negative ids and pad ids are refused, and with a vocabulary pad is its <pad>") {
    CHECK_THROWS_WITH_AS(pad_sequences({{1}}, {.padding_value = -5}),
                         doctest::Contains("pad_sequences: padding_value must be an id >= 0, got -5"),
                         ValueError);
    CHECK_THROWS_WITH_AS(pad_sequences({{1, 2}, {3, -4, 5}}),
                         doctest::Contains("pad_sequences: sequence 1 has id -4 at position 1"), ValueError);
    CHECK_THROWS_WITH_AS(Batcher(Ids{{1}}, Ids{}, {.pad_id = -5}),
                         doctest::Contains("Batcher: pad_id must be an id >= 0, got -5"), ValueError);
    CHECK_THROWS_WITH_AS(Batcher(Ids{{1}, {2, -3}}, Ids{}, {}),
                         doctest::Contains("Batcher: source 1 has id -3 at position 1"), ValueError);
    CHECK_THROWS_WITH_AS(Batcher(Ids{{1}, {2}}, Ids{{-1}, {2}}, {}),
                         doctest::Contains("Batcher: target 0 has id -1 at position 0"), ValueError);
    const Vocabulary vocab({"a", "b"});
    const std::vector<Example> examples{{{"a"}, {"b"}}};
    CHECK_THROWS_WITH_AS(Batcher(examples, vocab, {.pad_id = 4}),
                         doctest::Contains("Batcher: pad_id 4 with a Vocabulary is the id of 'a'"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Batcher(examples, vocab, {.pad_id = 99}), doctest::Contains("Vocabulary::pad_id"),
                         ValueError);
    CHECK(Batcher(examples, vocab, {}).collate({0}).source.ids.to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{vocab.id("a")});
    // Raw ids may use any pad id >= 0 (the caller's own numbering).
    CHECK(Batcher(Ids{{1}, {2, 3}}, Ids{}, {.batch_size = 2, .pad_id = 7})
              .collate({0, 1})
              .source.ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 7, 2, 3});
}
