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
        o.scoring.positional = nn::Positional::Rotary;
        out.push_back({"rotary", o});
        o = base;
        o.scoring.positional = nn::Positional::ALiBi;
        out.push_back({"alibi", o});
        o = base;
        o.scoring.score = nn::Score::Dot;
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

// The longest output: the comparison means little when every search stops after a step or two.
std::int64_t longest(const std::vector<std::vector<nn::Hypothesis>>& outputs) {
    std::int64_t n = 0;
    for (const auto& list : outputs)
        for (const nn::Hypothesis& h : list) n = std::max(n, h.length());
    return n;
}

void check_same(const nn::Hypothesis& a, const nn::Hypothesis& b) {
    CHECK(a.tokens == b.tokens);
    CHECK(a.finished == b.finished);
    CHECK(a.log_prob == b.log_prob);  // bit for bit
    CHECK(a.score == b.score);
}

// Beam search (1 and 4 beams, every hypothesis returned) and greedy decoding with the cache
// and without: the same hypotheses bit for bit. beam(options) and greedy(options) decode.
template <class Beam, class Greedy>
void check_searches(const Beam& beam_search, const Greedy& greedy_decode, double length_penalty) {
    for (const std::int64_t beam : {1, 4}) {
        INFO("beam " << beam);
        nn::DecodeOptions options{.bos_id = 1,
                                  .eos_id = 2,
                                  .max_length = 12,
                                  .beam_size = beam,
                                  .length_penalty = length_penalty,
                                  .num_return_sequences = beam};
        const auto cached = beam_search(options);
        const auto greedy_cached = greedy_decode(options);
        options.use_cache = false;
        const auto plain = beam_search(options);
        const auto greedy_plain = greedy_decode(options);
        CHECK(longest(cached) >= 4);
        REQUIRE(cached.size() == plain.size());
        REQUIRE(greedy_cached.size() == cached.size());
        for (std::size_t b = 0; b < cached.size(); ++b) {
            REQUIRE(cached[b].size() == plain[b].size());
            for (std::size_t i = 0; i < cached[b].size(); ++i) check_same(cached[b][i], plain[b][i]);
            check_same(greedy_cached[b], greedy_plain[b]);
        }
    }
}

// check_searches over nn::beam_search / nn::greedy_decode with `model`.
void check_searches(const nn::DecodeModel& model, const Tensor& memory, const Tensor& mask) {
    check_searches([&](const nn::DecodeOptions& o) { return nn::beam_search(memory, mask, model, o); },
                   [&](const nn::DecodeOptions& o) { return nn::greedy_decode(memory, mask, model, o); },
                   0.5);
}

}  // namespace

TEST_CASE(
    "MultiHeadAttention's cached self- and cross-attention equal forward row by row, weights included") {
    for (const nn::Positional positional :
         {nn::Positional::None, nn::Positional::Rotary, nn::Positional::ALiBi}) {
        INFO(to_string(positional));
        Generator gen(11);
        nn::MultiHeadAttention self({.embed_dim = 8, .num_heads = 2, .scoring = {.positional = positional}},
                                    gen);
        // kdim / vdim 6: separate q / k / v projections
        nn::MultiHeadAttention cross(
            {.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 6, .scoring = {.positional = positional}},
            gen);
        randomize_parameters(self, 12);
        randomize_parameters(cross, 13);
        const Tensor x = randn({2, 6, 8}, gen), memory = randn({2, 4, 6}, gen);
        const Tensor mask =
            testing::bool_mask({2, 4}, [](std::int64_t b, std::int64_t s) { return b == 1 && s == 3; });
        const auto full_self = self.forward(x, {.is_causal = true, .average_attn_weights = false});
        const auto full_cross =
            cross.forward(x, memory, memory, {.key_padding_mask = mask, .average_attn_weights = false});
        nn::KeyValueCache self_cache, cross_cache;
        for (std::int64_t p = 0; p < 6; ++p) {
            INFO("position " << p);
            const Tensor row = narrow(x, 1, p, 1);
            const auto s = self.forward_cached(row, self_cache, {}, {.average_attn_weights = false});
            CHECK(s.output.to_vector<double>() == narrow(full_self.output, 1, p, 1).to_vector<double>());
            // the weights over the keys so far; the causal mask zeroes the rest
            CHECK(s.weights.to_vector<double>() ==
                  narrow(narrow(full_self.weights, 2, p, 1), 3, 0, p + 1).to_vector<double>());
            const auto c =
                cross.forward_cross_cached(row, memory, cross_cache, mask, {.average_attn_weights = false});
            CHECK(c.output.to_vector<double>() == narrow(full_cross.output, 1, p, 1).to_vector<double>());
            CHECK(c.weights.to_vector<double>() == narrow(full_cross.weights, 2, p, 1).to_vector<double>());
        }
        CHECK(self_cache.key.shape() == Shape{2, 6, 8});
        CHECK(cross_cache.key.shape() == Shape{2, 4, 8});
        CHECK(cross_cache.steps == 6);
    }
}

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
        check_searches([&](const nn::DecodeOptions& o) { return model->beam_search(src, o); },
                       [&](const nn::DecodeOptions& o) { return model->greedy_decode(src, o); }, 0.7);
    }
}

TEST_CASE(
    "a wider Seq2SeqTransformer decodes bit for bit with the cache: widths past the GEMM kernels' column "
    "blocks") {
    // d_model 72 (in_proj 216), feed-forward 130 and 70 target ids: column counts that leave a
    // few columns after the kernels' blocks of four vectors
    Generator gen(51);
    nn::Seq2SeqTransformer model({.vocab_size = 70,
                                  .pad_id = 0,
                                  .max_len = 32,
                                  .transformer = {.d_model = 72,
                                                  .nhead = 4,
                                                  .num_encoder_layers = 1,
                                                  .num_decoder_layers = 2,
                                                  .dim_feedforward = 130,
                                                  .dropout = 0.0}},
                                 gen);
    randomize_parameters(model, 52, 0.3);
    model.eval();
    const Tensor src = randint(3, 70, {3, 9}, gen);
    check_searches([&](const nn::DecodeOptions& o) { return model.beam_search(src, o); },
                   [&](const nn::DecodeOptions& o) { return model.greedy_decode(src, o); }, 0.7);
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
    local.scoring.local = nn::LocalMode::Monotonic;
    local.scoring.window = 2;
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
    SUBCASE("a cache reused with another memory; the failed step leaves the cache as it was") {
        nn::TransformerDecoderCache cache;
        model->decode_cached(bos, memory, cache, mask);
        const Tensor other = model->encode(src);
        const Tensor token = index_tensor({2, 3, 4}, {3});
        CHECK_THROWS_WITH_AS(
            model->decode_cached(token, other, cache, mask),
            doctest::Contains("memory [3, 5, 8] is not the tensor the cache was started with"), ValueError);
        CHECK(cache.steps == 1);
        // The retry with the right memory is the uncached decode's step, bit for bit.
        const Tensor retried = model->decode_cached(token, memory, cache, mask);
        const Tensor prefixes = concat({reshape(bos, {3, 1}), reshape(token, {3, 1})}, 1);
        const Tensor full = model->decode(prefixes, memory, mask);
        CHECK(retried.to_vector<double>() == reshape(narrow(full, 1, 1, 1), {3, 7}).to_vector<double>());
    }
    SUBCASE("a memory that is gone is never mistaken for a new one at the same address") {
        nn::TransformerDecoderCache cache;
        model->decode_cached(bos, model->encode(src), cache, mask);  // a temporary memory
        for (int i = 0; i < 20; ++i) {
            const Tensor fresh = model->encode(src);
            CHECK_THROWS_AS(model->decode_cached(bos, fresh, cache, mask), ValueError);
        }
    }
    SUBCASE("a model converted to another dtype after the cache was started") {
        const auto converted = make_model(v);
        nn::TransformerDecoderCache cache;
        converted->decode_cached(bos, memory, cache, mask);
        converted->to(DType::Float32);
        CHECK_THROWS_WITH_AS(
            converted->decode_cached(bos, to_dtype(memory, DType::Float32), cache, mask),
            doctest::Contains("the cache holds float64 keys but the module now computes in float32"),
            DTypeError);
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
    SUBCASE("a layer's own cached call mixed into the decoder's cache") {
        const nn::TransformerDecoder& decoder = model->transformer().decoder();
        nn::TransformerDecoderCache cache;
        const Tensor one = zeros({3, 1, 8}, {.dtype = DType::Float64});
        decoder.forward_cached(one, memory, cache);
        decoder.layer(1).forward_cached(one, memory, cache.layers[1]);
        CHECK_THROWS_WITH_AS(decoder.forward_cached(one, memory, cache),
                             doctest::Contains("layer 1 of the cache has run 2 positions but the cache 1"),
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

namespace {

// Lowers eos's (id 2) output bias: random decoders that end every output within a step or two
// would leave little to compare.
void delay_eos(nn::Module& decoder) {
    for (auto& [name, p] : decoder.named_parameters())
        if (name == "out.bias") p.data<float>()[2] -= 3.0f;
}

// Three sources of 5 positions, the last two padded at the end.
Tensor padding_mask() {
    return testing::bool_mask({3, 5}, [](std::int64_t b, std::int64_t s) { return s >= 5 - b; });
}

}  // namespace

TEST_CASE("BahdanauDecoder's incremental state decodes as its stateless step, in every option") {
    for (const DType dtype : {DType::Float32, DType::Float64})
        for (const bool deep_output : {true, false})
            for (const bool score_bias : {false, true})
                for (const bool init : {false, true}) {
                    INFO(fmt::format("{} deep_output {} score_bias {} initial state {}", dtype, deep_output,
                                     score_bias, init));
                    Generator gen(21);
                    nn::BahdanauDecoder d({.vocab_size = 7,
                                           .embedding_dim = 5,
                                           .hidden_size = 6,
                                           .score_bias = score_bias,
                                           .deep_output = deep_output,
                                           .dtype = dtype},
                                          gen);
                    randomize_parameters(d, 22, 0.9);
                    const Tensor memory = to_dtype(randn({3, 5, 6}, gen), dtype);
                    nn::BahdanauDecoder::InitialState s0;
                    if (init)  // s_0 = tanh(h_1), computed from the rows decoding passes
                        s0 = [](const Tensor& m, const Tensor&) { return tanh(select(m, 1, 0)); };
                    check_searches(d.decode_model(s0), memory, padding_mask());
                }
}

TEST_CASE(
    "LuongDecoder's incremental state decodes as its stateless step: every cell, score, attention, feeding") {
    for (const nn::LuongCell cell : {nn::LuongCell::LSTM, nn::LuongCell::GRU})
        for (const nn::Score score :
             {nn::Score::Dot, nn::Score::ScaledDot, nn::Score::Bilinear, nn::Score::Additive})
            for (const nn::LocalMode local :
                 {nn::LocalMode::None, nn::LocalMode::Monotonic, nn::LocalMode::Predictive})
                for (const bool feeding : {true, false}) {
                    INFO(fmt::format("{} {} {} input_feeding {}", to_string(cell), to_string(score),
                                     to_string(local), feeding));
                    Generator gen(31);
                    nn::LuongDecoder d({.vocab_size = 7,
                                        .embedding_dim = 5,
                                        .hidden_size = 6,
                                        .num_layers = 2,
                                        .cell = cell,
                                        .scoring = {.score = score, .local = local, .window = 1},
                                        .input_feeding = feeding,
                                        .dtype = DType::Float32},
                                       gen);
                    randomize_parameters(d, 32, 0.9);
                    delay_eos(d);
                    const Tensor memory = randn({3, 5, 6}, gen);
                    // a learned-looking initial state: h from the first source position in both layers
                    const nn::LuongDecoder::InitialState init = [](const Tensor& m, const Tensor&) {
                        const Tensor h = tanh(select(m, 1, 0));
                        return nn::LuongDecoderState{.h = stack({h, h}, 0), .c = {}};
                    };
                    check_searches(d.decode_model(init), memory, padding_mask());
                    check_searches(d.decode_model(), memory, Tensor());
                }
}

TEST_CASE("a recurrent decoder's incremental state refuses another batch size and bad row indices") {
    Generator gen(41);
    nn::BahdanauDecoder bahdanau({.vocab_size = 7, .embedding_dim = 5, .hidden_size = 6}, gen);
    nn::LuongDecoder luong({.vocab_size = 7, .embedding_dim = 5, .hidden_size = 6}, gen);
    const Tensor memory = randn({3, 5, 6}, gen);
    for (const nn::IncrementalStart& start : {bahdanau.incremental_start(), luong.incremental_start()}) {
        const std::unique_ptr<nn::IncrementalState> state = start(memory, padding_mask());
        CHECK(state->step(index_tensor({1, 1, 1}, {3})).shape() == Shape{3, 7});
        CHECK_THROWS_WITH_AS(state->step(index_tensor({1, 1}, {2})),
                             doctest::Contains("incremental step: tokens must be [N] = [3]"), ShapeError);
        CHECK_THROWS_WITH_AS(state->step(index_tensor({1, 9, 1}, {3})),
                             doctest::Contains("tokens[1] = 9 is outside the vocabulary [0, 7)"), IndexError);
        CHECK_THROWS_WITH_AS(state->reorder(index_tensor({0, 3}, {2})),
                             doctest::Contains("reorder: row index 3 at 1 is outside the state's 3 rows"),
                             IndexError);
        state->reorder(index_tensor({2, 2}, {2}));  // two prefixes continue the third
        CHECK(state->step(index_tensor({4, 5}, {2})).shape() == Shape{2, 7});
    }
    CHECK_THROWS_WITH_AS(bahdanau.incremental_start()(randn({3, 5, 4}, gen), Tensor()),
                         doctest::Contains("BahdanauDecoder: memory must be [B, S, memory_dim]"), ShapeError);
}
