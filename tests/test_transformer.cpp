// nn::TransformerEncoderLayer / DecoderLayer / Encoder / Decoder: PyTorch parity (outputs and
// every gradient, every mask kind, post- and pre-norm), PyTorch's state_dict keys, the checkpoint
// PyTorch loads, gradcheck, the attention options passed through, recording, dropout, unbatched input, bad
// input and bad masks.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

using namespace attograd;
using testing::bool_mask;
using testing::fixture_mask;
using testing::fixture_tensor;
using testing::max_abs_diff;
using testing::rand64;
using testing::randomize_parameters;
using testing::scaled_diff;
using testing::with_parameters;
using Inputs = std::vector<Tensor>;

namespace {

nn::TransformerLayerOptions layer_options_of(const nlohmann::json& o, DType dtype) {
    return {.d_model = o.at("d_model"),
            .nhead = o.at("nhead"),
            .dim_feedforward = o.at("dim_feedforward"),
            .dropout = 0.0,
            .activation = nn::parse_activation(o.at("activation").get<std::string>()),
            .norm_first = o.at("norm_first"),
            .bias = o.at("bias"),
            .dtype = dtype};
}

// The fixture case's module (of its kind) and a call of its forward on the case's inputs.
struct FixtureModel {
    std::shared_ptr<nn::Module> module;
    std::function<Tensor(const Tensor& x, const Tensor& memory)> forward;
};

FixtureModel build(const nlohmann::json& c, DType dtype) {
    const auto layer = layer_options_of(c.at("options"), dtype);
    const nn::TransformerStackOptions stack{
        .layer = layer, .num_layers = c.at("options").at("num_layers"), .norm = c.at("options").at("norm")};
    const std::string kind = c.at("kind");
    auto mask = [&](const char* key) { return c.contains(key) ? fixture_mask(c.at(key), dtype) : Tensor(); };
    const nn::TransformerEncoderArgs enc{.src_mask = mask("self_mask"),
                                         .src_key_padding_mask = mask("self_padding"),
                                         .is_causal = c.at("self_causal")};
    const nn::TransformerDecoderArgs dec{.tgt_mask = mask("self_mask"),
                                         .memory_mask = mask("memory_mask"),
                                         .tgt_key_padding_mask = mask("self_padding"),
                                         .memory_key_padding_mask = mask("memory_padding"),
                                         .tgt_is_causal = c.at("self_causal"),
                                         .memory_is_causal = c.at("memory_causal")};
    if (kind == "encoder_layer") {
        auto m = std::make_shared<nn::TransformerEncoderLayer>(layer);
        return {m, [m, enc](const Tensor& x, const Tensor&) { return m->forward(x, enc); }};
    }
    if (kind == "decoder_layer") {
        auto m = std::make_shared<nn::TransformerDecoderLayer>(layer);
        return {m, [m, dec](const Tensor& x, const Tensor& memory) { return m->forward(x, memory, dec); }};
    }
    if (kind == "encoder") {
        auto m = std::make_shared<nn::TransformerEncoder>(stack);
        return {m, [m, enc](const Tensor& x, const Tensor&) { return m->forward(x, enc); }};
    }
    REQUIRE(kind == "decoder");
    auto m = std::make_shared<nn::TransformerDecoder>(stack);
    return {m, [m, dec](const Tensor& x, const Tensor& memory) { return m->forward(x, memory, dec); }};
}

// nn.Transformer's two halves, for the state_dict and checkpoint tests.
struct Seq2Seq : nn::Module {
    std::shared_ptr<nn::TransformerEncoder> encoder;
    std::shared_ptr<nn::TransformerDecoder> decoder;
    Seq2Seq(const nn::TransformerStackOptions& o, Generator& gen) {
        encoder = register_module("encoder", std::make_shared<nn::TransformerEncoder>(o, gen));
        decoder = register_module("decoder", std::make_shared<nn::TransformerDecoder>(o, gen));
    }
    std::string type_name() const override { return "Seq2Seq"; }
};

}  // namespace

TEST_CASE("Transformer layers and stacks match torch.nn: outputs and all gradients, every mask kind") {
    const auto fixture = testing::load_fixture("transformer");
    int checked = 0;
    for (const auto& c : fixture.at("cases")) {
        if (c.at("kind") == "state_dict") continue;
        const DType dtype = c.at("dtype") == "float64" ? DType::Float64 : DType::Float32;
        const double tol = dtype == DType::Float64 ? 1e-10 : 1e-5;
        INFO("case: " << c.at("name").get<std::string>() << " (" << c.at("dtype").get<std::string>() << ")");
        const FixtureModel model = build(c, dtype);
        nn::StateDict state;
        for (const auto& [name, t] : c.at("params").items()) state[name] = fixture_tensor(t, dtype);
        model.module->load_state_dict(state);  // strict: every name is PyTorch's, none missing

        Tensor x = fixture_tensor(c.at("x"), dtype).requires_grad_();
        Tensor memory =
            c.contains("memory") ? fixture_tensor(c.at("memory"), dtype).requires_grad_() : Tensor();
        const Tensor out = model.forward(x, memory);
        CHECK(scaled_diff(out, fixture_tensor(c.at("output"))) < tol);
        sum(out * fixture_tensor(c.at("r_output"), dtype)).backward();
        CHECK(scaled_diff(x.grad(), fixture_tensor(c.at("grad_x"))) < tol);
        if (memory.defined()) CHECK(scaled_diff(memory.grad(), fixture_tensor(c.at("grad_memory"))) < tol);
        for (const auto& [name, p] : model.module->named_parameters()) {
            INFO("gradient of " << name);
            CHECK(scaled_diff(p.grad(), fixture_tensor(c.at("grads").at(name))) < tol);
        }
        ++checked;
    }
    CHECK(checked >= 20);
}

TEST_CASE("the state_dict keys and shapes are torch.nn.TransformerEncoder and Decoder's, in order") {
    const auto fixture = testing::load_fixture("transformer");
    const auto& cases = fixture.at("cases");
    const auto it =
        std::find_if(cases.begin(), cases.end(), [](const auto& c) { return c.at("kind") == "state_dict"; });
    REQUIRE(it != cases.end());
    const auto& o = it->at("options");
    Generator gen(3);
    const Seq2Seq model({.layer = {.d_model = o.at("d_model"),
                                   .nhead = o.at("nhead"),
                                   .dim_feedforward = o.at("dim_feedforward")},
                         .num_layers = o.at("num_layers"),
                         .norm = o.at("norm")},
                        gen);
    const auto params = model.named_parameters();  // no buffers: state_dict == parameters
    REQUIRE(params.size() == it->at("keys").size());
    CHECK(model.state_dict().size() == params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto& key = it->at("keys")[i];
        CHECK(params[i].first == key.at("name").get<std::string>());
        CHECK(params[i].second.shape() == key.at("shape").get<Shape>());
    }
}

TEST_CASE("the checkpoint attograd writes is the one gen_transformer.py loads into PyTorch") {
    // gen_transformer.py loads transformer_attograd_state.safetensors into torch.nn's encoder and
    // decoder and checks their outputs against transformer_attograd_io.safetensors.
    // ATTOGRAD_WRITE_FIXTURES=1 rewrites both; otherwise this test checks that the committed files
    // are what attograd produces now.
    const std::filesystem::path dir = ATTOGRAD_FIXTURE_DIR;
    Generator gen(11);
    const nn::TransformerStackOptions options{.layer = {.d_model = 8,
                                                        .nhead = 2,
                                                        .dim_feedforward = 16,
                                                        .activation = nn::Activation::GELU,
                                                        .norm_first = true,
                                                        .dtype = DType::Float64},
                                              .num_layers = 2,
                                              .norm = true};
    Seq2Seq model(options, gen);
    {  // attograd's initialisation, moved a little so that zero biases and unit scales matter
        nn::StateDict state;
        std::uint64_t seed = 300;
        for (const auto& [name, p] : model.named_parameters())
            state[name] = p.detach() + rand64(p.shape(), seed++).detach() * 0.1;
        model.load_state_dict(state);
    }
    model.eval();
    const Tensor src = rand64({2, 5, 8}, 1).detach(), tgt = rand64({2, 4, 8}, 2).detach();
    const Tensor padding = bool_mask({2, 5}, [](auto b, auto s) { return s >= 4 - b; });
    const Tensor memory = model.encoder->forward(src, {.src_key_padding_mask = padding});
    const Tensor output =
        model.decoder->forward(tgt, memory, {.memory_key_padding_mask = padding, .tgt_is_causal = true});
    const std::map<std::string, Tensor> io = {{"src", src},
                                              {"tgt", tgt},
                                              {"src_key_padding_mask", padding},
                                              {"memory", memory},
                                              {"output", output}};
    const std::map<std::string, std::string> meta = {{"norm_first", "true"}, {"activation", "gelu"}};
    const auto saved_io = testing::checkpoint_fixture("transformer_attograd", model, io, meta);
    CHECK(max_abs_diff(saved_io.tensors.at("memory"), memory) < 1e-12);
    CHECK(max_abs_diff(saved_io.tensors.at("output"), output) < 1e-12);
    // And the file loads back into a fresh model by name.
    Generator other(12);
    Seq2Seq fresh(options, other);
    nn::load(fresh, dir / "transformer_attograd_state.safetensors");
    fresh.eval();
    CHECK(max_abs_diff(fresh.encoder->forward(src, {.src_key_padding_mask = padding}), memory) == 0.0);
}

TEST_CASE("Transformer layers pass float64 gradcheck for inputs and every parameter") {
    Generator gen(4);
    const std::int64_t B = 2, T = 4, Tm = 3, E = 4;
    const Tensor padding = bool_mask({B, Tm}, [](auto b, auto s) { return s >= Tm - b; });
    const Tensor float_mask = rand64({T, T}, 9).detach();
    for (const bool norm_first : {false, true}) {
        for (const auto activation : {nn::Activation::ReLU, nn::Activation::GELU}) {
            INFO("norm_first " << norm_first << ", " << nn::to_string(activation));
            const nn::TransformerLayerOptions o{.d_model = E,
                                                .nhead = 2,
                                                .dim_feedforward = 6,
                                                .dropout = 0.0,
                                                .activation = activation,
                                                .norm_first = norm_first,
                                                .dtype = DType::Float64};
            nn::TransformerEncoderLayer enc(o, gen);
            randomize_parameters(enc, 10);
            const Tensor r = rand64({B, T, E}, 5).detach();
            auto fe = [&](const Inputs& in) {
                return sum(enc.forward(in[0], {.src_mask = float_mask, .is_causal = true}) * r);
            };
            CHECK_GRADCHECK(fe, with_parameters(enc, {rand64({B, T, E}, 6)}));
            nn::TransformerDecoderLayer dec(o, gen);
            randomize_parameters(dec, 40);
            auto fd = [&](const Inputs& in) {
                return sum(
                    dec.forward(in[0], in[1], {.memory_key_padding_mask = padding, .tgt_is_causal = true}) *
                    r);
            };
            CHECK_GRADCHECK(fd, with_parameters(dec, {rand64({B, T, E}, 7), rand64({B, Tm, E}, 8)}));
        }
    }
}

TEST_CASE("a layer passes score, local, window and positions to its attentions: gradcheck, a full window") {
    Generator gen(5);
    const std::int64_t B = 2, T = 6, E = 4;
    for (const auto score : {nn::Score::ScaledDot, nn::Score::Additive}) {
        for (const auto local : {nn::LocalMode::Monotonic, nn::LocalMode::Predictive}) {
            const auto positional =
                score == nn::Score::ScaledDot ? nn::Positional::Rotary : nn::Positional::ALiBi;
            INFO(nn::to_string(score) << " " << nn::to_string(local) << " " << nn::to_string(positional));
            nn::TransformerDecoderLayer dec({.d_model = E,
                                             .nhead = 2,
                                             .dim_feedforward = 6,
                                             .dropout = 0.0,
                                             .scoring = {.score = score,
                                                         .local = local,
                                                         .window = 1,
                                                         .positional = positional,
                                                         .rope_base = 50.0},
                                             .dtype = DType::Float64},
                                            gen);
            CHECK(dec.self_attn().options().scoring.local == local);
            CHECK(dec.multihead_attn().options().scoring.score == score);
            CHECK(dec.multihead_attn().options().scoring.window == 1);
            CHECK(dec.self_attn().options().scoring.positional == positional);
            CHECK(dec.multihead_attn().options().scoring.rope_base == 50.0);
            randomize_parameters(dec, 70);
            const Tensor r = rand64({B, T, E}, 5).detach();
            auto fn = [&](const Inputs& in) {
                return sum(dec.forward(in[0], in[1], {.tgt_is_causal = true}) * r);
            };
            CHECK_GRADCHECK(fn, with_parameters(dec, {rand64({B, T, E}, 1), rand64({B, T, E}, 2)}));
        }
    }
    // local-m with a window covering every key is global attention: same parameters, same output
    Generator g1(6), g2(6);
    nn::TransformerEncoder global(
        {.layer = {.d_model = E, .nhead = 2, .dim_feedforward = 6, .dtype = DType::Float64}, .num_layers = 2},
        g1);
    nn::TransformerEncoder local({.layer = {.d_model = E,
                                            .nhead = 2,
                                            .dim_feedforward = 6,
                                            .scoring = {.local = nn::LocalMode::Monotonic, .window = T},
                                            .dtype = DType::Float64},
                                  .num_layers = 2},
                                 g2);
    global.eval();
    local.eval();
    const Tensor x = rand64({B, T, E}, 3).detach();
    const Tensor padding = bool_mask({B, T}, [](auto b, auto s) { return s >= T - 1 - b; });
    CHECK(max_abs_diff(global.forward(x, {.src_key_padding_mask = padding, .is_causal = true}),
                       local.forward(x, {.src_key_padding_mask = padding, .is_causal = true})) < 1e-12);
}

TEST_CASE("an AttentionRecorder sees every attention of a stack by its dotted name") {
    Generator gen(7);
    const nn::TransformerStackOptions o{.layer = {.d_model = 8, .nhead = 2, .dim_feedforward = 16},
                                        .num_layers = 2};
    Seq2Seq model(o, gen);
    const Tensor src = randn({3, 5, 8}, gen), tgt = randn({3, 4, 8}, gen);
    nn::AttentionRecorder recorder(model);
    model.decoder->forward(tgt, model.encoder->forward(src), {.tgt_is_causal = true});
    const std::vector<std::string> expected = {
        "encoder.layers.0.self_attn",      "encoder.layers.1.self_attn", "decoder.layers.0.self_attn",
        "decoder.layers.0.multihead_attn", "decoder.layers.1.self_attn", "decoder.layers.1.multihead_attn"};
    REQUIRE(recorder.records().size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) CHECK(recorder.records()[i].name == expected[i]);
    CHECK(recorder.weights("encoder.layers.1.self_attn")[0].shape() == Shape{3, 2, 5, 5});
    CHECK(recorder.weights("decoder.layers.0.multihead_attn")[0].shape() == Shape{3, 2, 4, 5});
    // causal: the decoder's self-attention puts no weight on later targets
    const Tensor w = recorder.weights("decoder.layers.1.self_attn")[0];
    CHECK(w.to_vector<float>()[1] == 0.0f);  // [0, 0, 0, 1]
    // a stack recorded as the root names its layers "layers.i.…"
    nn::AttentionRecorder inner(*model.decoder);
    model.decoder->forward(tgt, randn({3, 2, 8}, gen));
    CHECK(inner.records().at(1).name == "layers.0.multihead_attn");
    CHECK(recorder.records().size() == expected.size());  // the inner recorder took them
}

TEST_CASE("dropout is active in training only, and eval equals dropout 0") {
    Generator g1(8), g2(8);
    nn::TransformerEncoderLayer with({.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.3}, g1);
    nn::TransformerEncoderLayer without({.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0},
                                        g2);
    const Tensor x = randn({2, 5, 8}, g1);
    CHECK(max_abs_diff(with.forward(x), with.forward(x)) > 1e-3);
    with.eval();
    CHECK(max_abs_diff(with.forward(x), without.forward(x)) == 0.0);
}

TEST_CASE("defaults are PyTorch's, to() converts the whole stack, the module prints as a tree") {
    const nn::TransformerLayerOptions d{.d_model = 8};
    CHECK(d.dim_feedforward == 2048);
    CHECK(d.dropout == 0.1);
    CHECK(d.layer_norm_eps == 1e-5);
    CHECK(d.activation == nn::Activation::ReLU);
    CHECK_FALSE(d.norm_first);
    CHECK(d.bias);
    nn::TransformerEncoder enc(
        {.layer = {.d_model = 8, .nhead = 2, .dim_feedforward = 16}, .num_layers = 2, .norm = true});
    CHECK(enc.named_parameters().size() == 2 * 12 + 2);
    enc.to(DType::Float64);
    CHECK(enc.options().layer.dtype == DType::Float64);
    CHECK(enc.layer(1).options().dtype == DType::Float64);
    CHECK(enc.forward(rand64({1, 3, 8}, 1).detach()).dtype() == DType::Float64);
    const std::string printed = nn::to_string(enc);
    CHECK(printed.find("(layers): ModuleList") != std::string::npos);
    CHECK(printed.find("(0): TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16") !=
          std::string::npos);
    CHECK(printed.find("(multihead_attn)") == std::string::npos);
    nn::TransformerDecoderLayer no_bias({.d_model = 8, .nhead = 2, .dim_feedforward = 16, .bias = false});
    for (const auto& [name, p] : no_bias.named_parameters()) CHECK(name.find("bias") == std::string::npos);
    CHECK(no_bias.named_parameters().size() == 2 + 2 + 2 + 3);  // in_proj, out_proj x 2, linear1/2, norm1..3
}

TEST_CASE("Transformer layers reject bad options and inputs, naming the layer and the shapes") {
    using O = nn::TransformerLayerOptions;
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = 0}),
                         doctest::Contains("TransformerEncoderLayer: d_model must be >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(
        nn::TransformerDecoderLayer(O{.d_model = 10, .nhead = 4}),
        doctest::Contains("TransformerDecoderLayer: nhead 4 must be >= 1 and divide d_model 10"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = 4, .dim_feedforward = -1}),
                         doctest::Contains("dim_feedforward must be >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = 4, .dropout = 1.5}),
                         doctest::Contains("dropout must be in [0, 1]"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = 4, .layer_norm_eps = -1}),
                         doctest::Contains("layer_norm_eps must be finite and >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = 4, .batch_first = false}),
                         doctest::Contains("batch_first = false"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = 4, .dtype = DType::Int64}),
                         doctest::Contains("dtype must be float32 or float64"), DTypeError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoder({.layer = {.d_model = 4}, .num_layers = -1}),
                         doctest::Contains("TransformerEncoder: num_layers must be >= 0, got -1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::parse_activation("tanh"), doctest::Contains("choose relu or gelu"), ValueError);

    Generator gen(9);
    nn::TransformerEncoder enc({.layer = {.d_model = 4, .nhead = 2, .dim_feedforward = 8}, .num_layers = 2});
    nn::TransformerDecoderLayer dec({.d_model = 4, .nhead = 2, .dim_feedforward = 8});
    const Tensor x = randn({2, 3, 4}, gen), memory = randn({2, 5, 4}, gen);
    CHECK_THROWS_WITH_AS(
        enc.forward(randn({2, 3, 5}, gen)),
        doctest::Contains("TransformerEncoder: src must be [B, S, d_model] or unbatched [S, d_model] "
                          "with d_model = 4, got [2, 3, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(enc.forward(randn({3, 5}, gen)), doctest::Contains("got [3, 5]"), ShapeError);
    CHECK_THROWS_WITH_AS(enc.forward(randn({4}, gen)), doctest::Contains("got [4]"), ShapeError);
    CHECK_THROWS_WITH_AS(dec.forward(randn({3, 4}, gen), memory),
                         doctest::Contains("must both be batched [B, T, d_model] or both unbatched"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        enc.forward(to_dtype(x, DType::Float64)),
        doctest::Contains("src must have the parameters' dtype float32, got float64 [2, 3, 4]"), DTypeError);
    CHECK_THROWS_WITH_AS(
        enc.forward(x, {.src_key_padding_mask = zeros({2, 4}, {.dtype = DType::Bool})}),
        doctest::Contains("TransformerEncoder: src_key_padding_mask must be [B, S] = [2, 3], got [2, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(enc.forward(x, {.src_mask = zeros({3, 4}, {.dtype = DType::Bool})}),
                         doctest::Contains("TransformerEncoder: src_mask must be [S, S] = [3, 3] or "
                                           "[B * nhead, S, S] = [4, 3, 3], got [3, 4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        dec.forward(x, randn({3, 5, 4}, gen)),
        doctest::Contains("TransformerDecoderLayer: batch sizes differ: tgt [2, 3, 4], memory [3, 5, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(dec.forward(x, randn({2, 5, 3}, gen)),
                         doctest::Contains("memory must be [B, S, d_model] or unbatched [S, d_model] with "
                                           "d_model = 4, got [2, 5, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(dec.forward(x, memory, {.memory_mask = zeros({3, 3}, {.dtype = DType::Bool})}),
                         doctest::Contains("TransformerDecoderLayer: memory_mask must be [T, S] = [3, 5] or "
                                           "[B * nhead, T, S] = [4, 3, 5], got [3, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(enc.layer(2), doctest::Contains("index 2 out of range for 2 layers"), IndexError);
    CHECK_THROWS_WITH_AS(dec.forward(Tensor(), memory), doctest::Contains("tgt is undefined"), ValueError);
}

TEST_CASE("Transformer layers and stacks take unbatched [T, E] input and equal the batch of one") {
    Generator gen(12);
    const nn::TransformerLayerOptions layer{
        .d_model = 4, .nhead = 2, .dim_feedforward = 8, .dropout = 0.0, .dtype = DType::Float64};
    nn::TransformerEncoderLayer enc_layer(layer, gen);
    nn::TransformerDecoderLayer dec_layer(layer, gen);
    nn::TransformerEncoder enc({.layer = layer, .num_layers = 2}, gen);
    nn::TransformerDecoder dec({.layer = layer, .num_layers = 2}, gen);
    const Tensor src = rand64({3, 4}, 13), tgt = rand64({2, 4}, 14);
    const Tensor src_pad = index_tensor({0, 0, 1}, {3}) == 1, tgt_mask = nn::causal_mask(2);
    const Tensor heads_mask = reshape(nn::generate_square_subsequent_mask(3, DType::Float64), {1, 3, 3}) +
                              zeros({2, 3, 3}, {.dtype = DType::Float64});  // [nhead, T, T]
    auto batch1 = [](const Tensor& t) {
        Shape shape = t.shape();
        shape.insert(shape.begin(), 1);
        return reshape(t, shape);
    };
    auto same = [](const Tensor& unbatched, const Tensor& batched) {
        CHECK(unbatched.shape() == Shape(batched.shape().begin() + 1, batched.shape().end()));
        CHECK(unbatched.to_vector<double>() == batched.to_vector<double>());
    };
    for (const bool with_masks : {false, true}) {
        CAPTURE(with_masks);
        const nn::TransformerEncoderArgs enc_args =
            with_masks ? nn::TransformerEncoderArgs{.src_mask = heads_mask, .src_key_padding_mask = src_pad}
                       : nn::TransformerEncoderArgs{};
        nn::TransformerEncoderArgs enc_batched = enc_args;
        if (with_masks) enc_batched.src_key_padding_mask = batch1(src_pad);
        same(enc_layer.forward(src, enc_args), enc_layer.forward(batch1(src), enc_batched));
        same(enc.forward(src, enc_args), enc.forward(batch1(src), enc_batched));

        const nn::TransformerDecoderArgs dec_args =
            with_masks ? nn::TransformerDecoderArgs{.tgt_mask = tgt_mask, .memory_key_padding_mask = src_pad}
                       : nn::TransformerDecoderArgs{.tgt_is_causal = true};
        nn::TransformerDecoderArgs dec_batched = dec_args;
        if (with_masks) dec_batched.memory_key_padding_mask = batch1(src_pad);
        same(dec_layer.forward(tgt, src, dec_args), dec_layer.forward(batch1(tgt), batch1(src), dec_batched));
        same(dec.forward(tgt, src, dec_args), dec.forward(batch1(tgt), batch1(src), dec_batched));
    }
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return dec.forward(in[0], in[1]); },
                    (std::vector<Tensor>{tgt, src}));
    CHECK_THROWS_WITH_AS(enc.forward(src, {.src_key_padding_mask = zeros({4}, {.dtype = DType::Bool})}),
                         doctest::Contains("TransformerEncoder: src_key_padding_mask of an unbatched input "
                                           "must be [S] = [3], got [4]"),
                         ShapeError);
}

TEST_CASE("Transformer layers refuse float masks with NaN, +inf or another dtype, naming the mask") {
    Generator gen(15);
    nn::TransformerEncoderLayer enc({.d_model = 4, .nhead = 2, .dim_feedforward = 8}, gen);
    nn::TransformerDecoder dec({.layer = {.d_model = 4, .nhead = 2, .dim_feedforward = 8}, .num_layers = 1},
                               gen);
    const Tensor x = randn({2, 3, 4}, gen), memory = randn({2, 5, 4}, gen);
    CHECK_THROWS_WITH_AS(
        enc.forward(x, {.src_key_padding_mask = tensor({0, 0, std::nan(""), 0, 0, 0}, {2, 3})}),
        doctest::Contains("TransformerEncoderLayer: src_key_padding_mask holds nan"), ValueError);
    CHECK_THROWS_WITH_AS(enc.forward(x, {.src_mask = full({3, 3}, std::numeric_limits<double>::infinity())}),
                         doctest::Contains("TransformerEncoderLayer: src_mask holds inf"), ValueError);
    CHECK_THROWS_WITH_AS(
        dec.forward(x, memory, {.memory_key_padding_mask = zeros({2, 5}, {.dtype = DType::Float64})}),
        doctest::Contains("TransformerDecoder: memory_key_padding_mask is float64 but the layer computes in "
                          "float32"),
        DTypeError);
    CHECK_THROWS_WITH_AS(
        dec.forward(x, memory, {.tgt_mask = nn::generate_square_subsequent_mask(3, DType::Float64)}),
        doctest::Contains("tgt_mask is float64"), DTypeError);
    // A float32 -inf mask is the bool mask (eval: no dropout).
    enc.train(false);
    const Tensor pad = index_tensor({0, 0, 1, 0, 1, 1}, {2, 3}) == 1;
    CHECK(max_abs_diff(enc.forward(x, {.src_key_padding_mask = masked_fill(
                                           zeros({2, 3}), pad, -std::numeric_limits<double>::infinity())}),
                       enc.forward(x, {.src_key_padding_mask = pad})) == 0.0);
}

TEST_CASE("Transformer layers and stacks refuse length-0 sequences and misshapen masks, naming themselves") {
    Generator gen(16);
    const nn::TransformerLayerOptions o{.d_model = 4, .nhead = 2, .dim_feedforward = 8};
    nn::TransformerEncoderLayer enc_layer(o, gen);
    nn::TransformerDecoderLayer dec_layer(o, gen);
    nn::TransformerEncoder enc({.layer = o, .num_layers = 1}, gen);
    nn::TransformerDecoder dec({.layer = o, .num_layers = 1}, gen);
    const Tensor x = randn({2, 3, 4}, gen), memory = randn({2, 5, 4}, gen);
    CHECK_THROWS_WITH_AS(enc_layer.forward(zeros({2, 0, 4})),
                         doctest::Contains("TransformerEncoderLayer: src must hold at least one position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(enc.forward(zeros({0, 4})),
                         doctest::Contains("TransformerEncoder: src must hold at least one position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(dec_layer.forward(zeros({2, 0, 4}), memory),
                         doctest::Contains("TransformerDecoderLayer: tgt must hold at least one position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(dec.forward(x, zeros({2, 0, 4})),
                         doctest::Contains("TransformerDecoder: memory must hold at least one position"),
                         ShapeError);
    const auto bools = [](const Shape& s) { return zeros(s, {.dtype = DType::Bool}); };
    CHECK_THROWS_WITH_AS(dec.forward(x, memory, {.tgt_mask = bools({5, 5})}),
                         doctest::Contains("TransformerDecoder: tgt_mask must be [T, T] = [3, 3] or "
                                           "[B * nhead, T, T] = [4, 3, 3], got [5, 5]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        dec_layer.forward(x, memory, {.tgt_key_padding_mask = bools({2, 5})}),
        doctest::Contains("TransformerDecoderLayer: tgt_key_padding_mask must be [B, T] = [2, 3], "
                          "got [2, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        enc_layer.forward(x, {.src_key_padding_mask = bools({3, 3})}),
        doctest::Contains("TransformerEncoderLayer: src_key_padding_mask must be [B, S] = [2, 3]"),
        ShapeError);
    // a decoder layer without self-attention has no key among the targets to need
    nn::TransformerDecoderLayer cross_only(
        {.d_model = 4, .nhead = 2, .dim_feedforward = 8, .self_attention = false}, gen);
    CHECK(cross_only.forward(zeros({2, 0, 4}), memory).shape() == Shape{2, 0, 4});
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer({.d_model = std::int64_t{1} << 40, .nhead = 1}),
                         doctest::Contains("TransformerEncoderLayer: d_model 1099511627776 makes "
                                           "self_attn.in_proj_weight"),
                         ResourceError);
}
