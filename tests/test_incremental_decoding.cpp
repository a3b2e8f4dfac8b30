// Incremental decoding: MultiHeadAttention's key/value cache, the Transformer decoder's cached
// step, Seq2SeqTransformer's and the recurrent decoders' incremental states in greedy and beam
// search — bit for bit the stateless path's output — and their errors on a misused cache.
#include "helpers.hpp"

#include "nn/attention_recorder.hpp"

using namespace attograd;
using namespace testing;

namespace {

struct Variant {
    const char* name;
    nn::TransformerOptions transformer;
    std::int64_t pad_id = 0;
};

nn::TransformerOptions arch(DType dtype) {
    return {.d_model = 8,
            .nhead = 2,
            .num_encoder_layers = 1,
            .num_decoder_layers = 2,
            .dim_feedforward = 12,
            .dropout = 0.0,
            .dtype = dtype};
}

// Every decoder configuration the cache supports, in float32 and float64.
std::vector<Variant> variants() {
    std::vector<Variant> out;
    for (const DType dtype : {DType::Float32, DType::Float64}) {
        const nn::TransformerOptions base = arch(dtype);
        out.push_back({"post-norm", base});
        nn::TransformerOptions o = base;
        o.norm_first = true;
        out.push_back({"pre-norm", o});
        o = base;
        o.positional = nn::Positional::Rotary;
        out.push_back({"rotary", o});
        o = base;
        o.positional = nn::Positional::ALiBi;
        out.push_back({"alibi", o});
        o = base;
        o.score = nn::Score::Dot;
        o.activation = nn::Activation::GELU;
        out.push_back({"dot score, gelu", o});
        o = base;
        o.dim_feedforward = 0;
        o.bias = false;
        out.push_back({"no feed-forward, no biases", o});
        // pad_id 3, a token the model generates: decode masks it as a key, the cache must too
        out.push_back({"generated padding", base, 3});
        out.push_back({"no padding id", base, -1});
    }
    return out;
}

std::unique_ptr<nn::Seq2SeqTransformer> make_model(const Variant& v, std::uint64_t seed = 5) {
    Generator gen(seed);
    auto model = std::make_unique<nn::Seq2SeqTransformer>(
        nn::Seq2SeqTransformerOptions{
            .vocab_size = 7, .pad_id = v.pad_id, .max_len = 32, .transformer = v.transformer},
        gen);
    randomize_parameters(*model, seed + 1, 0.8);
    model->eval();
    return model;
}

// Three sources, the last two padded (pad id 0 when the model has one).
Tensor sources(std::int64_t pad_id) {
    const std::int64_t p = pad_id == 0 ? 0 : 6;
    return index_tensor({4, 1, 5, 2, 6, 3, 2, 5, p, 1, 6, p, p, p, 4}, {3, 5});
}

void check_same(const nn::Hypothesis& a, const nn::Hypothesis& b) {
    CHECK(a.tokens == b.tokens);
    CHECK(a.finished == b.finished);
    CHECK(a.log_prob == b.log_prob);  // bit for bit
    CHECK(a.score == b.score);
}

}  // namespace

TEST_CASE("Seq2SeqTransformer::decode_cached gives decode's logits at every position bit for bit") {
    for (const Variant& v : variants()) {
        INFO(std::string(v.name) << " " << fmt::format("{}", v.transformer.dtype));
        const auto model = make_model(v);
        REQUIRE(model->supports_cache());
        const Tensor src = sources(v.pad_id);
        const Tensor memory = model->encode(src), mask = model->key_padding_mask(src);
        // prefixes holding bos, ordinary tokens and (with a pad id) padding
        const Tensor tgt =
            index_tensor({1, 4, 3, 3, 2, 5, 1, 6, 2, 3, 4, 1, 1, 2, 5, 6, 3, 4, 4, 1, 2, 3, 6, 5}, {3, 8});
        const Tensor full = model->decode(tgt, memory, mask);  // [3, 8, V]
        nn::TransformerDecoderCache cache;
        for (std::int64_t p = 0; p < tgt.size(1); ++p) {
            INFO("position " << p);
            const Tensor logits = model->decode_cached(select(tgt, 1, p), memory, cache, mask);
            REQUIRE(logits.shape() == Shape{3, 7});
            CHECK(logits.to_vector<double>() == select(full, 1, p).to_vector<double>());
            // the prefix run alone: the uncached step decoding calls at this length
            const Tensor prefix = model->decode(narrow(tgt, 1, 0, p + 1), memory, mask);
            CHECK(logits.to_vector<double>() == select(prefix, 1, p).to_vector<double>());
        }
        CHECK(cache.steps == 8);
        CHECK(cache.layers.size() == 2);
        CHECK(cache.layers[0].self_attn.key.shape() == Shape{3, 8, 8});
        CHECK(cache.layers[1].multihead_attn.key.shape() == Shape{3, 5, 8});  // the memory, projected once
    }
}

TEST_CASE("greedy and beam search with the cache equal the stateless path: tokens and log_prob bit for bit") {
    for (const Variant& v : variants()) {
        INFO(std::string(v.name) << " " << fmt::format("{}", v.transformer.dtype));
        const auto model = make_model(v);
        const Tensor src = sources(v.pad_id);
        for (const std::int64_t beam : {1, 4}) {
            INFO("beam " << beam);
            nn::DecodeOptions options{.bos_id = 1,
                                      .eos_id = 2,
                                      .max_length = 12,
                                      .beam_size = beam,
                                      .length_penalty = 0.7,
                                      .num_return_sequences = beam};
            const auto cached = model->beam_search(src, options);
            options.use_cache = false;
            const auto plain = model->beam_search(src, options);
            REQUIRE(cached.size() == plain.size());
            for (std::size_t b = 0; b < cached.size(); ++b) {
                REQUIRE(cached[b].size() == plain[b].size());
                for (std::size_t i = 0; i < cached[b].size(); ++i) check_same(cached[b][i], plain[b][i]);
            }
            options.use_cache = true;
            const auto greedy_cached = model->greedy_decode(src, options);
            options.use_cache = false;
            const auto greedy_plain = model->greedy_decode(src, options);
            REQUIRE(greedy_cached.size() == 3);
            for (std::size_t b = 0; b < 3; ++b) check_same(greedy_cached[b], greedy_plain[b]);
        }
    }
}

TEST_CASE("decoding with the cache records the chosen output's attention as the stateless path does") {
    const Variant v{"post-norm", arch(DType::Float64)};
    const auto model = make_model(v);
    const Tensor src = sources(0);
    nn::DecodeOptions options{.bos_id = 1, .eos_id = 2, .max_length = 10, .beam_size = 3};
    std::vector<nn::RecordedAttention> with_cache, without;
    {
        nn::AttentionRecorder recorder(*model);
        model->beam_search(src, options);
        with_cache = recorder.records();
    }
    options.use_cache = false;
    {
        nn::AttentionRecorder recorder(*model);
        model->beam_search(src, options);
        without = recorder.records();
    }
    // the encoder's layer, then per source each decoder layer's self- and cross-attention over
    // the whole output
    REQUIRE(with_cache.size() == 1 + 3 * 4);
    REQUIRE(without.size() == with_cache.size());
    for (std::size_t i = 0; i < with_cache.size(); ++i) {
        CHECK(with_cache[i].name == without[i].name);
        CHECK(with_cache[i].weights.shape() == without[i].weights.shape());
        CHECK(with_cache[i].weights.to_vector<double>() == without[i].weights.to_vector<double>());
    }
}

TEST_CASE("architectures without a cached path decode through the stateless step") {
    nn::TransformerOptions local = arch(DType::Float64);
    local.local = nn::LocalMode::Monotonic;
    local.window = 2;
    const Variant v{"local-m", local};
    const auto model = make_model(v);
    CHECK_FALSE(model->supports_cache());
    CHECK_FALSE(static_cast<bool>(model->incremental_start()));
    const auto out = model->greedy_decode(sources(0), {.bos_id = 1, .eos_id = 2, .max_length = 6});
    CHECK(out.size() == 3);
    nn::TransformerDecoderCache cache;
    const Tensor src = sources(0);
    CHECK_THROWS_WITH_AS(model->decode_cached(index_tensor({1, 1, 1}, {3}), model->encode(src), cache),
                         doctest::Contains("forward_cached: incremental decoding needs MultiHead attention"),
                         ValueError);
}

TEST_CASE("a misused cache gets a clear error") {
    const Variant v{"post-norm", arch(DType::Float64)};
    const auto model = make_model(v);
    const Tensor src = sources(0);
    const Tensor memory = model->encode(src), mask = model->key_padding_mask(src);
    const Tensor bos = index_tensor({1, 1, 1}, {3});

    SUBCASE("another batch size than the cache was built for") {
        nn::TransformerDecoderCache cache;
        model->decode_cached(bos, memory, cache, mask);
        CHECK_THROWS_WITH_AS(model->decode_cached(index_tensor({1, 1}, {2}), memory, cache, mask),
                             doctest::Contains("the cache holds 3 rows but tokens [2] has 2"), ShapeError);
    }
    SUBCASE("a reorder outside the cache's rows") {
        nn::TransformerDecoderCache cache;
        model->decode_cached(bos, memory, cache, mask);
        CHECK_THROWS_WITH_AS(cache.reorder(index_tensor({0, 3}, {2})),
                             doctest::Contains("row index 3 at 1 is outside the cache's 3 rows"), IndexError);
    }
    SUBCASE("longer than the positional encoding's max_len") {
        Generator gen(1);
        nn::Seq2SeqTransformer short_model(
            {.vocab_size = 7, .pad_id = 0, .max_len = 5, .transformer = arch(DType::Float64)}, gen);
        short_model.eval();
        const Tensor m = short_model.encode(src);
        nn::TransformerDecoderCache cache;
        for (int p = 0; p < 5; ++p) short_model.decode_cached(bos, m, cache);
        CHECK_THROWS_WITH_AS(short_model.decode_cached(bos, m, cache),
                             doctest::Contains("position 5 is beyond max_len 5"), ShapeError);
    }
    SUBCASE("a cache reused with another memory") {
        nn::TransformerDecoderCache cache;
        model->decode_cached(bos, memory, cache, mask);
        const Tensor other = model->encode(src);
        CHECK_THROWS_WITH_AS(model->decode_cached(bos, other, cache, mask),
                             doctest::Contains("the cache holds the keys of another memory"), ValueError);
    }
    SUBCASE("a self-attention cache given to cross-attention, and one layer's cache to another layer") {
        const nn::TransformerDecoderLayer& layer = model->transformer().decoder().layer(0);
        const nn::TransformerDecoderLayer& second = model->transformer().decoder().layer(1);
        nn::TransformerDecoderLayerCache cache;
        const Tensor x = zeros({3, 1, 8}, {.dtype = DType::Float64});
        layer.forward_cached(x, memory, cache);
        nn::KeyValueCache swapped = cache.self_attn;
        CHECK_THROWS_WITH_AS(
            layer.multihead_attn().forward_cross_cached(x, memory, swapped),
            doctest::Contains("the cache holds self-attention keys, not cross-attention keys"), ValueError);
        CHECK_THROWS_WITH_AS(second.forward_cached(x, memory, cache),
                             doctest::Contains("the cache was filled by another attention module"),
                             ValueError);
    }
    SUBCASE(
        "mixing an uncached call into a cached decode: more than one position, masks for whole sequences") {
        const nn::TransformerDecoder& decoder = model->transformer().decoder();
        nn::TransformerDecoderCache cache;
        const Tensor two = zeros({3, 2, 8}, {.dtype = DType::Float64});
        CHECK_THROWS_WITH_AS(
            decoder.forward_cached(two, memory, cache),
            doctest::Contains("the query must be one new position [N, 1, E] with E = 8, got [3, 2, 8]"),
            ShapeError);
        const Tensor one = zeros({3, 1, 8}, {.dtype = DType::Float64});
        CHECK_THROWS_WITH_AS(decoder.forward_cached(one, memory, cache, {.tgt_mask = nn::causal_mask(1)}),
                             doctest::Contains("tgt_mask, memory_mask and memory_is_causal do not apply"),
                             ValueError);
    }
    SUBCASE("a cache of another decoder depth") {
        nn::TransformerDecoderCache cache;
        cache.layers.resize(1);
        const Tensor one = zeros({3, 1, 8}, {.dtype = DType::Float64});
        CHECK_THROWS_WITH_AS(model->transformer().decoder().forward_cached(one, memory, cache),
                             doctest::Contains("the cache holds 1 layers but the decoder has 2"), ValueError);
    }
}
