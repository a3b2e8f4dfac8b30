// BahdanauDecoder and LuongDecoder: PyTorch parity, float64 gradcheck in every option, masks,
// recording, greedy / beam search, learning to reverse, bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>

using namespace attograd;
using testing::rand64;

namespace {

constexpr auto F64 = DType::Float64;

nn::BahdanauDecoderOptions bahdanau_options(const nlohmann::json& o) {
    return {.vocab_size = o.at("vocab"),
            .embedding_dim = o.at("embedding"),
            .hidden_size = o.at("hidden"),
            .memory_dim = o.at("memory_dim"),
            .attention_dim = o.at("attention_dim"),
            .score_bias = o.at("score_bias"),
            .deep_output = o.at("deep_output"),
            .dtype = F64};
}

nn::LuongDecoderOptions luong_options(const nlohmann::json& o) {
    const std::string score = o.at("score");
    return {.vocab_size = o.at("vocab"),
            .embedding_dim = o.at("embedding"),
            .hidden_size = o.at("hidden"),
            .num_layers = o.at("layers"),
            .cell = nn::parse_luong_cell(o.at("cell").get<std::string>()),
            .memory_dim = o.at("memory_dim"),
            .scoring = {.score = score == "general"  ? nn::Score::Bilinear
                                 : score == "concat" ? nn::Score::Additive
                                                     : nn::Score::Dot,
                        .local = nn::parse_local_mode(o.at("local").get<std::string>()),
                        .window = o.at("window")},
            .attention_dim = o.at("attention_dim"),
            .input_feeding = o.at("input_feeding"),
            .dtype = F64};
}

Tensor fixture_bool(const nlohmann::json& j) { return gt(testing::fixture_tensor(j), 0.5); }

void check_close(const Tensor& a, const nlohmann::json& expected, const std::string& what) {
    INFO(what);
    CHECK(testing::max_abs_diff(a, testing::fixture_tensor(expected)) < 1e-10);
}

// True when every weight of a padded position is exactly 0 in maps [N, T, S] with mask [N, S].
bool padded_weights_zero(const Tensor& maps, const Tensor& mask) {
    const auto w = maps.to_vector<double>();
    const std::int64_t n = maps.size(0), t = maps.size(1), s = maps.size(2);
    const bool* m = mask.data<bool>();
    for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t i = 0; i < t; ++i)
            for (std::int64_t j = 0; j < s; ++j)
                if (m[b * s + j] && w[static_cast<std::size_t>((b * t + i) * s + j)] != 0.0) return false;
    return true;
}

Tensor tokens(std::int64_t b, std::int64_t t, std::int64_t vocab, std::uint64_t seed) {
    Generator gen(seed);
    return randint(0, vocab, {b, t}, gen);
}

}  // namespace

TEST_CASE(
    "the decoders match PyTorch references: the seq2seq tutorial's AttnDecoderRNN, the papers' equations") {
    const auto fixture = testing::load_fixture("attention_decoders");
    for (const auto& c : fixture.at("cases")) {
        const std::string name = c.at("name");
        INFO(name);
        const Tensor tgt = testing::fixture_tensor(c.at("tgt_in"), DType::Int64);
        Tensor memory = testing::fixture_tensor(c.at("memory")).requires_grad_();
        const Tensor mask = c.contains("mask") ? fixture_bool(c.at("mask")) : Tensor();
        std::shared_ptr<nn::Module> model;
        std::function<Tensor()> run;
        std::map<std::string, Tensor> leaves;
        leaves["memory"] = memory;
        if (c.at("decoder") == "bahdanau") {
            auto d = std::make_shared<nn::BahdanauDecoder>(bahdanau_options(c.at("options")));
            Tensor s0 = testing::fixture_tensor(c.at("initial_state")).requires_grad_();
            leaves["initial_state"] = s0;
            run = [d, tgt, memory, mask, s0] { return d->forward(tgt, memory, mask, s0); };
            model = d;
        } else {
            auto d = std::make_shared<nn::LuongDecoder>(luong_options(c.at("options")));
            Tensor h0 = testing::fixture_tensor(c.at("h0")).requires_grad_();
            Tensor c0 = c.contains("c0") ? testing::fixture_tensor(c.at("c0")).requires_grad_() : Tensor();
            leaves["h0"] = h0;
            if (c0.defined()) leaves["c0"] = c0;
            run = [d, tgt, memory, mask, h0, c0] {
                return d->forward(tgt, memory, mask, {.h = h0, .c = c0});
            };
            model = d;
        }
        nn::StateDict state;
        for (const auto& [n, value] : c.at("params").items()) state[n] = testing::fixture_tensor(value);
        model->load_state_dict(state);  // strict: the names are the documented keys
        nn::AttentionRecorder recorder(*model);
        const Tensor logits = run();
        check_close(logits, c.at("logits"), "logits");
        REQUIRE(recorder.records().size() == 1);
        CHECK(recorder.records()[0].name == "attention");
        check_close(recorder.records()[0].weights, c.at("attention"), "attention");
        sum(logits * testing::fixture_tensor(c.at("R"))).backward();
        for (const auto& [n, t] : leaves) check_close(t.grad(), c.at("grad_" + n), n);
        for (const auto& [n, p] : model->named_parameters())
            check_close(p.grad(), c.at("grad_params").at(n), n);
    }
}

TEST_CASE(
    "BahdanauDecoder passes float64 gradcheck in every option, with a padding mask and an initial state") {
    const Tensor tgt = tokens(2, 3, 5, 1);
    const Tensor memory = rand64({2, 4, 3}, 2), s0 = rand64({2, 4}, 3);
    const Tensor mask =
        testing::bool_mask({2, 4}, [](std::int64_t b, std::int64_t s) { return b == 1 && s == 3; });
    for (const bool score_bias : {false, true})
        for (const bool deep : {false, true}) {
            INFO("score_bias " << score_bias << " deep_output " << deep);
            nn::BahdanauDecoder d({.vocab_size = 5,
                                   .embedding_dim = 2,
                                   .hidden_size = 4,
                                   .memory_dim = 3,
                                   .attention_dim = 3,
                                   .score_bias = score_bias,
                                   .deep_output = deep,
                                   .dtype = F64});
            const auto fn = [&](const std::vector<Tensor>& in) { return d.forward(tgt, in[0], mask, in[1]); };
            const auto inputs = testing::with_parameters(d, {memory, s0});
            CHECK_GRADCHECK(fn, inputs);
        }
}

TEST_CASE(
    "LuongDecoder passes float64 gradcheck for every combination of cell, score, attention and input "
    "feeding") {
    const Tensor tgt = tokens(2, 3, 4, 4);
    const Tensor mask =
        testing::bool_mask({2, 5}, [](std::int64_t b, std::int64_t s) { return b == 0 && s >= 3; });
    struct Case {
        nn::LuongCell cell;
        nn::Score score;
        nn::LocalMode local;
        std::int64_t layers;
        bool feeding;
    };
    using nn::LocalMode, nn::LuongCell, nn::Score;
    std::vector<Case> cases;  // every combination; one or two layers in turn per pair
    for (const LuongCell cell : {LuongCell::LSTM, LuongCell::GRU})
        for (const Score score : {Score::Dot, Score::ScaledDot, Score::Bilinear, Score::Additive})
            for (const LocalMode local : {LocalMode::None, LocalMode::Monotonic, LocalMode::Predictive})
                for (const bool feeding : {true, false})
                    cases.push_back(
                        {cell, score, local, 1 + static_cast<std::int64_t>(cases.size() / 2 % 2), feeding});
    for (const Case& k : cases) {
        INFO(to_string(k.cell) << " " << to_string(k.score) << " " << to_string(k.local) << " layers "
                               << k.layers << " feeding " << k.feeding);
        const bool dot = k.score == Score::Dot || k.score == Score::ScaledDot;
        const std::int64_t A = dot ? 3 : 2;
        nn::LuongDecoder d({.vocab_size = 4,
                            .embedding_dim = 2,
                            .hidden_size = 3,
                            .num_layers = k.layers,
                            .cell = k.cell,
                            .memory_dim = A,
                            .scoring = {.score = k.score, .local = k.local, .window = 1},
                            .attention_dim = 2,
                            .input_feeding = k.feeding,
                            .dtype = F64});
        const Tensor memory = rand64({2, 5, A}, 5), h0 = rand64({k.layers, 2, 3}, 6),
                     c0 = rand64({k.layers, 2, 3}, 7);
        std::vector<Tensor> inputs{memory, h0};
        if (k.cell == LuongCell::LSTM) inputs.push_back(c0);
        const auto fn = [&](const std::vector<Tensor>& in) {
            return d.forward(tgt, in[0], mask,
                             {.h = in[1], .c = k.cell == LuongCell::LSTM ? in[2] : Tensor()});
        };
        const auto all = testing::with_parameters(d, inputs);
        CHECK_GRADCHECK(fn, all);
    }
}

TEST_CASE("padded source positions get weight exactly 0, and one forward records one [B, T, S] map") {
    const Tensor tgt = tokens(2, 4, 6, 8);
    const Tensor mask =
        testing::bool_mask({2, 5}, [](std::int64_t b, std::int64_t s) { return s >= 5 - 2 * b; });
    nn::BahdanauDecoder bahdanau({.vocab_size = 6, .embedding_dim = 3, .hidden_size = 4, .memory_dim = 3});
    Generator gen(9);
    const Tensor memory = randn({2, 5, 3}, gen);
    {
        nn::AttentionRecorder recorder(bahdanau);
        CHECK(bahdanau.forward(tgt, memory, mask).shape() == Shape{2, 4, 6});
        REQUIRE(recorder.records().size() == 1);
        CHECK(recorder.records()[0].weights.shape() == Shape{2, 4, 5});
        CHECK(padded_weights_zero(recorder.records()[0].weights, mask));
        // rows sum to 1
        for (double row : sum(recorder.records()[0].weights, {2}).to_vector<double>())
            CHECK(row == doctest::Approx(1.0));
    }
    for (const nn::LocalMode local :
         {nn::LocalMode::None, nn::LocalMode::Monotonic, nn::LocalMode::Predictive}) {
        INFO(to_string(local));
        nn::LuongDecoder luong({.vocab_size = 6,
                                .embedding_dim = 3,
                                .hidden_size = 3,
                                .num_layers = 2,
                                .scoring = {.score = nn::Score::Dot, .local = local, .window = 1}});
        nn::AttentionRecorder recorder(luong);
        CHECK(luong.forward(tgt, memory, mask).shape() == Shape{2, 4, 6});
        REQUIRE(recorder.records().size() == 1);
        const Tensor w = recorder.records()[0].weights;
        CHECK(w.shape() == Shape{2, 4, 5});
        CHECK(padded_weights_zero(w, mask));
        if (local == nn::LocalMode::Monotonic) {  // p_t = min(t, S - 1), D = 1: only |s - t| <= 1 is nonzero
            const auto v = w.to_vector<double>();
            for (std::int64_t t = 0; t < 4; ++t)
                for (std::int64_t s = 0; s < 5; ++s)
                    if (std::abs(s - t) > 1) CHECK(v[static_cast<std::size_t>(t * 5 + s)] == 0.0);
        }
    }
}

TEST_CASE(
    "greedy_decode and beam_search run on both decoders; the recorder gets one [1, T, S] map per source") {
    Generator gen(10);
    const Tensor memory = randn({2, 4, 4}, gen);
    const Tensor mask =
        testing::bool_mask({2, 4}, [](std::int64_t b, std::int64_t s) { return b == 1 && s == 3; });
    nn::BahdanauDecoder bahdanau({.vocab_size = 6, .embedding_dim = 3, .hidden_size = 5, .memory_dim = 4},
                                 gen);
    nn::LuongDecoder luong(
        {.vocab_size = 6,
         .embedding_dim = 3,
         .hidden_size = 4,
         .num_layers = 2,
         .scoring = {.score = nn::Score::Bilinear, .local = nn::LocalMode::Predictive, .window = 1}},
        gen);
    const std::vector<std::pair<nn::Module*, nn::DecodeStep>> models{
        // s_0 from the rows decoding gathers: the mean annotation, padded to n = 5
        {&bahdanau, bahdanau.decode_step([](const Tensor& m, const Tensor&) {
             return concat({mean(m, {1}), zeros({m.size(0), 1})}, 1);
         })},
        {&luong, luong.decode_step()}};
    const nn::DecodeOptions options{.bos_id = 0, .eos_id = 1, .max_length = 5, .beam_size = 3};
    for (const auto& [model, step] : models) {
        INFO(model->type_name());
        model->eval();
        for (const bool beam : {false, true}) {
            INFO("beam " << beam);
            nn::AttentionRecorder recorder(*model);
            std::vector<nn::Hypothesis> best;
            if (beam) {
                for (const auto& list : nn::beam_search(memory, mask, step, options))
                    best.push_back(list.at(0));
            } else {
                best = nn::greedy_decode(memory, mask, step, options);
            }
            REQUIRE(best.size() == 2);
            REQUIRE(recorder.records().size() == 2);
            for (std::int64_t b = 0; b < 2; ++b) {
                const auto& r = recorder.records()[static_cast<std::size_t>(b)];
                CHECK(r.name == "attention");
                CHECK(r.weights.shape() == Shape{1, best[static_cast<std::size_t>(b)].length(), 4});
                CHECK(padded_weights_zero(r.weights, narrow(mask, 0, b, 1)));
                // inspect/ draws it: one map, a row per output token, a column per source position
                const auto len_rows = best[static_cast<std::size_t>(b)].length();
                const auto maps = inspect::maps_from_weights(
                    r.name, 0, r.weights, 0,
                    {std::vector<std::string>(static_cast<std::size_t>(len_rows), "y"),
                     std::vector<std::string>(4, "x")});
                REQUIRE(maps.size() == 1);
                CHECK(maps[0].rows() == len_rows);
                CHECK(maps[0].cols() == 4);
                // The search's log-probability is the teacher-forced one of its output.
                std::vector<std::int64_t> prefix{0};
                const auto& hyp = best[static_cast<std::size_t>(b)];
                const std::int64_t len = hyp.length();
                const auto ids = hyp.output_ids(options.eos_id);
                prefix.insert(prefix.end(), ids.begin(), ids.end() - 1);
                const Tensor logits =
                    step(index_tensor(prefix, {1, len}), narrow(memory, 0, b, 1), narrow(mask, 0, b, 1));
                const auto lp = log_softmax(logits, 2).to_vector<double>();
                double total = 0.0;
                for (std::int64_t t = 0; t < len; ++t)
                    total += lp[static_cast<std::size_t>(t * 6 + ids[static_cast<std::size_t>(t)])];
                CHECK(hyp.log_prob == doctest::Approx(total).epsilon(1e-5));
            }
        }
    }
}

namespace {

// Teacher-forced token accuracy on reversing S = 5 tokens from [2, V) (0 = bos) after `steps` Adam
// steps. The toy encoder is token + position embeddings [B, S, 16], trained with the decoder.
double reverse_accuracy(nn::Module& decoder,
                        const std::function<Tensor(const Tensor&, const Tensor&)>& forward, int steps,
                        Generator& gen) {
    const std::int64_t V = 8, S = 5, A = 16;
    nn::Embedding tok({.num_embeddings = V, .embedding_dim = A}, gen),
        pos({.num_embeddings = S, .embedding_dim = A}, gen);
    std::vector<Tensor> params = decoder.parameters();
    for (const Tensor& p : tok.parameters()) params.push_back(p);
    for (const Tensor& p : pos.parameters()) params.push_back(p);
    optim::Adam adam(params, {.lr = 1e-2});
    const Tensor reversed = index_tensor({4, 3, 2, 1, 0}, {S});
    struct Batch {
        Tensor memory, tgt_in, tgt_out;
    };
    auto batch = [&](std::int64_t b) {
        const Tensor src = randint(2, V, {b, S}, gen);
        const Tensor out = index_select(src, 1, reversed);
        const Tensor in = concat({zeros({b, 1}, {.dtype = DType::Int64}), narrow(out, 1, 0, S - 1)}, 1);
        return Batch{tok.forward(src) + pos.forward(arange(S)), in, out};
    };
    for (int step = 0; step < steps; ++step) {
        const Batch bt = batch(32);
        const Tensor loss =
            cross_entropy(reshape(forward(bt.tgt_in, bt.memory), {-1, V}), reshape(bt.tgt_out, {-1}));
        adam.zero_grad();
        loss.backward();
        adam.step();
    }
    const NoGradGuard no_grad;
    const Batch held_out = batch(256);
    const Tensor predicted = argmax(forward(held_out.tgt_in, held_out.memory), 2);
    return mean(to_dtype(eq(predicted, held_out.tgt_out), DType::Float64)).item();
}

}  // namespace

TEST_CASE("BahdanauDecoder learns to reverse 5 tokens: >= 95% held-out token accuracy in 300 steps") {
    Generator gen(21);
    nn::BahdanauDecoder d({.vocab_size = 8, .embedding_dim = 16, .hidden_size = 32, .memory_dim = 16}, gen);
    const double accuracy = reverse_accuracy(
        d, [&](const Tensor& in, const Tensor& memory) { return d.forward(in, memory); }, 300, gen);
    MESSAGE("BahdanauDecoder reverse accuracy " << accuracy);
    CHECK(accuracy >= 0.95);
}

TEST_CASE(
    "LuongDecoder (LSTM, general score, input feeding) learns to reverse 5 tokens: >= 95% in 300 steps") {
    Generator gen(22);
    nn::LuongDecoder d({.vocab_size = 8, .embedding_dim = 16, .hidden_size = 32, .memory_dim = 16}, gen);
    const double accuracy = reverse_accuracy(
        d, [&](const Tensor& in, const Tensor& memory) { return d.forward(in, memory); }, 300, gen);
    MESSAGE("LuongDecoder reverse accuracy " << accuracy);
    CHECK(accuracy >= 0.95);
}

TEST_CASE("LuongDecoder with local-p attention (D = 1) learns to reverse 5 tokens: >= 95% in 300 steps") {
    Generator gen(23);
    nn::LuongDecoder d(
        {.vocab_size = 8,
         .embedding_dim = 16,
         .hidden_size = 32,
         .memory_dim = 16,
         .scoring = {.score = nn::Score::Bilinear, .local = nn::LocalMode::Predictive, .window = 1}},
        gen);
    const double accuracy = reverse_accuracy(
        d, [&](const Tensor& in, const Tensor& memory) { return d.forward(in, memory); }, 300, gen);
    MESSAGE("LuongDecoder local-p reverse accuracy " << accuracy);
    CHECK(accuracy >= 0.95);
}

TEST_CASE("the decoders reject bad options, naming the module and the option") {
    CHECK_THROWS_WITH_AS(
        nn::BahdanauDecoder({.vocab_size = 0, .embedding_dim = 2, .hidden_size = 3}),
        doctest::Contains("BahdanauDecoder: vocab_size, embedding_dim and hidden_size must be >= 1, "
                          "got vocab_size=0"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        nn::BahdanauDecoder({.vocab_size = 4, .embedding_dim = 2, .hidden_size = 3, .memory_dim = -1}),
        doctest::Contains("BahdanauDecoder: memory_dim and attention_dim must be >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        nn::LuongDecoder({.vocab_size = 4, .embedding_dim = 2, .hidden_size = 3, .num_layers = 0}),
        doctest::Contains("LuongDecoder: vocab_size, embedding_dim, hidden_size and num_layers must be "
                          ">= 1, got vocab_size=4 embedding_dim=2 hidden_size=3 num_layers=0"),
        ValueError);
    CHECK_THROWS_WITH_AS(nn::LuongDecoder({.vocab_size = 4,
                                           .embedding_dim = 2,
                                           .hidden_size = 3,
                                           .scoring = {.score = nn::Score::Bilinear, .window = -1}}),
                         doctest::Contains("LuongDecoder: window D must be >= 0, got -1"), ValueError);
    CHECK_THROWS_WITH_AS(nn::LuongDecoder({.vocab_size = 4,
                                           .embedding_dim = 2,
                                           .hidden_size = 3,
                                           .scoring = {.positional = nn::Positional::ALiBi}}),
                         doctest::Contains("LuongDecoder: positional alibi is not supported"), ValueError);
    CHECK_THROWS_WITH_AS(
        nn::LuongDecoder(
            {.vocab_size = 4,
             .embedding_dim = 2,
             .hidden_size = 3,
             .scoring = {.score = nn::Score::Bilinear, .local = nn::LocalMode::Predictive, .window = 0}}),
        doctest::Contains("LuongDecoder: local-p needs window D >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(nn::LuongDecoder({.vocab_size = 4,
                                           .embedding_dim = 2,
                                           .hidden_size = 3,
                                           .memory_dim = 5,
                                           .scoring = {.score = nn::Score::Dot}}),
                         doctest::Contains("LuongDecoder: the dot score needs memory_dim == hidden_size, got "
                                           "memory_dim=5 hidden_size=3"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(nn::parse_luong_cell("rnn"),
                         doctest::Contains("LuongDecoder: unknown cell 'rnn' (choose lstm or gru)"),
                         ValueError);
}

TEST_CASE("the decoders reject bad inputs, naming the module, the argument and the shapes") {
    nn::BahdanauDecoder b(
        {.vocab_size = 5, .embedding_dim = 2, .hidden_size = 4, .memory_dim = 3, .dtype = F64});
    const Tensor tgt = tokens(2, 3, 5, 1), memory = rand64({2, 4, 3}, 2);
    CHECK_THROWS_WITH_AS(
        b.forward(tgt, rand64({2, 4, 5}, 3)),
        doctest::Contains("BahdanauDecoder: memory must be [B, S, memory_dim] = [2, S, 3] with S >= 1 "
                          "(tgt_in [2, 3]), got [2, 4, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(b.forward(tgt, rand64({3, 4, 3}, 3)),
                         doctest::Contains("BahdanauDecoder: memory must be [B, S, memory_dim] = [2, S, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(b.forward(tgt, memory, {}, rand64({2, 5}, 4)),
                         doctest::Contains("BahdanauDecoder: initial_state must be [2, 4], got [2, 5]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        b.forward(index_tensor({0, 1, 2, 3, 4, 9}, {2, 3}), memory),
        doctest::Contains("BahdanauDecoder: tgt_in[1, 2] = 9 is outside the vocabulary [0, 5)"), IndexError);
    CHECK_THROWS_WITH_AS(
        b.forward(index_tensor({0, -1}, {1, 2}), rand64({1, 4, 3}, 3)),
        doctest::Contains("BahdanauDecoder: tgt_in[0, 1] = -1 is outside the vocabulary [0, 5)"), IndexError);
    CHECK_THROWS_WITH_AS(b.forward(to_dtype(tgt, F64), memory),
                         doctest::Contains("BahdanauDecoder: tgt_in must hold int64 token ids, got float64"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(b.forward(index_tensor({0, 1}, {2}), memory),
                         doctest::Contains("BahdanauDecoder: tgt_in must be [B, T] with T >= 1, got [2]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(b.forward(tgt, to_dtype(memory, DType::Float32)),
                         doctest::Contains("BahdanauDecoder: memory is float32"), DTypeError);
    CHECK_THROWS_WITH_AS(
        b.forward(tgt, memory, zeros({2, 3}, {.dtype = DType::Bool})),
        doctest::Contains("BahdanauDecoder: memory_key_padding_mask must be [B, S] = [2, 4], got [2, 3]"),
        ShapeError);

    nn::LuongDecoder l({.vocab_size = 5,
                        .embedding_dim = 2,
                        .hidden_size = 3,
                        .num_layers = 2,
                        .cell = nn::LuongCell::GRU,
                        .memory_dim = 3,
                        .dtype = F64});
    CHECK_THROWS_WITH_AS(l.forward(tgt, memory, {}, {.h = rand64({1, 2, 3}, 5)}),
                         doctest::Contains("LuongDecoder: initial_state.h must be [2, 2, 3], got [1, 2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(l.forward(tgt, memory, {}, {.c = rand64({2, 2, 3}, 5)}),
                         doctest::Contains("LuongDecoder: initial_state.c is given but the cells are GRUs"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        l.forward(tgt, memory, zeros({2, 4, 1}, {.dtype = DType::Bool})),
        doctest::Contains("LuongDecoder: memory_key_padding_mask must be [B, S] = [2, 4], got [2, 4, 1]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        l.forward(tgt, rand64({2, 0, 3}, 6)),
        doctest::Contains("LuongDecoder: memory must be [B, S, memory_dim] = [2, S, 3] with S >= 1"),
        ShapeError);
}
