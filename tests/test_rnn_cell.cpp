// RNNCell, GRUCell, LSTMCell: PyTorch parity, float64 gradcheck, initialisation, bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>

using namespace attograd;
using testing::rand64;

namespace {

nn::RNNCellOptions opts64(std::int64_t in, std::int64_t hidden, bool bias = true, std::string nl = "tanh") {
    return {.input_size = in,
            .hidden_size = hidden,
            .bias = bias,
            .nonlinearity = std::move(nl),
            .dtype = DType::Float64};
}

void load_params(nn::Module& m, const nlohmann::json& params) {
    nn::StateDict state;
    for (const auto& [name, value] : params.items()) state[name] = testing::fixture_tensor(value);
    m.load_state_dict(state);
}

void check_grads(const nn::Module& m, const nlohmann::json& expected) {
    for (const auto& [name, p] : m.named_parameters()) {
        INFO(name);
        CHECK(testing::max_abs_diff(p.grad(), testing::fixture_tensor(expected.at(name))) < 1e-10);
    }
}

}  // namespace

TEST_CASE("the cells match torch.nn.RNNCell, GRUCell and LSTMCell in float64, values and gradients") {
    const auto fixture = testing::load_fixture("rnn_cells");
    for (const auto& c : fixture.at("cases")) {
        const std::string kind = c.at("cell");
        const bool bias = c.at("bias");
        INFO(kind << " bias " << bias);
        Tensor x = testing::fixture_tensor(c.at("input")).requires_grad_();
        Tensor h = testing::fixture_tensor(c.at("h")).requires_grad_();
        const auto opts = opts64(x.size(1), h.size(1), bias, kind == "rnn_relu" ? "relu" : "tanh");
        const Tensor r = testing::fixture_tensor(c.at("R"));
        if (kind == "lstm") {
            nn::LSTMCell cell(opts);
            load_params(cell, c.at("params"));
            Tensor cs = testing::fixture_tensor(c.at("c")).requires_grad_();
            const auto [h2, c2] = cell.forward(x, {h, cs});
            CHECK(testing::max_abs_diff(h2, testing::fixture_tensor(c.at("h_next"))) < 1e-10);
            CHECK(testing::max_abs_diff(c2, testing::fixture_tensor(c.at("c_next"))) < 1e-10);
            CHECK(testing::max_abs_diff(cell.forward(x).first,
                                        testing::fixture_tensor(c.at("h_from_zeros"))) < 1e-10);
            (sum(h2 * r) + sum(c2 * testing::fixture_tensor(c.at("Rc")))).backward();
            CHECK(testing::max_abs_diff(cs.grad(), testing::fixture_tensor(c.at("grad_c"))) < 1e-10);
            check_grads(cell, c.at("grad_params"));
        } else {
            std::shared_ptr<nn::Module> owner;
            std::function<Tensor(const Tensor&, const Tensor&)> fwd;
            if (kind == "gru") {
                auto cell = std::make_shared<nn::GRUCell>(opts);
                fwd = [cell](const Tensor& a, const Tensor& b) { return cell->forward(a, b); };
                owner = cell;
            } else {
                auto cell = std::make_shared<nn::RNNCell>(opts);
                fwd = [cell](const Tensor& a, const Tensor& b) { return cell->forward(a, b); };
                owner = cell;
            }
            load_params(*owner, c.at("params"));
            const Tensor h2 = fwd(x, h);
            CHECK(testing::max_abs_diff(h2, testing::fixture_tensor(c.at("h_next"))) < 1e-10);
            CHECK(testing::max_abs_diff(fwd(x, Tensor()), testing::fixture_tensor(c.at("h_from_zeros"))) <
                  1e-10);
            sum(h2 * r).backward();
            check_grads(*owner, c.at("grad_params"));
        }
        CHECK(testing::max_abs_diff(x.grad(), testing::fixture_tensor(c.at("grad_input"))) < 1e-10);
        CHECK(testing::max_abs_diff(h.grad(), testing::fixture_tensor(c.at("grad_h"))) < 1e-10);
    }
}

TEST_CASE("every cell passes float64 gradcheck w.r.t. input, state and every parameter") {
    for (const bool bias : {true, false}) {
        INFO("bias " << bias);
        const Tensor x = rand64({3, 4}, 1), h = rand64({3, 5}, 2), c = rand64({3, 5}, 3);
        for (const std::string nl : {"tanh", "relu"}) {
            INFO("RNNCell " << nl);
            nn::RNNCell rnn(opts64(4, 5, bias, nl));
            const auto fn = [&](const std::vector<Tensor>& in) { return rnn.forward(in[0], in[1]); };
            const auto inputs = testing::with_parameters(rnn, {x, h});
            CHECK_GRADCHECK(fn, inputs);
        }
        nn::GRUCell gru(opts64(4, 5, bias));
        const auto gru_fn = [&](const std::vector<Tensor>& in) { return gru.forward(in[0], in[1]); };
        const auto gru_inputs = testing::with_parameters(gru, {x, h});
        CHECK_GRADCHECK(gru_fn, gru_inputs);
        nn::LSTMCell lstm(opts64(4, 5, bias));
        const auto lstm_fn = [&](const std::vector<Tensor>& in) {
            const auto [h2, c2] = lstm.forward(in[0], {in[1], in[2]});
            return concat({h2, c2 * 0.5}, 1);
        };
        const auto lstm_inputs = testing::with_parameters(lstm, {x, h, c});
        CHECK_GRADCHECK(lstm_fn, lstm_inputs);
    }
}

TEST_CASE(
    "cells are initialised as PyTorch's: U(-1/sqrt(H), 1/sqrt(H)), named weight_ih, weight_hh, bias_ih, "
    "bias_hh") {
    Generator gen(4);
    nn::LSTMCell lstm({.input_size = 3, .hidden_size = 16}, gen);
    const double bound = 0.25;
    std::vector<std::string> names;
    for (const auto& [name, p] : lstm.named_parameters()) {
        names.push_back(name);
        const auto v = p.to_vector<double>();
        CHECK(*std::max_element(v.begin(), v.end()) <= bound);
        CHECK(*std::min_element(v.begin(), v.end()) >= -bound);
        CHECK(*std::max_element(v.begin(), v.end()) > 0.8 * bound);  // spans the interval
    }
    CHECK(names == std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih", "bias_hh"});
    CHECK(lstm.weight_ih().shape() == Shape{64, 3});
    CHECK(nn::GRUCell({.input_size = 3, .hidden_size = 4}).weight_hh().shape() == Shape{12, 4});
    CHECK(nn::RNNCell({.input_size = 3, .hidden_size = 4, .bias = false}).parameters().size() == 2);
    CHECK(nn::to_string(nn::RNNCell({.input_size = 3, .hidden_size = 4, .nonlinearity = "relu"})) ==
          "RNNCell(3, 4, nonlinearity=relu)");
}

TEST_CASE("cells take unbatched inputs as PyTorch does: [I] and [H] -> [H]") {
    nn::GRUCell gru(opts64(4, 5));
    const Tensor x = rand64({4}, 1), h = rand64({5}, 2);
    const Tensor one = gru.forward(x, h);
    CHECK(one.shape() == Shape{5});
    CHECK(testing::max_abs_diff(one, reshape(gru.forward(reshape(x, {1, 4}), reshape(h, {1, 5})), {5})) ==
          0.0);
    nn::LSTMCell lstm(opts64(4, 5));
    CHECK(lstm.forward(x).second.shape() == Shape{5});
}

TEST_CASE("cells reject bad options and inputs, naming the cell, the argument and the shapes") {
    CHECK_THROWS_WITH_AS(
        nn::GRUCell({.input_size = 0, .hidden_size = 4}),
        doctest::Contains("GRUCell: input_size and hidden_size must be >= 1, got input_size=0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::RNNCell({.input_size = 2, .hidden_size = 4, .nonlinearity = "sigmoid"}),
                         doctest::Contains("RNNCell: unknown nonlinearity 'sigmoid' (choose tanh or relu)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::LSTMCell({.input_size = 2, .hidden_size = 4, .nonlinearity = "relu"}),
                         doctest::Contains("LSTMCell: unknown nonlinearity 'relu' (choose tanh)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::GRUCell({.input_size = 2, .hidden_size = 4, .dtype = DType::Int64}),
                         doctest::Contains("GRUCell: dtype must be float32 or float64"), DTypeError);
    CHECK_THROWS_WITH_AS(
        nn::LSTMCell({.input_size = std::int64_t{1} << 40, .hidden_size = std::int64_t{1} << 20}),
        doctest::Contains("LSTMCell: input_size 1099511627776 and hidden_size 1048576"), ResourceError);

    nn::GRUCell gru(opts64(4, 5));
    CHECK_THROWS_WITH_AS(
        gru.forward(rand64({2, 3}, 1)),
        doctest::Contains("GRUCell: input must be [B, input_size] = [B, 4] (or unbatched [4]), "
                          "got [2, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(gru.forward(rand64({2, 4}, 1), rand64({3, 5}, 2)),
                         doctest::Contains("GRUCell: hx must be [B, hidden_size] = [2, 5], got [3, 5]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        gru.forward(rand64({4}, 1), rand64({1, 5}, 2)),
        doctest::Contains("GRUCell: hx must be [hidden_size] = [5] for an unbatched input, got [1, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(gru.forward(to_dtype(rand64({2, 4}, 1), DType::Float32)),
                         doctest::Contains("GRUCell: input is float32"), DTypeError);
    nn::LSTMCell lstm(opts64(4, 5));
    CHECK_THROWS_WITH_AS(lstm.forward(rand64({2, 4}, 1), {rand64({2, 5}, 2), rand64({2, 4}, 3)}),
                         doctest::Contains("LSTMCell: hx.c must be [B, hidden_size] = [2, 5], got [2, 4]"),
                         ShapeError);
}
