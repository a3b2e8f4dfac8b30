// nn::MultiHeadAttention: PyTorch parity (outputs, weights, every gradient; f64 and f32),
// float64 gradcheck with every mask kind and option, fully masked rows, the checkpoint that
// PyTorch loads, initialisation, recording and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

using namespace attograd;
using testing::bool_mask;
using testing::fixture_mask;
using testing::fixture_tensor;
using testing::max_abs_diff;
using testing::rand64;
using testing::scaled_diff;
using testing::with_parameters;
using Inputs = std::vector<Tensor>;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

nn::MultiHeadAttentionOptions options_of(const nlohmann::json& o, DType dtype) {
    return {.embed_dim = o.at("embed_dim"),
            .num_heads = o.at("num_heads"),
            .bias = o.at("bias"),
            .add_bias_kv = o.at("add_bias_kv"),
            .add_zero_attn = o.at("add_zero_attn"),
            .kdim = o.at("kdim"),
            .vdim = o.at("vdim"),
            .dtype = dtype};
}

// A module of `options` in float64 with random (not initial) parameters, for gradcheck.
std::shared_ptr<nn::MultiHeadAttention> random_module(nn::MultiHeadAttentionOptions options, Generator& gen) {
    options.dtype = DType::Float64;
    auto mha = std::make_shared<nn::MultiHeadAttention>(options, gen);
    nn::StateDict state;
    std::uint64_t seed = 100;
    for (const auto& [name, p] : mha->named_parameters())
        state[name] = rand64(p.shape(), seed++).detach() * 0.5;
    mha->load_state_dict(state);
    return mha;
}

}  // namespace

TEST_CASE("MultiHeadAttention matches torch.nn.MultiheadAttention: outputs, weights, all gradients") {
    const auto fixture = testing::load_fixture("mha");
    for (const auto& c : fixture.at("cases")) {
        const DType dtype = c.at("dtype") == "float64" ? DType::Float64 : DType::Float32;
        const double tol = dtype == DType::Float64 ? 1e-10 : 1e-5;
        INFO("case: " << c.at("name").get<std::string>() << " (" << c.at("dtype").get<std::string>() << ")");
        nn::MultiHeadAttention mha(options_of(c.at("options"), dtype));
        nn::StateDict state;
        for (const auto& [name, t] : c.at("params").items()) state[name] = fixture_tensor(t, dtype);
        mha.load_state_dict(state);  // strict: the parameter names are PyTorch's

        Tensor query = fixture_tensor(c.at("query"), dtype).requires_grad_();
        const bool self = c.at("self_attention");
        Tensor key = self ? query : fixture_tensor(c.at("key"), dtype).requires_grad_();
        Tensor value = self ? query : fixture_tensor(c.at("value"), dtype).requires_grad_();
        nn::AttentionArgs args{.need_weights = c.at("need_weights"),
                               .average_attn_weights = c.at("average_attn_weights")};
        if (c.contains("attn_mask")) args.attn_mask = fixture_mask(c.at("attn_mask"), dtype);
        if (c.contains("key_padding_mask"))
            args.key_padding_mask = fixture_mask(c.at("key_padding_mask"), dtype);
        const auto out = mha.forward(query, key, value, args);

        CHECK(scaled_diff(out.output, fixture_tensor(c.at("output"))) < tol);
        Tensor loss = sum(out.output * fixture_tensor(c.at("r_output"), dtype));
        if (args.need_weights) {
            CHECK(scaled_diff(out.weights, fixture_tensor(c.at("weights"))) < tol);
            loss = loss + sum(out.weights * fixture_tensor(c.at("r_weights"), dtype));
        } else {
            CHECK_FALSE(out.weights.defined());
        }
        loss.backward();
        CHECK(scaled_diff(query.grad(), fixture_tensor(c.at("grad_query"))) < tol);
        if (!self) {
            CHECK(scaled_diff(key.grad(), fixture_tensor(c.at("grad_key"))) < tol);
            CHECK(scaled_diff(value.grad(), fixture_tensor(c.at("grad_value"))) < tol);
        }
        for (const auto& [name, p] : mha.named_parameters()) {
            INFO("gradient of " << name);
            CHECK(scaled_diff(p.grad(), fixture_tensor(c.at("grads").at(name))) < tol);
        }
    }
}

TEST_CASE("MultiHeadAttention passes float64 gradcheck for inputs and every parameter, every mask kind") {
    Generator gen(1);
    const std::int64_t B = 2, Tq = 3, Tk = 4, E = 4, h = 2;
    const std::vector<std::pair<std::string, nn::AttentionArgs>> mask_kinds = {
        {"none", {}},
        {"bool 2-D", {.attn_mask = bool_mask({Tq, Tk}, [](auto t, auto s) { return s == t + 1; })}},
        {"bool 3-D",
         {.attn_mask = bool_mask({B * h, Tq, Tk}, [](auto r, auto s) { return (r + s) % 3 == 0; }),
          .average_attn_weights = false}},
        {"float", {.attn_mask = rand64({Tq, Tk}, 3).detach()}},
        {"key padding",
         {.key_padding_mask = bool_mask({B, Tk}, [](auto b, auto s) { return s >= Tk - 1 - b; })}},
        {"causal", {.is_causal = true}},
    };
    const std::vector<nn::MultiHeadAttentionOptions> variants = {
        {.embed_dim = E, .num_heads = h},
        {.embed_dim = E, .num_heads = h, .kdim = 3, .vdim = 5},
        {.embed_dim = E, .num_heads = h, .add_bias_kv = true, .add_zero_attn = true, .kdim = 3, .vdim = 5},
        {.embed_dim = E, .num_heads = h, .bias = false, .kdim = 5},
    };
    for (const auto& options : variants) {
        auto mha = random_module(options, gen);
        Tensor query = rand64({B, Tq, E}, 4), key = rand64({B, Tk, mha->options().kdim}, 5),
               value = rand64({B, Tk, mha->options().vdim}, 6);
        for (const auto& [kind, args] : mask_kinds) {
            INFO("mask " << kind << ", kdim " << options.kdim << ", bias_kv " << options.add_bias_kv);
            const Tensor r =
                rand64(args.average_attn_weights ? Shape{B, Tq, Tk + 2} : Shape{B, h, Tq, Tk + 2}, 7);
            auto fn = [&, args = args](const Inputs& in) {
                const auto out = mha->forward(in[0], in[1], in[2], args);
                // the weights enter too (the extra keys of bias_kv / zero_attn are sliced off r)
                const Tensor rw = narrow(r.detach(), -1, 0, out.weights.size(-1));
                return sum(out.output * out.output) + sum(out.weights * rw);
            };
            CHECK_GRADCHECK(fn, with_parameters(*mha, {query, key, value}));
        }
    }
}

TEST_CASE("self-attention gradcheck: the packed path, with dropout (reseeded on every call)") {
    Generator gen(2);
    auto mha = random_module({.embed_dim = 6, .num_heads = 3, .dropout = 0.3}, gen);
    Tensor x = rand64({2, 4, 6}, 8);
    auto fn = [&](const Inputs& in) {
        gen.manual_seed(11);
        return mha->forward(in[0], {.is_causal = true}).output;
    };
    CHECK_GRADCHECK(fn, with_parameters(*mha, {x}));
    mha->eval();
    auto eval_fn = [&](const Inputs& in) { return mha->forward(in[0], {.need_weights = false}).output; };
    CHECK_GRADCHECK(eval_fn, with_parameters(*mha, {x}));
}

TEST_CASE("self-attention's packed path equals the general path") {
    Generator gen(3);
    auto mha = random_module({.embed_dim = 8, .num_heads = 2}, gen);
    const Tensor x = rand64({3, 5, 8}, 9).detach();
    const Tensor copy = clone(x);
    const nn::AttentionArgs args{.key_padding_mask = bool_mask({3, 5}, [](auto b, auto s) { return s < b; }),
                                 .average_attn_weights = false};
    const auto packed = mha->forward(x, args);
    const auto general = mha->forward(x, copy, copy, args);
    CHECK(max_abs_diff(packed.output, general.output) < 1e-13);
    CHECK(max_abs_diff(packed.weights, general.weights) < 1e-13);
    CHECK(packed.weights.shape() == Shape{3, 2, 5, 5});
}

TEST_CASE("local self-attention: the fused packed path equals the fused general and unfused paths") {
    Generator gen(31);
    for (const nn::LocalMode local : {nn::LocalMode::Monotonic, nn::LocalMode::Predictive}) {
        INFO(nn::to_string(local));
        // dropout 1e-300 drops nothing (and scales by exactly 1) but sends training mode down
        // the unfused path: score module, softmax, local_weighted_sum
        auto mha = random_module(
            {.embed_dim = 8, .num_heads = 2, .dropout = 1e-300, .scoring = {.local = local, .window = 2}},
            gen);
        const Tensor x = rand64({3, 7, 8}, 32), copy = clone(x);
        const nn::AttentionArgs args{
            .key_padding_mask = bool_mask({3, 7}, [](auto b, auto s) { return s == 2 * b; }),
            .is_causal = true,
            .average_attn_weights = false};
        mha->eval();
        const auto packed = mha->forward(x, args), general = mha->forward(x, copy, copy, args);
        mha->train();
        const auto unfused = mha->forward(x, args);
        CHECK(max_abs_diff(packed.output, general.output) < 1e-13);
        CHECK(max_abs_diff(packed.weights, general.weights) < 1e-13);
        CHECK(max_abs_diff(packed.output, unfused.output) < 1e-13);
        CHECK(max_abs_diff(packed.weights, unfused.weights) < 1e-13);
        mha->eval();
        auto fn = [&, args = args](const Inputs& in) {
            const auto out = mha->forward(in[0], args);
            return sum(out.output * out.output) + sum(out.weights * out.weights);
        };
        CHECK_GRADCHECK(fn, with_parameters(*mha, {rand64({3, 7, 8}, 33)}));
    }
}

TEST_CASE("each score option passes gradcheck in MultiHeadAttention") {
    Generator gen(4);
    for (const nn::Score score :
         {nn::Score::Dot, nn::Score::ScaledDot, nn::Score::Additive, nn::Score::Bilinear}) {
        INFO("score " << nn::to_string(score));
        auto mha =
            random_module({.embed_dim = 4, .num_heads = 2, .kdim = 3, .scoring = {.score = score}}, gen);
        Tensor q = rand64({2, 3, 4}, 10), k = rand64({2, 4, 3}, 11), v = rand64({2, 4, 4}, 12);
        const nn::AttentionArgs args{
            .key_padding_mask = bool_mask({2, 4}, [](auto b, auto s) { return s == b; }), .is_causal = true};
        auto fn = [&](const Inputs& in) {
            const auto out = mha->forward(in[0], in[1], in[2], args);
            return sum(out.output * out.output) + sum(out.weights * out.weights);
        };
        CHECK_GRADCHECK(fn, with_parameters(*mha, {q, k, v}));
        if (score == nn::Score::Additive || score == nn::Score::Bilinear) {
            CHECK(mha->named_parameters().back().first.starts_with("score."));
        }
    }
}

TEST_CASE("local attention in every head: gradcheck for local-m and local-p with each score and mask") {
    Generator gen(12);
    const std::int64_t B = 2, T = 6, E = 4, h = 2;
    const std::vector<std::pair<std::string, nn::AttentionArgs>> mask_kinds = {
        {"none", {}},
        {"key padding", {.key_padding_mask = bool_mask({B, T}, [](auto b, auto s) { return s == 2 + b; })}},
        {"bool 3-D",
         {.attn_mask = bool_mask({B * h, T, T}, [](auto r, auto s) { return (r + s) % 4 == 1; })}},
        {"float 2-D + causal", {.attn_mask = rand64({T, T}, 13).detach(), .is_causal = true}},
    };
    for (const nn::LocalMode local : {nn::LocalMode::Monotonic, nn::LocalMode::Predictive}) {
        for (const nn::Score score : {nn::Score::ScaledDot, nn::Score::Additive}) {
            auto mha = random_module({.embed_dim = E,
                                      .num_heads = h,
                                      .kdim = 3,
                                      .scoring = {.score = score, .local = local, .window = 1}},
                                     gen);
            Tensor x = rand64({B, T, E}, 14), kv = rand64({B, T, 3}, 15), val = rand64({B, T, E}, 16);
            for (const auto& [kind, args] : mask_kinds) {
                INFO(nn::to_string(local) << ", " << nn::to_string(score) << ", mask " << kind);
                auto fn = [&, args = args](const Inputs& in) {
                    const auto out = mha->forward(in[0], in[1], in[2], args);
                    return sum(out.output * out.output) + sum(out.weights * out.weights);
                };
                CHECK_GRADCHECK(fn, with_parameters(*mha, {x, kv, val}));
            }
        }
    }
}

TEST_CASE("local-m attention with a window covering every key equals global attention") {
    Generator gen(13);
    auto global = random_module({.embed_dim = 8, .num_heads = 2}, gen);
    auto local = random_module(
        {.embed_dim = 8, .num_heads = 2, .scoring = {.local = nn::LocalMode::Monotonic, .window = 5}}, gen);
    local->load_state_dict(global->state_dict());
    const Tensor x = rand64({2, 5, 8}, 17).detach();
    const nn::AttentionArgs args{.key_padding_mask = bool_mask({2, 5}, [](auto b, auto s) { return s == b; }),
                                 .is_causal = true,
                                 .average_attn_weights = false};
    const auto a = global->forward(x, args), b = local->forward(x, args);
    CHECK(max_abs_diff(a.output, b.output) < 1e-13);
    CHECK(max_abs_diff(a.weights, b.weights) < 1e-13);
}

TEST_CASE(
    "local attention gives exactly zero weight outside each window and builds no weights unless asked") {
    Generator gen(14);
    auto mha = random_module(
        {.embed_dim = 4, .num_heads = 2, .scoring = {.local = nn::LocalMode::Monotonic, .window = 1}}, gen);
    const Tensor x = rand64({1, 7, 4}, 18).detach();
    const auto out = mha->forward(x, {.average_attn_weights = false});
    REQUIRE(out.weights.shape() == Shape{1, 2, 7, 7});
    for (std::int64_t hd = 0; hd < 2; ++hd)
        for (std::int64_t t = 0; t < 7; ++t) {
            double total = 0.0;
            for (std::int64_t s = 0; s < 7; ++s) {
                const double w = out.weights.at({0, hd, t, s});
                if (std::abs(s - t) > 1) CHECK(w == 0.0);
                total += w;
            }
            CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
        }
    CHECK_FALSE(mha->forward(x, {.need_weights = false}).weights.defined());
}

TEST_CASE("a fully masked row gives zero weights and output and finite gradients on every path") {
    Generator gen(5);
    const std::vector<nn::MultiHeadAttentionOptions> variants = {
        {.embed_dim = 4, .num_heads = 2},
        {.embed_dim = 4, .num_heads = 2, .scoring = {.score = nn::Score::Additive}},
        {.embed_dim = 4, .num_heads = 2, .scoring = {.local = nn::LocalMode::Monotonic, .window = 1}},
        {.embed_dim = 4,
         .num_heads = 2,
         .scoring = {.score = nn::Score::Bilinear, .local = nn::LocalMode::Predictive, .window = 2}},
    };
    for (const auto& options : variants) {
        for (const bool self : {true, false}) {
            INFO("score " << nn::to_string(options.scoring.score) << ", local "
                          << nn::to_string(options.scoring.local) << ", self " << self);
            auto mha = random_module(options, gen);
            Tensor x = rand64({2, 3, 4}, 13);
            Tensor other = self ? x : rand64({2, 3, 4}, 14);
            // Query 1 of every sequence may see no key; sequence 1 pads key 0.
            const nn::AttentionArgs args{
                .key_padding_mask = bool_mask({2, 3}, [](auto b, auto s) { return b == 1 && s == 0; }),
                .attn_mask = bool_mask({3, 3}, [](auto t, auto) { return t == 1; }),
                .average_attn_weights = false};
            const auto out = mha->forward(x, other, other, args);
            for (std::int64_t b = 0; b < 2; ++b)
                for (std::int64_t hd = 0; hd < 2; ++hd)
                    for (std::int64_t s = 0; s < 3; ++s) CHECK(out.weights.at({b, hd, 1, s}) == 0.0);
            // A zero attention row leaves only out_proj's bias in the output.
            for (std::int64_t c = 0; c < 4; ++c)
                CHECK(out.output.at({0, 1, c}) ==
                      doctest::Approx(mha->out_proj().bias().at({c})).epsilon(1e-14));
            sum(out.output).backward();
            for (const Tensor& t : with_parameters(*mha, {x, other}))
                for (const double g : t.grad().to_vector<double>()) CHECK(std::isfinite(g));
        }
    }
}

TEST_CASE("parameters have PyTorch's names, shapes and initialisation") {
    Generator gen(6);
    nn::MultiHeadAttention packed({.embed_dim = 16, .num_heads = 4, .add_bias_kv = true}, gen);
    std::vector<std::string> names;
    for (const auto& [name, p] : packed.named_parameters()) names.push_back(name);
    CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "bias_k", "bias_v",
                                            "out_proj.weight", "out_proj.bias"});
    CHECK(packed.in_proj_weight().shape() == Shape{48, 16});
    CHECK(packed.bias_k().shape() == Shape{1, 1, 16});
    const double bound = std::sqrt(6.0 / (16 + 48));  // xavier_uniform_ on [3E, E]
    const auto w = packed.in_proj_weight().to_vector<double>();
    double top = 0.0;
    for (const double x : w) top = std::max(top, std::abs(x));
    CHECK(top <= bound);
    CHECK(top > 0.95 * bound);  // 768 uniform draws reach the edge
    for (const double b : packed.in_proj_bias().to_vector<double>()) CHECK(b == 0.0);
    for (const double b : packed.out_proj().bias().to_vector<double>()) CHECK(b == 0.0);
    CHECK(packed.out_proj().weight().shape() == Shape{16, 16});

    nn::MultiHeadAttention separate({.embed_dim = 8, .num_heads = 2, .bias = false, .kdim = 3, .vdim = 5},
                                    gen);
    names.clear();
    for (const auto& [name, p] : separate.named_parameters()) names.push_back(name);
    CHECK(names ==
          std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "out_proj.weight"});
    CHECK(separate.k_proj_weight().shape() == Shape{8, 3});
    CHECK(separate.v_proj_weight().shape() == Shape{8, 5});
    CHECK(fmt::format("{}", separate).starts_with("MultiHeadAttention(embed_dim=8, num_heads=2"));
}

TEST_CASE("the checkpoint attograd writes is the one gen_mha.py loads into PyTorch") {
    // gen_mha.py loads mha_attograd_state.safetensors into torch.nn.MultiheadAttention and checks
    // its output against mha_attograd_io.safetensors. ATTOGRAD_WRITE_FIXTURES=1 rewrites both;
    // otherwise this test checks that the committed files are what attograd produces now.
    const std::filesystem::path dir = ATTOGRAD_FIXTURE_DIR;
    Generator gen(7);
    nn::MultiHeadAttention mha({.embed_dim = 8, .num_heads = 2, .add_bias_kv = true, .kdim = 6, .vdim = 4},
                               gen);
    nn::StateDict state;
    std::uint64_t seed = 200;
    for (const auto& [name, p] : mha.named_parameters())  // random biases, so they matter
        state[name] = to_dtype(rand64(p.shape(), seed++).detach(), DType::Float32) * 0.5;
    mha.load_state_dict(state);
    mha.eval();
    const Tensor query = to_dtype(rand64({2, 3, 8}, 1).detach(), DType::Float32);
    const Tensor key = to_dtype(rand64({2, 5, 6}, 2).detach(), DType::Float32);
    const Tensor value = to_dtype(rand64({2, 5, 4}, 3).detach(), DType::Float32);
    const Tensor padding = bool_mask({2, 5}, [](auto b, auto s) { return s >= 4 - b; });
    const auto out =
        mha.forward(query, key, value, {.key_padding_mask = padding, .average_attn_weights = false});
    const std::map<std::string, Tensor> io = {{"query", query},         {"key", key},
                                              {"value", value},         {"output", out.output},
                                              {"weights", out.weights}, {"key_padding_mask", padding}};
    const std::map<std::string, std::string> meta = {
        {"embed_dim", "8"}, {"num_heads", "2"}, {"kdim", "6"}, {"vdim", "4"}, {"add_bias_kv", "true"}};
    const auto saved_io = testing::checkpoint_fixture("mha_attograd", mha, io, meta);
    CHECK(max_abs_diff(saved_io.tensors.at("output"), out.output) < 1e-6);
    CHECK(max_abs_diff(saved_io.tensors.at("weights"), out.weights) < 1e-6);
    // And the file loads back into a fresh module by name.
    nn::MultiHeadAttention fresh({.embed_dim = 8, .num_heads = 2, .add_bias_kv = true, .kdim = 6, .vdim = 4});
    nn::load(fresh, dir / "mha_attograd_state.safetensors");
    fresh.eval();
    CHECK(max_abs_diff(fresh.forward(query, key, value, {.key_padding_mask = padding}).output, out.output) ==
          0.0);
}

TEST_CASE("an AttentionRecorder captures the per-head weights by module name") {
    struct Model : nn::Module {
        std::shared_ptr<nn::MultiHeadAttention> self_attn;
        Model() {
            self_attn = register_module("self_attn",
                                        std::make_shared<nn::MultiHeadAttention>(
                                            nn::MultiHeadAttentionOptions{.embed_dim = 4, .num_heads = 2}));
        }
        std::string type_name() const override { return "Model"; }
    } model;
    Generator gen(8);
    const Tensor x = randn({2, 3, 4}, gen);
    nn::AttentionRecorder recorder(model);
    const auto out = model.self_attn->forward(x, {.need_weights = false});
    REQUIRE(recorder.records().size() == 1);
    CHECK(recorder.records()[0].name == "self_attn");
    CHECK(recorder.records()[0].weights.shape() == Shape{2, 2, 3, 3});
    CHECK_FALSE(out.weights.defined());
}

TEST_CASE("dropout on the weights is active in training only, weights are returned before dropout") {
    Generator gen(9);
    nn::MultiHeadAttention mha({.embed_dim = 8, .num_heads = 2, .dropout = 0.5}, gen);
    const Tensor x = randn({2, 6, 8}, gen);
    const auto a = mha.forward(x), b = mha.forward(x);
    CHECK(max_abs_diff(a.output, b.output) > 1e-3);    // different masks
    CHECK(max_abs_diff(a.weights, b.weights) < 1e-6);  // before dropout: the same softmax
    mha.eval();
    const auto c = mha.forward(x), d = mha.forward(x);
    CHECK(max_abs_diff(c.output, d.output) == 0.0);
}

TEST_CASE("MultiHeadAttention rejects bad options and inputs with the shapes in the message") {
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention({.embed_dim = 10, .num_heads = 4}),
                         doctest::Contains("num_heads 4 must be >= 1 and divide embed_dim 10"), ValueError);
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention({.embed_dim = 0}),
                         doctest::Contains("embed_dim must be >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention({.embed_dim = 4, .dropout = -0.1}),
                         doctest::Contains("dropout must be in [0, 1]"), ValueError);
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention({.embed_dim = 4, .batch_first = false}),
                         doctest::Contains("batch_first = false"), ValueError);
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention({.embed_dim = 4, .kdim = -1}),
                         doctest::Contains("kdim and vdim"), ValueError);

    nn::MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .kdim = 3});
    Generator gen(10);
    const Tensor q = randn({2, 3, 4}, gen), k = randn({2, 5, 3}, gen), v = randn({2, 5, 4}, gen);
    CHECK_THROWS_WITH_AS(mha.forward(randn({3, 4}, gen), k, v),
                         doctest::Contains("query must be [B, Tq, E] with E = 4, got [3, 4]"), ShapeError);
    CHECK_THROWS_WITH_AS(mha.forward(randn({2, 3, 5}, gen), k, v),
                         doctest::Contains("query must be [B, Tq, E] with E = 4, got [2, 3, 5]"), ShapeError);
    CHECK_THROWS_WITH_AS(mha.forward(q, randn({2, 5, 4}, gen), v),
                         doctest::Contains("key must be [B, Tk, kdim] with kdim = 3, got [2, 5, 4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(mha.forward(q, k, randn({2, 5, 3}, gen)),
                         doctest::Contains("value must be [B, Tk, vdim] with vdim = 4, got [2, 5, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(mha.forward(q, randn({3, 5, 3}, gen), randn({3, 5, 4}, gen)),
                         doctest::Contains("batch sizes differ: query [2, 3, 4], key [3, 5, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(mha.forward(q, k, randn({2, 4, 4}, gen)),
                         doctest::Contains("key [2, 5, 3] and value [2, 4, 4] have different lengths"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        mha.forward(to_dtype(q, DType::Float64), k, v),
        doctest::Contains(
            "MultiHeadAttention: query is float64 [2, 3, 4] but the layer's parameters are float32"),
        DTypeError);
    CHECK_THROWS_WITH_AS(
        mha.forward(q, k, v, {.attn_mask = zeros({3, 4}, {.dtype = DType::Bool})}),
        doctest::Contains("attn_mask must be [Tq, Tk] = [3, 5] or [B * h, Tq, Tk] = [4, 3, 5], got [3, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(mha.forward(q, k, v, {.key_padding_mask = zeros({2, 4}, {.dtype = DType::Bool})}),
                         doctest::Contains("key_padding_mask must be [B, Tk] = [2, 5], got [2, 4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        mha.forward(q, k, v, {.key_padding_mask = index_tensor({0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {2, 5})}),
        doctest::Contains("key_padding_mask must be bool"), DTypeError);
    CHECK_THROWS_WITH_AS(mha.forward(q, randn({2, 0, 3}, gen), randn({2, 0, 4}, gen)),
                         doctest::Contains("needs at least one key"), ShapeError);
}

TEST_CASE("weights behind a finite attn_mask of -1e4 are exactly 0, as in PyTorch, and rows sum to 1") {
    // float32 exp of scores ~1e4 below the max underflows to 0 (it used to floor at 2^-126 / sum)
    Generator gen(41);
    for (const DType dtype : {DType::Float32, DType::Float64})
        for (const std::int64_t t : {7, 33, 256}) {  // short rows, register rows, long rows
            nn::MultiHeadAttention mha({.embed_dim = 16, .num_heads = 2, .dtype = dtype}, gen);
            std::vector<double> values(static_cast<std::size_t>(t * t), 0.0);
            for (std::int64_t i = 0; i < t; ++i)
                for (std::int64_t j = 0; j < t; ++j)
                    if ((i + j) % 3 == 0) values[static_cast<std::size_t>(i * t + j)] = -1e4;
            nn::AttentionArgs args;
            args.attn_mask = tensor(values, {t, t}, {.dtype = dtype});
            args.average_attn_weights = false;
            const auto weights = mha.forward(randn({2, t, 16}, gen, {.dtype = dtype}), args).weights;
            const auto w = weights.to_vector<double>();
            bool masked_zero = true;
            double worst_row = 0;
            for (std::int64_t bh = 0; bh < 4; ++bh)
                for (std::int64_t i = 0; i < t; ++i) {
                    double row = 0;
                    for (std::int64_t j = 0; j < t; ++j) {
                        const double v = w[static_cast<std::size_t>((bh * t + i) * t + j)];
                        row += v;
                        masked_zero = masked_zero && ((i + j) % 3 != 0 || v == 0.0);
                    }
                    worst_row = std::max(worst_row, std::abs(row - 1.0));
                }
            INFO("dtype ", dtype, " T ", t);
            CHECK(masked_zero);
            CHECK(worst_row < 1e-5);
        }
}
