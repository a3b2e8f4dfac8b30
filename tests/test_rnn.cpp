// nn::RNN, nn::GRU, nn::LSTM: values and gradients against PyTorch, gradcheck of every option,
// variable lengths, dropout, initialisation, names, printing and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>
#include <memory>

using namespace attograd;
using testing::fixture_tensor;
using testing::rand64;
using testing::scaled_diff;
using Inputs = std::vector<Tensor>;

namespace {

// A layer of any of the three kinds behind one call: (x, h0, c0, lengths) -> output, h_n, c_n.
struct AnyLayer {
    std::unique_ptr<nn::RecurrentBase> module;
    std::string kind;
    nn::LSTMOutput forward(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& lengths) const {
        if (kind == "LSTM") return static_cast<const nn::LSTM&>(*module).forward(x, h0, c0, lengths);
        const nn::RNNOutput r = kind == "GRU" ? static_cast<const nn::GRU&>(*module).forward(x, h0, lengths)
                                              : static_cast<const nn::RNN&>(*module).forward(x, h0, lengths);
        return {r.output, r.h_n, Tensor()};
    }
};

struct LayerSpec {
    std::string kind;
    std::int64_t input_size, hidden_size, num_layers = 1;
    bool bidirectional = false, bias = true, batch_first = true, relu = false;
    std::int64_t proj_size = 0;
    double dropout = 0.0;
};

// The options every kind shares, from the spec, in float64.
template <class Options>
Options common_options(const LayerSpec& s) {
    Options o;
    o.input_size = s.input_size;
    o.hidden_size = s.hidden_size;
    o.num_layers = s.num_layers;
    o.bias = s.bias;
    o.batch_first = s.batch_first;
    o.dropout = s.dropout;
    o.bidirectional = s.bidirectional;
    o.dtype = DType::Float64;
    return o;
}

AnyLayer make_layer(const LayerSpec& s, Generator& gen) {
    AnyLayer layer{nullptr, s.kind};
    if (s.kind == "RNN") {
        auto o = common_options<nn::RNNOptions>(s);
        o.nonlinearity = s.relu ? nn::RNNNonlinearity::Relu : nn::RNNNonlinearity::Tanh;
        layer.module = std::make_unique<nn::RNN>(o, gen);
    } else if (s.kind == "GRU") {
        layer.module = std::make_unique<nn::GRU>(common_options<nn::GRUOptions>(s), gen);
    } else {
        auto o = common_options<nn::LSTMOptions>(s);
        o.proj_size = s.proj_size;
        layer.module = std::make_unique<nn::LSTM>(o, gen);
    }
    return layer;
}

Tensor optional_fixture(const nlohmann::json& c, const char* key, DType dtype = DType::Float64) {
    return c.contains(key) ? fixture_tensor(c.at(key), dtype) : Tensor();
}

// Output, h_n and c_n side by side in one vector, for gradcheck's single output.
Tensor flat_results(const nn::LSTMOutput& r) {
    std::vector<Tensor> parts{reshape(r.output, {-1}), reshape(r.h_n, {-1})};
    if (r.c_n.defined()) parts.push_back(reshape(r.c_n, {-1}));
    return concat(parts, 0);
}

}  // namespace

TEST_CASE("RNN, GRU and LSTM match PyTorch's outputs, states and gradients in float64") {
    const auto cases = testing::load_fixture("rnn").at("cases");
    for (const auto& c : cases) {
        const LayerSpec spec{.kind = c.at("kind"),
                             .input_size = 3,
                             .hidden_size = 4,
                             .num_layers = c.at("num_layers"),
                             .bidirectional = c.at("bidirectional"),
                             .bias = c.at("bias"),
                             .batch_first = c.at("batch_first"),
                             .relu = c.at("nonlinearity") == "relu",
                             .proj_size = c.at("proj_size")};
        Generator gen(1);
        AnyLayer layer = make_layer(spec, gen);
        INFO(nn::to_string(*layer.module)
             << (c.contains("lengths") ? " with lengths" : "") << (c.contains("h0") ? " with h0" : "")
             << (c.at("unbatched").get<bool>() ? " unbatched" : ""));
        nn::StateDict state;
        for (const auto& [name, p] : layer.module->named_parameters())
            state[name] = fixture_tensor(c.at("param." + name));
        layer.module->load_state_dict(state);
        Tensor x = fixture_tensor(c.at("x")).requires_grad_();
        Tensor h0 = optional_fixture(c, "h0"), c0 = optional_fixture(c, "c0");
        if (h0.defined()) h0.requires_grad_();
        if (c0.defined()) c0.requires_grad_();
        const auto r = layer.forward(x, h0, c0, optional_fixture(c, "lengths", DType::Int64));
        CHECK(scaled_diff(r.output, fixture_tensor(c.at("out"))) <= 1e-10);
        CHECK(scaled_diff(r.h_n, fixture_tensor(c.at("h_n"))) <= 1e-10);
        Tensor loss = sum(r.output * fixture_tensor(c.at("r"))) + sum(r.h_n * fixture_tensor(c.at("r_h")));
        REQUIRE(r.c_n.defined() == c.contains("c_n"));
        if (r.c_n.defined()) {
            CHECK(scaled_diff(r.c_n, fixture_tensor(c.at("c_n"))) <= 1e-10);
            loss = loss + sum(r.c_n * fixture_tensor(c.at("r_c")));
        }
        loss.backward();
        CHECK(scaled_diff(x.grad(), fixture_tensor(c.at("grad_x"))) <= 1e-10);
        if (h0.defined()) CHECK(scaled_diff(h0.grad(), fixture_tensor(c.at("grad_h0"))) <= 1e-10);
        if (c0.defined()) CHECK(scaled_diff(c0.grad(), fixture_tensor(c.at("grad_c0"))) <= 1e-10);
        for (const auto& [name, p] : layer.module->named_parameters()) {
            INFO(name);
            CHECK(scaled_diff(p.grad(), fixture_tensor(c.at("grad." + name))) <= 1e-10);
        }
    }
}

TEST_CASE("RNN, GRU and LSTM pass gradcheck for every option, with and without lengths and initial states") {
    const std::int64_t B = 2, T = 3, I = 2, H = 3;
    std::vector<LayerSpec> specs;
    for (const char* kind : {"RNN", "GRU", "LSTM"})
        for (std::int64_t layers : {1, 2})
            for (bool bidirectional : {false, true})
                specs.push_back({.kind = kind,
                                 .input_size = I,
                                 .hidden_size = H,
                                 .num_layers = layers,
                                 .bidirectional = bidirectional});
    specs.push_back({.kind = "RNN", .input_size = I, .hidden_size = H, .num_layers = 2, .relu = true});
    specs.push_back({.kind = "LSTM",
                     .input_size = I,
                     .hidden_size = H,
                     .num_layers = 2,
                     .bidirectional = true,
                     .proj_size = 2});
    for (const char* kind : {"RNN", "GRU", "LSTM"})
        specs.push_back(
            {.kind = kind, .input_size = I, .hidden_size = H, .bidirectional = true, .bias = false});
    specs.push_back(
        {.kind = "GRU", .input_size = I, .hidden_size = H, .num_layers = 2, .batch_first = false});
    // dropout between the layers is off in eval mode
    specs.push_back({.kind = "LSTM", .input_size = I, .hidden_size = H, .num_layers = 2, .dropout = 0.5});
    const Tensor lengths = index_tensor({2, 3}, {B});
    std::uint64_t seed = 10;
    for (const LayerSpec& spec : specs) {
        Generator gen(seed++);
        AnyLayer layer = make_layer(spec, gen);
        layer.module->eval();
        const std::int64_t D = spec.bidirectional ? 2 : 1, P = spec.proj_size > 0 ? spec.proj_size : H;
        for (bool with_lengths : {false, true})
            for (bool with_state : {false, true}) {
                INFO(nn::to_string(*layer.module)
                     << (with_lengths ? " with lengths" : "") << (with_state ? " with h0" : ""));
                const Tensor x = rand64(spec.batch_first ? Shape{B, T, I} : Shape{T, B, I}, seed++);
                Inputs inputs{x, with_state ? rand64({spec.num_layers * D, B, P}, seed++) : Tensor(),
                              with_state && spec.kind == "LSTM" ? rand64({spec.num_layers * D, B, H}, seed++)
                                                                : Tensor()};
                const Tensor len = with_lengths ? lengths : Tensor();
                auto fn = [&](const Inputs& in) {
                    return flat_results(layer.forward(in[0], in[1], in[2], len));
                };
                Inputs checked;
                for (const Tensor& t : inputs)
                    if (t.defined()) checked.push_back(t);
                auto wrapped = [&](const Inputs& in) {
                    Inputs full = inputs;
                    std::size_t k = 0;
                    for (Tensor& t : full)
                        if (t.defined()) t = in[k++];
                    return fn(full);
                };
                CHECK_GRADCHECK(wrapped, testing::with_parameters(*layer.module, checked));
            }
    }
}

TEST_CASE(
    "variable lengths: zeros past each length, h_n at each sequence's own last step, as running it alone") {
    for (const char* kind : {"RNN", "GRU", "LSTM"}) {
        INFO(kind);
        Generator gen(3);
        AnyLayer layer = make_layer(
            {.kind = kind, .input_size = 2, .hidden_size = 3, .num_layers = 2, .bidirectional = true}, gen);
        const Tensor x = rand64({3, 5, 2}, 4).detach();
        const std::vector<std::int64_t> lens{5, 2, 4};
        const auto r = layer.forward(x, Tensor(), Tensor(), index_tensor(lens, {3}));
        for (std::int64_t b = 0; b < 3; ++b) {
            const std::int64_t len = lens[static_cast<std::size_t>(b)];
            // the sequence cut to its length, run alone, gives the same steps and states
            const Tensor alone_x = narrow(narrow(x, 0, b, 1), 1, 0, len);
            const auto alone = layer.forward(alone_x, Tensor(), Tensor(), Tensor());
            CHECK(testing::max_abs_diff(narrow(narrow(r.output, 0, b, 1), 1, 0, len), alone.output) < 1e-14);
            CHECK(testing::max_abs_diff(narrow(r.h_n, 1, b, 1), alone.h_n) < 1e-14);
            if (r.c_n.defined()) CHECK(testing::max_abs_diff(narrow(r.c_n, 1, b, 1), alone.c_n) < 1e-14);
            if (len < 5) CHECK(sum(abs(narrow(narrow(r.output, 0, b, 1), 1, len, 5 - len))).item() == 0.0);
        }
    }
}

TEST_CASE(
    "lengths_from_padding_mask counts the leading steps and refuses padding in the middle or whole rows") {
    const Tensor mask =
        testing::bool_mask({3, 4}, [](std::int64_t row, std::int64_t col) { return col >= 4 - row; });
    CHECK(nn::lengths_from_padding_mask(mask).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{4, 3, 2});
    CHECK(nn::lengths_from_padding_mask(mask).dtype() == DType::Int64);
    const Tensor hole =
        testing::bool_mask({2, 3}, [](std::int64_t row, std::int64_t col) { return row == 1 && col == 1; });
    CHECK_THROWS_WITH_AS(nn::lengths_from_padding_mask(hole),
                         doctest::Contains("row 1 of key_padding_mask [2, 3]"), ValueError);
    const Tensor empty_row =
        testing::bool_mask({2, 3}, [](std::int64_t row, std::int64_t) { return row == 0; });
    CHECK_THROWS_WITH_AS(nn::lengths_from_padding_mask(empty_row),
                         doctest::Contains("row 0 of key_padding_mask [2, 3] is all padding"), ValueError);
    CHECK_THROWS_WITH_AS(nn::lengths_from_padding_mask(zeros({2, 3})), doctest::Contains("must be bool"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(nn::lengths_from_padding_mask(zeros({3}, {.dtype = DType::Bool})),
                         doctest::Contains("must be [B, T], got [3]"), ShapeError);
}

TEST_CASE("parameters are named, shaped and initialised as PyTorch's") {
    Generator gen(5);
    nn::LSTM lstm({.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true, .proj_size = 2},
                  gen);
    std::vector<std::string> names;
    for (const auto& [name, p] : lstm.named_parameters()) names.push_back(name);
    const std::vector<std::string> expected{
        "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",           "bias_hh_l0",
        "weight_hr_l0",         "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
        "bias_hh_l0_reverse",   "weight_hr_l0_reverse", "weight_ih_l1",         "weight_hh_l1",
        "bias_ih_l1",           "bias_hh_l1",           "weight_hr_l1",         "weight_ih_l1_reverse",
        "weight_hh_l1_reverse", "bias_ih_l1_reverse",   "bias_hh_l1_reverse",   "weight_hr_l1_reverse"};
    CHECK(names == expected);
    const auto state = lstm.state_dict();
    CHECK(state.at("weight_ih_l0").shape() == Shape{16, 3});
    CHECK(state.at("weight_hh_l0").shape() == Shape{16, 2});
    CHECK(state.at("weight_hr_l0").shape() == Shape{2, 4});
    CHECK(state.at("weight_ih_l1_reverse").shape() == Shape{16, 4});
    CHECK(state.at("bias_hh_l1").shape() == Shape{16});
    Generator gen2(6);
    nn::GRU gru({.input_size = 64, .hidden_size = 100, .bias = false}, gen2);
    CHECK(gru.named_parameters().size() == 2);
    // U(-1/sqrt(H), 1/sqrt(H)): every value inside, spread over the interval (mean ~0, variance bound^2 / 3)
    const auto values = gru.state_dict().at("weight_ih_l0").to_vector<double>();
    double mean = 0, square = 0, largest = 0;
    for (const double v : values) {
        mean += v;
        square += v * v;
        largest = std::max(largest, std::abs(v));
    }
    mean /= static_cast<double>(values.size());
    square /= static_cast<double>(values.size());
    CHECK(largest <= 0.1);
    CHECK(largest > 0.099);
    CHECK(std::abs(mean) < 0.002);
    CHECK(std::abs(square - 0.01 / 3) < 0.0003);
}

TEST_CASE("dropout acts between layers in training mode only, from the module's generator") {
    Generator gen(7);
    nn::GRU gru({.input_size = 3, .hidden_size = 8, .num_layers = 2, .dropout = 0.5, .dtype = DType::Float64},
                gen);
    const Tensor x = rand64({2, 4, 3}, 8).detach();
    gru.eval();
    const Tensor eval_out = gru.forward(x).output;
    CHECK(testing::max_abs_diff(gru.forward(x).output, eval_out) == 0.0);
    gru.train();
    const Tensor train_out = gru.forward(x).output;
    CHECK(testing::max_abs_diff(train_out, eval_out) > 1e-3);
    // one layer: nothing to drop between
    Generator gen2(9);
    nn::GRU single({.input_size = 3, .hidden_size = 8, .dropout = 0.5, .dtype = DType::Float64}, gen2);
    const Tensor a = single.forward(x).output;
    single.eval();
    CHECK(testing::max_abs_diff(single.forward(x).output, a) == 0.0);
}

TEST_CASE("layouts: batch_first=false and unbatched input give the batch-first results") {
    Generator gen(11), gen2(11);
    nn::LSTM first({.input_size = 2, .hidden_size = 3, .bidirectional = true, .dtype = DType::Float64}, gen);
    nn::LSTM second({.input_size = 2,
                     .hidden_size = 3,
                     .batch_first = false,
                     .bidirectional = true,
                     .dtype = DType::Float64},
                    gen2);
    const Tensor x = rand64({2, 4, 2}, 12).detach();
    const auto a = first.forward(x);
    const auto b = second.forward(transpose(x, 0, 1));
    CHECK(testing::max_abs_diff(transpose(b.output, 0, 1), a.output) == 0.0);
    CHECK(testing::max_abs_diff(b.h_n, a.h_n) == 0.0);
    const auto one = first.forward(select(x, 0, 1));
    CHECK(one.output.shape() == Shape{4, 6});
    CHECK(one.h_n.shape() == Shape{2, 3});
    CHECK(one.c_n.shape() == Shape{2, 3});
    CHECK(testing::max_abs_diff(one.output, select(a.output, 0, 1)) < 1e-15);
    CHECK(testing::max_abs_diff(one.c_n, select(a.c_n, 1, 1)) < 1e-15);
}

TEST_CASE("float32 layers agree with float64 ones") {
    Generator gen(13);
    nn::LSTM lstm({.input_size = 5, .hidden_size = 6, .num_layers = 2, .bidirectional = true, .proj_size = 3},
                  gen);
    const Tensor x = rand64({3, 7, 5}, 14).detach();
    const Tensor x32 = to_dtype(x, DType::Float32).requires_grad_();
    const auto r32 = lstm.forward(x32, Tensor(), Tensor(), index_tensor({7, 3, 5}, {3}));
    sum(r32.output * r32.output).backward();
    const Tensor g32 = x32.grad();
    lstm.to(DType::Float64);
    CHECK(lstm.options().dtype == DType::Float64);
    const Tensor x64 = x.detach().requires_grad_();
    const auto r64 = lstm.forward(x64, Tensor(), Tensor(), index_tensor({7, 3, 5}, {3}));
    sum(r64.output * r64.output).backward();
    CHECK(scaled_diff(to_dtype(r32.output, DType::Float64), r64.output) < 1e-5);
    CHECK(scaled_diff(to_dtype(r32.c_n, DType::Float64), r64.c_n) < 1e-5);
    CHECK(scaled_diff(to_dtype(g32, DType::Float64), x64.grad()) < 1e-5);
}

TEST_CASE("recurrent layers print their options as PyTorch does") {
    Generator gen(15);
    CHECK(fmt::format("{}",
                      nn::GRU({.input_size = 64, .hidden_size = 128, .num_layers = 2, .bidirectional = true},
                              gen)) == "GRU(64, 128, num_layers=2, bidirectional=true)");
    CHECK(fmt::format("{}", nn::LSTM({.input_size = 4, .hidden_size = 8, .proj_size = 2}, gen)) ==
          "LSTM(4, 8, proj_size=2)");
    CHECK(fmt::format("{}", nn::RNN({.input_size = 4,
                                     .hidden_size = 8,
                                     .nonlinearity = nn::RNNNonlinearity::Relu,
                                     .bias = false,
                                     .batch_first = false,
                                     .dropout = 0.25},
                                    gen)) ==
          "RNN(4, 8, nonlinearity=relu, bias=false, batch_first=false, dropout=0.25)");
}

TEST_CASE(
    "recurrent layers refuse bad options and bad input, naming the module, the argument and the shapes") {
    Generator gen(16);
    CHECK_THROWS_WITH_AS(
        nn::GRU({.input_size = 4, .hidden_size = 0}, gen),
        doctest::Contains("GRU: input_size, hidden_size and num_layers must be >= 1, got 4, 0 and 1"),
        ValueError);
    CHECK_THROWS_WITH_AS(nn::RNN({.input_size = 4, .hidden_size = 3, .num_layers = 0}, gen),
                         doctest::Contains("RNN: input_size, hidden_size and num_layers"), ValueError);
    CHECK_THROWS_WITH_AS(nn::LSTM({.input_size = 4, .hidden_size = 3, .proj_size = 3}, gen),
                         doctest::Contains("LSTM: proj_size must be in [0, hidden_size = 3), got 3"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::LSTM({.input_size = 4, .hidden_size = 3, .proj_size = -1}, gen),
                         doctest::Contains("LSTM: proj_size"), ValueError);
    CHECK_THROWS_WITH_AS(nn::GRU({.input_size = 4, .hidden_size = 3, .dropout = 1.0}, gen),
                         doctest::Contains("GRU: dropout must be in [0, 1), got 1"), ValueError);
    CHECK_THROWS_WITH_AS(nn::GRU({.input_size = 4, .hidden_size = 3, .dropout = -0.1}, gen),
                         doctest::Contains("GRU: dropout must be in [0, 1), got -0.1"), ValueError);
    CHECK_THROWS_WITH_AS(nn::GRU({.input_size = 4, .hidden_size = 3, .dtype = DType::Int64}, gen),
                         doctest::Contains("GRU: dtype must be float32 or float64"), DTypeError);
    // Sizes too large: refused before any tensor is drawn, naming the option and the real shapes.
    const std::int64_t huge = std::int64_t{1} << 62, big = std::int64_t{1} << 40;
    CHECK_THROWS_WITH_AS(nn::GRU({.input_size = 3, .hidden_size = huge}, gen),
                         doctest::Contains("GRU: hidden_size 4611686018427387904 makes weight_ih_l0 [3 * "
                                           "4611686018427387904, ...], which has too many elements"),
                         ResourceError);
    CHECK_THROWS_WITH_AS(nn::GRUCell({.input_size = 3, .hidden_size = huge}),
                         doctest::Contains("GRUCell: hidden_size 4611686018427387904 makes weight_ih"),
                         ResourceError);
    CHECK_THROWS_WITH_AS(nn::GRU({.input_size = 3, .hidden_size = big}, gen),
                         doctest::Contains("weight_ih_l0 [3298534883328, 3]"), ResourceError);
    // Each layer fits, all of them together do not (about 1.2 TiB): refused before the first is drawn.
    CHECK_THROWS_WITH_AS(
        nn::GRU({.input_size = 3,
                 .hidden_size = 4096,
                 .num_layers = 1024,
                 .bidirectional = true,
                 .dtype = DType::Float64},
                gen),
        doctest::Contains("GRU: input_size 3 and hidden_size 4096 with num_layers 1024 makes "),
        ResourceError);
    CHECK_THROWS_WITH_AS(nn::RNN({.input_size = 3, .hidden_size = 4, .num_layers = 1025}, gen),
                         doctest::Contains("RNN: num_layers must be at most 1024, got 1025"), ValueError);

    nn::GRU gru({.input_size = 4, .hidden_size = 3, .num_layers = 2, .dtype = DType::Float64}, gen);
    const Tensor x = zeros({2, 5, 4}, {.dtype = DType::Float64});
    CHECK_THROWS_WITH_AS(
        gru.forward(zeros({2, 5, 6}, {.dtype = DType::Float64})),
        doctest::Contains("GRU: input must be [B, T, input_size] with input_size 4, got [2, 5, 6]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(gru.forward(zeros({1, 2, 5, 4}, {.dtype = DType::Float64})),
                         doctest::Contains("GRU: input must be [B, T, input_size] or unbatched"), ShapeError);
    CHECK_THROWS_WITH_AS(gru.forward(zeros({2, 0, 4}, {.dtype = DType::Float64})),
                         doctest::Contains("GRU: input [2, 0, 4] has no sequences or no steps"), ShapeError);
    CHECK_THROWS_WITH_AS(gru.forward(zeros({2, 5, 4})), doctest::Contains("GRU: input is float32 [2, 5, 4]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(gru.forward(x, zeros({1, 2, 3}, {.dtype = DType::Float64})),
                         doctest::Contains("GRU: h0 must be [2, 2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(gru.forward(x, zeros({2, 2, 3})), doctest::Contains("GRU: h0 is float32 [2, 2, 3]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(
        gru.forward(x, Tensor(), index_tensor({5, 5, 5}, {3})),
        doctest::Contains("GRU: lengths must be [2] (one per sequence of input [2, 5, 4]), got [3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(gru.forward(x, Tensor(), index_tensor({5, 6}, {2})),
                         doctest::Contains("GRU: lengths[1] = 6 is outside [1, 5] (input [2, 5, 4])"),
                         ValueError);
    CHECK_THROWS_WITH_AS(gru.forward(x, Tensor(), index_tensor({-1, 5}, {2})),
                         doctest::Contains("GRU: lengths[0] = -1 is outside [1, 5]"), ValueError);
    CHECK_THROWS_WITH_AS(gru.forward(x, Tensor(), index_tensor({3, 0}, {2})),
                         doctest::Contains("GRU: lengths[1] is 0 (input [2, 5, 4]): zero-length sequences"),
                         ValueError);
    CHECK_THROWS_WITH_AS(gru.forward(x, Tensor(), zeros({2}, {.dtype = DType::Float64})),
                         doctest::Contains("GRU: lengths must be int64, got float64 [2]"), DTypeError);
    CHECK_THROWS_WITH_AS(
        gru.forward(zeros({5, 4}, {.dtype = DType::Float64}), Tensor(), index_tensor({5}, {1})),
        doctest::Contains("GRU: lengths need a batched input, got unbatched input [5, 4]"), ValueError);
    CHECK_THROWS_WITH_AS(
        gru.forward(zeros({5, 4}, {.dtype = DType::Float64}), zeros({2, 1, 3}, {.dtype = DType::Float64})),
        doctest::Contains("GRU: h0 must be [2, 3]"), ShapeError);

    nn::LSTM lstm(
        {.input_size = 4, .hidden_size = 3, .bidirectional = true, .proj_size = 2, .dtype = DType::Float64},
        gen);
    CHECK_THROWS_WITH_AS(lstm.forward(x, zeros({2, 2, 3}, {.dtype = DType::Float64})),
                         doctest::Contains("LSTM: h0 must be [2, 2, 2]"), ShapeError);
    CHECK_THROWS_WITH_AS(
        lstm.forward(x, Tensor(), zeros({2, 2, 2}, {.dtype = DType::Float64})),
        doctest::Contains("LSTM: c0 must be [2, 2, 3] ([num_layers * num_directions, B, 3]), got [2, 2, 2]"),
        ShapeError);
}
