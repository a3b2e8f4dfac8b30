// nn::Transformer: the same as composing the library's encoder and decoder, PyTorch's state_dict
// names, PyTorch's xavier reset, float64 gradcheck, encode / decode, bad options.
#include "fixtures.hpp"
#include "helpers.hpp"

using namespace attograd;
using namespace testing;
using Inputs = std::vector<Tensor>;

namespace {

// The parameters of `state` whose names start with `prefix`, with the prefix removed.
nn::StateDict strip_prefix(const nn::StateDict& state, const std::string& prefix) {
    nn::StateDict out;
    for (const auto& [name, t] : state)
        if (name.starts_with(prefix)) out[name.substr(prefix.size())] = t;
    return out;
}

const nn::TransformerOptions tiny{.d_model = 4,
                                  .nhead = 2,
                                  .num_encoder_layers = 2,
                                  .num_decoder_layers = 1,
                                  .dim_feedforward = 6,
                                  .dropout = 0.0,
                                  .dtype = DType::Float64};

}  // namespace

TEST_CASE("Transformer.forward equals the library encoder then decoder with the same weights") {
    const std::int64_t B = 2, S = 5, T = 3, E = 4;
    const Tensor src = rand64({B, S, E}, 1).detach(), tgt = rand64({B, T, E}, 2).detach();
    const Tensor src_pad = bool_mask({B, S}, [](auto b, auto s) { return s >= S - b; });
    const Tensor tgt_mask = nn::Transformer::generate_square_subsequent_mask(T, DType::Float64);
    const Tensor memory_mask = rand64({T, S}, 3).detach();
    for (const bool norm_first : {false, true}) {
        INFO("norm_first " << norm_first);
        nn::TransformerOptions o = tiny;
        o.norm_first = norm_first;
        o.activation = norm_first ? nn::Activation::GELU : nn::Activation::ReLU;
        Generator gen(7);
        nn::Transformer model(o, gen);
        randomize_parameters(model, 20);

        const nn::TransformerLayerOptions layer{.d_model = E,
                                                .nhead = 2,
                                                .dim_feedforward = 6,
                                                .dropout = 0.0,
                                                .activation = o.activation,
                                                .norm_first = norm_first,
                                                .dtype = DType::Float64};
        nn::TransformerEncoder encoder({.layer = layer, .num_layers = 2, .norm = true});
        nn::TransformerDecoder decoder({.layer = layer, .num_layers = 1, .norm = true});
        encoder.load_state_dict(strip_prefix(model.state_dict(), "encoder."));  // strict: every key there
        decoder.load_state_dict(strip_prefix(model.state_dict(), "decoder."));

        const Tensor out = model.forward(src, tgt,
                                         {.tgt_mask = tgt_mask,
                                          .memory_mask = memory_mask,
                                          .src_key_padding_mask = src_pad,
                                          .memory_key_padding_mask = src_pad});
        const Tensor memory = encoder.forward(src, {.src_key_padding_mask = src_pad});
        const Tensor expected = decoder.forward(
            tgt, memory,
            {.tgt_mask = tgt_mask, .memory_mask = memory_mask, .memory_key_padding_mask = src_pad});
        CHECK(out.shape() == Shape{B, T, E});
        CHECK(max_abs_diff(out, expected) == 0.0);
        // encode / decode are the two halves; the causal flag equals the explicit mask.
        const Tensor halves = model.decode(
            tgt, model.encode(src, {.src_key_padding_mask = src_pad}),
            {.memory_mask = memory_mask, .memory_key_padding_mask = src_pad, .tgt_is_causal = true});
        CHECK(max_abs_diff(halves, expected) < 1e-12);
        // The padding mask matters: without it the output differs.
        CHECK(max_abs_diff(model.forward(src, tgt, {.tgt_mask = tgt_mask, .memory_mask = memory_mask}),
                           expected) > 1e-6);
    }
}

TEST_CASE("the state_dict keys are torch.nn.Transformer's, in its registration order") {
    nn::Transformer model(
        {.d_model = 4, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 1, .dim_feedforward = 8});
    // PyTorch's module tree: Transformer(encoder=TransformerEncoder(layers, norm),
    // decoder=TransformerDecoder(layers, norm)), each layer's parameters in __init__ order.
    const std::vector<std::string> attn = {"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                           "out_proj.bias"};
    std::vector<std::string> expected;
    for (const auto& a : attn) expected.push_back("encoder.layers.0.self_attn." + a);
    for (const char* p : {"linear1", "linear2", "norm1", "norm2"})
        for (const char* w : {"weight", "bias"})
            expected.push_back(std::string("encoder.layers.0.") + p + "." + w);
    expected.insert(expected.end(), {"encoder.norm.weight", "encoder.norm.bias"});
    for (const char* block : {"self_attn", "multihead_attn"})
        for (const auto& a : attn) expected.push_back(std::string("decoder.layers.0.") + block + "." + a);
    for (const char* p : {"linear1", "linear2", "norm1", "norm2", "norm3"})
        for (const char* w : {"weight", "bias"})
            expected.push_back(std::string("decoder.layers.0.") + p + "." + w);
    expected.insert(expected.end(), {"decoder.norm.weight", "decoder.norm.bias"});

    std::vector<std::string> names;
    for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
    CHECK(names == expected);
    CHECK(model.state_dict().size() == expected.size());
    CHECK(model.state_dict().at("decoder.layers.0.linear1.weight").shape() == Shape{8, 4});
    CHECK(model.state_dict().at("encoder.norm.bias").shape() == Shape{4});

    nn::Transformer no_bias(
        {.d_model = 4, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 0, .bias = false});
    for (const auto& [name, p] : no_bias.named_parameters()) CHECK(name.find("bias") == std::string::npos);
    CHECK(no_bias.state_dict().count("decoder.norm.weight") == 1);  // 0 layers: the final norm alone
}

TEST_CASE("Transformer initialises as PyTorch's _reset_parameters: xavier_uniform_ on matrices") {
    Generator gen(3);
    nn::Transformer model(
        {.d_model = 8, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 1, .dim_feedforward = 24},
        gen);
    for (const auto& [name, p] : model.named_parameters()) {
        INFO(name);
        const std::vector<double> v = p.to_vector<double>();
        double max_abs = 0.0;
        for (double x : v) max_abs = std::max(max_abs, std::abs(x));
        if (p.dim() == 2) {
            const double bound = std::sqrt(6.0 / static_cast<double>(p.shape()[0] + p.shape()[1]));
            CHECK(max_abs <= bound);
            CHECK(max_abs > 0.5 * bound);  // drawn over the whole range, not left at a smaller init
        } else if (name.ends_with("norm.weight") || name.find(".norm") != std::string::npos) {
            if (name.ends_with("weight")) CHECK(max_abs == 1.0);
        }
    }
}

TEST_CASE("Transformer passes float64 gradcheck for src, tgt and every parameter") {
    Generator gen(5);
    nn::TransformerOptions o = tiny;
    o.num_encoder_layers = 1;
    nn::Transformer model(o, gen);
    randomize_parameters(model, 30);
    const std::int64_t B = 2, S = 3, T = 3;
    const Tensor pad = bool_mask({B, S}, [](auto b, auto s) { return s >= S - b; });
    const Tensor r = rand64({B, T, 4}, 9).detach();
    auto f = [&](const Inputs& in) {
        return sum(model.forward(
                       in[0], in[1],
                       {.src_key_padding_mask = pad, .memory_key_padding_mask = pad, .tgt_is_causal = true}) *
                   r);
    };
    CHECK_GRADCHECK(f, with_parameters(model, {rand64({B, S, 4}, 10), rand64({B, T, 4}, 11)}));
}

TEST_CASE("Transformer rejects bad options and inputs, naming the option and the shapes") {
    using O = nn::TransformerOptions;
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 0}),
                         doctest::Contains("Transformer: d_model must be >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 10, .nhead = 4}),
                         doctest::Contains("Transformer: nhead 4 must be >= 1 and divide d_model 10"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 4, .nhead = 2, .num_encoder_layers = -1}),
                         doctest::Contains("num_encoder_layers must be >= 0, got -1"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 4, .nhead = 2, .num_decoder_layers = -2}),
                         doctest::Contains("num_decoder_layers must be >= 0, got -2"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 4, .nhead = 2, .dim_feedforward = -1}),
                         doctest::Contains("dim_feedforward must be >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 4, .nhead = 2, .dropout = 1.5}),
                         doctest::Contains("dropout must be in [0, 1]"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 4, .nhead = 2, .layer_norm_eps = -1}),
                         doctest::Contains("layer_norm_eps must be finite and >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Transformer(O{.d_model = 4, .nhead = 2, .dtype = DType::Int64}),
                         doctest::Contains("dtype must be float32 or float64"), DTypeError);

    Generator gen(2);
    nn::Transformer model(
        {.d_model = 4, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 1, .dim_feedforward = 8},
        gen);
    CHECK_THROWS_WITH_AS(
        model.forward(randn({2, 3, 4}, gen), randn({3, 2, 4}, gen)),
        doctest::Contains("Transformer::forward: the batch sizes of src [2, 3, 4] and tgt [3, 2, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(model.forward(randn({2, 3, 5}, gen), randn({2, 2, 5}, gen)),
                         doctest::Contains("must end in d_model 4"), ShapeError);
    CHECK_THROWS_WITH_AS(model.forward(randn({3, 4}, gen), randn({2, 4}, gen)),
                         doctest::Contains("src and tgt must be [B, S, E] and [B, T, E]"), ShapeError);
}

TEST_CASE("Transformer matches torch.nn.Transformer: keys, output and every gradient, float64") {
    const auto fixture = load_fixture("transformer_model");
    for (const auto& c : fixture.at("cases")) {
        INFO(c.at("name").get<std::string>());
        const auto& o = c.at("options");
        nn::Transformer model({.d_model = o.at("d_model"),
                               .nhead = o.at("nhead"),
                               .num_encoder_layers = o.at("num_encoder_layers"),
                               .num_decoder_layers = o.at("num_decoder_layers"),
                               .dim_feedforward = o.at("dim_feedforward"),
                               .dropout = 0.0,
                               .activation = nn::parse_activation(c.at("activation").get<std::string>()),
                               .norm_first = c.at("norm_first"),
                               .dtype = DType::Float64});
        std::vector<std::string> names;
        for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
        CHECK(names == c.at("keys").get<std::vector<std::string>>());  // PyTorch's order, no buffers
        nn::StateDict state;
        for (const auto& [name, t] : c.at("params").items()) state[name] = fixture_tensor(t);
        model.load_state_dict(state);  // strict

        const Tensor src = fixture_tensor(c.at("src")).detach().requires_grad_();
        const Tensor tgt = fixture_tensor(c.at("tgt")).detach().requires_grad_();
        const Tensor half = scalar(0.5, {.dtype = DType::Float64});
        const Tensor src_pad = gt(fixture_tensor(c.at("src_padding")), half);
        const Tensor tgt_pad = gt(fixture_tensor(c.at("tgt_padding")), half);
        const Tensor out = model.forward(
            src, tgt,
            {.tgt_mask = nn::Transformer::generate_square_subsequent_mask(tgt.shape()[1], DType::Float64),
             .memory_mask = fixture_tensor(c.at("memory_mask")),
             .src_key_padding_mask = src_pad,
             .tgt_key_padding_mask = tgt_pad,
             .memory_key_padding_mask = src_pad});
        CHECK(scaled_diff(out, fixture_tensor(c.at("output"))) < 1e-10);
        sum(out * fixture_tensor(c.at("r_output"))).backward();
        CHECK(scaled_diff(src.grad(), fixture_tensor(c.at("grad_src"))) < 1e-10);
        CHECK(scaled_diff(tgt.grad(), fixture_tensor(c.at("grad_tgt"))) < 1e-10);
        for (const auto& [name, p] : model.named_parameters()) {
            INFO(name);
            CHECK(scaled_diff(p.grad(), fixture_tensor(c.at("grads").at(name))) < 1e-10);
        }
    }
}

TEST_CASE(
    "Transformer names every mask argument, its expected and its given shape, before either half runs") {
    Generator gen(3);
    nn::Transformer t({.d_model = 8, .nhead = 2, .dim_feedforward = 16}, gen);
    const Tensor src = zeros({2, 3, 8}), tgt = zeros({2, 4, 8});
    const auto bools = [](const Shape& s) { return zeros(s, {.dtype = DType::Bool}); };
    CHECK_THROWS_WITH_AS(
        t.forward(src, tgt, {.tgt_mask = bools({3, 3})}),
        doctest::Contains(
            "Transformer: tgt_mask must be [T, T] = [4, 4] or [B * nhead, T, T] = [4, 4, 4], got [3, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        t.forward(src, tgt, {.src_mask = bools({4, 4})}),
        doctest::Contains(
            "Transformer: src_mask must be [S, S] = [3, 3] or [B * nhead, S, S] = [4, 3, 3], got [4, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        t.forward(src, tgt, {.memory_mask = bools({3, 4})}),
        doctest::Contains(
            "Transformer: memory_mask must be [T, S] = [4, 3] or [B * nhead, T, S] = [4, 4, 3], got [3, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        t.forward(src, tgt, {.src_key_padding_mask = bools({2, 4})}),
        doctest::Contains("Transformer: src_key_padding_mask must be [B, S] = [2, 3], got [2, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        t.forward(src, tgt, {.tgt_key_padding_mask = bools({2, 3})}),
        doctest::Contains("Transformer: tgt_key_padding_mask must be [B, T] = [2, 4], got [2, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        t.forward(src, tgt, {.memory_key_padding_mask = bools({1, 3})}),
        doctest::Contains("Transformer: memory_key_padding_mask must be [B, S] = [2, 3], got [1, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(t.forward(src, tgt, {.tgt_mask = zeros({4, 4}, {.dtype = DType::Int64})}),
                         doctest::Contains("Transformer: tgt_mask must be bool"), DTypeError);
    // the halves called alone name themselves
    CHECK_THROWS_WITH_AS(t.encode(src, {.src_mask = bools({2, 2})}),
                         doctest::Contains("Transformer::encode: src_mask must be [S, S] = [3, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        t.decode(tgt, src, {.memory_key_padding_mask = bools({2, 4})}),
        doctest::Contains("Transformer::decode: memory_key_padding_mask must be [B, S] = [2, 3]"),
        ShapeError);
    // correct masks still run
    CHECK(t.forward(src, tgt, {.tgt_mask = bools({4, 4}), .memory_mask = bools({2 * 2, 4, 3})}).shape() ==
          Shape{2, 4, 8});
}

TEST_CASE("Transformer refuses length-0 sequences and oversized options, naming itself and the argument") {
    Generator gen(4);
    nn::Transformer t({.d_model = 8, .nhead = 2, .dim_feedforward = 16}, gen);
    CHECK_THROWS_WITH_AS(t.forward(zeros({2, 0, 8}), zeros({2, 4, 8})),
                         doctest::Contains("Transformer: src must hold at least one position"), ShapeError);
    CHECK_THROWS_WITH_AS(t.forward(zeros({2, 3, 8}), zeros({2, 0, 8})),
                         doctest::Contains("Transformer: tgt must hold at least one position"), ShapeError);
    CHECK_THROWS_WITH_AS(t.encode(zeros({2, 0, 8})),
                         doctest::Contains("Transformer::encode: src must hold at least one position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(t.decode(zeros({2, 1, 8}), zeros({2, 0, 8})),
                         doctest::Contains("Transformer::decode: memory must hold at least one position"),
                         ShapeError);
    using O = nn::TransformerOptions;
    CHECK_THROWS_WITH_AS(
        nn::Transformer(O{.d_model = std::int64_t{1} << 40, .nhead = 1}),
        doctest::Contains("Transformer: d_model 1099511627776 makes self_attn.in_proj_weight "
                          "[3298534883328, 1099511627776], which has too many elements"),
        ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::Transformer(O{.d_model = 8, .nhead = 2, .dim_feedforward = std::int64_t{1} << 60}),
        doctest::Contains("Transformer: d_model 8 and dim_feedforward 1152921504606846976 makes "
                          "linear1.weight"),
        ResourceError);
}
