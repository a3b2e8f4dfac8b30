// nn layers and the Module base: names, state_dict, modes, dtype conversion, gradcheck of
// every layer, values against PyTorch, initialisation, printing and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <algorithm>
#include <cmath>
#include <set>

using namespace attograd;
using testing::fixture_tensor;
using testing::max_abs_diff;
using testing::rand64;
using Inputs = std::vector<Tensor>;

namespace {

// The nested model whose names gen_nn.py takes from the same structure in PyTorch.
struct Block : nn::Module {
    std::shared_ptr<nn::Linear> proj;
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<nn::Dropout> drop;
    explicit Block(Generator& gen) {
        proj = register_module("proj", std::make_shared<nn::Linear>(
                                           nn::LinearOptions{.in_features = 4, .out_features = 4}, gen));
        norm = register_module(
            "norm", std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {4}}));
        drop = register_module("drop", std::make_shared<nn::Dropout>(nn::DropoutOptions{.p = 0.1}, gen));
    }
    std::string type_name() const override { return "Block"; }
    Tensor forward(const Tensor& x) const { return norm->forward(drop->forward(proj->forward(x))); }
};

struct Model : nn::Module {
    std::shared_ptr<nn::Embedding> embed;
    std::shared_ptr<nn::Sequential> layers;
    std::shared_ptr<nn::Linear> head;
    explicit Model(Generator& gen) {
        register_buffer("position", arange(0.0, 8.0));
        embed = register_module(
            "embed",
            std::make_shared<nn::Embedding>(
                nn::EmbeddingOptions{.num_embeddings = 10, .embedding_dim = 4, .padding_idx = 0}, gen));
        layers = register_module("layers", std::make_shared<nn::Sequential>(std::make_shared<Block>(gen),
                                                                            std::make_shared<Block>(gen)));
        head = register_module(
            "head", std::make_shared<nn::Linear>(
                        nn::LinearOptions{.in_features = 4, .out_features = 10, .bias = false}, gen));
    }
    std::string type_name() const override { return "Model"; }
};

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
    std::vector<std::string> out;
    for (const auto& [name, t] : named) out.push_back(name);
    return out;
}

// Copies a PyTorch fixture's "param.<name>" tensors into the module.
void load_fixture_params(nn::Module& module, const nlohmann::json& c) {
    nn::StateDict state;
    for (const auto& [name, t] : module.named_parameters())
        state[name] = fixture_tensor(c.at("param." + name));
    module.load_state_dict(state);
}

// Runs the layer on the fixture's x, backpropagates sum(out * r) and compares the output and
// every gradient with PyTorch's.
template <class Layer>
void check_against_fixture(Layer& layer, const std::string& name) {
    const auto c = testing::load_fixture("nn").at("cases").at(name);
    layer.to(DType::Float64);
    load_fixture_params(layer, c);
    Tensor x = fixture_tensor(c.at("x")).requires_grad_();
    const Tensor out = layer.forward(x);
    CHECK(max_abs_diff(out, fixture_tensor(c.at("out"))) < 1e-12);
    sum(out * fixture_tensor(c.at("r"))).backward();
    CHECK(max_abs_diff(x.grad(), fixture_tensor(c.at("grad_x"))) < 1e-12);
    for (const auto& [pname, p] : layer.named_parameters()) {
        INFO(name << " parameter " << pname);
        CHECK(max_abs_diff(p.grad(), fixture_tensor(c.at("grad." + pname))) < 1e-12);
    }
}

// Gradcheck of `forward` with respect to x and every parameter of the (float64) module.
template <class Layer>
void check_layer_gradients(const Layer& layer, const Tensor& x) {
    Inputs inputs{x};
    for (const Tensor& p : layer.parameters()) inputs.push_back(p);
    auto fn = [&layer](const Inputs& in) { return layer.forward(in[0]); };
    CHECK_GRADCHECK(fn, inputs);
}

}  // namespace

TEST_CASE("named_parameters and state_dict keys are PyTorch's for a nested model") {
    Generator gen(1);
    Model model(gen);
    const auto keys = testing::load_fixture("nn").at("cases").at("model_keys");
    CHECK(names_of(model.named_parameters()) == keys.at("named_parameters").get<std::vector<std::string>>());
    std::set<std::string> state_keys;
    for (const auto& [name, t] : model.state_dict()) state_keys.insert(name);
    const auto torch_keys = keys.at("state_dict").get<std::vector<std::string>>();
    CHECK(state_keys == std::set<std::string>(torch_keys.begin(), torch_keys.end()));
    CHECK(names_of(model.named_parameters(false)).empty());
    CHECK(names_of(model.named_buffers()) == std::vector<std::string>{"position"});
    CHECK(model.parameters().size() == 10);
    // The state_dict shares storage with the parameters.
    CHECK(model.state_dict().at("head.weight").raw_data() == model.head->weight().raw_data());
    std::vector<std::string> modules;
    for (const auto& [name, m] : model.named_modules()) modules.push_back(name);
    CHECK(modules == std::vector<std::string>{"", "embed", "layers", "layers.0", "layers.0.proj",
                                              "layers.0.norm", "layers.0.drop", "layers.1", "layers.1.proj",
                                              "layers.1.norm", "layers.1.drop", "head"});
}

TEST_CASE("load_state_dict copies values and rejects missing, unexpected, misshapen and mistyped tensors") {
    Generator gen(2);
    Model a(gen), b(gen);
    CHECK(max_abs_diff(a.head->weight(), b.head->weight()) > 0);
    b.load_state_dict(a.state_dict());
    for (const auto& [name, t] : a.state_dict()) CHECK(max_abs_diff(t, b.state_dict().at(name)) == 0);
    // The copy is by value: changing a afterwards leaves b alone.
    a.head->weight().data<float>()[0] += 1.0f;
    CHECK(max_abs_diff(a.head->weight(), b.head->weight()) == doctest::Approx(1.0));

    const Tensor before = clone(b.head->weight().detach());
    nn::StateDict missing = a.state_dict();
    missing.erase("layers.1.norm.bias");
    missing.erase("position");
    CHECK_THROWS_WITH_AS(b.load_state_dict(missing),
                         doctest::Contains("missing keys [layers.1.norm.bias, position]"), ValueError);
    nn::StateDict unexpected = a.state_dict();
    unexpected["layers.2.proj.weight"] = zeros({4, 4});
    CHECK_THROWS_WITH_AS(b.load_state_dict(unexpected),
                         doctest::Contains("unexpected keys [layers.2.proj.weight]"), ValueError);
    // Only the list that has keys is named (no empty "missing keys []").
    CHECK_THROWS_WITH_AS(b.load_state_dict(unexpected),
                         doctest::Contains("Model: unexpected keys [layers.2.proj.weight]"), ValueError);
    try {
        b.load_state_dict(missing);
        FAIL("a state dict with missing keys was loaded");
    } catch (const ValueError& e) {
        CHECK(std::string(e.what()).find("unexpected keys") == std::string::npos);
    }
    nn::StateDict misshapen = a.state_dict();
    misshapen["layers.0.proj.weight"] = zeros({4, 5});
    CHECK_THROWS_WITH_AS(b.load_state_dict(misshapen),
                         doctest::Contains("'layers.0.proj.weight' has shape [4, 5]"), ShapeError);
    nn::StateDict mistyped = a.state_dict();
    mistyped["embed.weight"] = zeros({10, 4}, {.dtype = DType::Int64});
    CHECK_THROWS_WITH_AS(b.load_state_dict(mistyped), doctest::Contains("'embed.weight' has dtype int64"),
                         DTypeError);
    nn::StateDict undefined = a.state_dict();
    undefined["layers.1.norm.bias"] = Tensor{};
    CHECK_THROWS_WITH_AS(b.load_state_dict(undefined),
                         doctest::Contains("load_state_dict: 'layers.1.norm.bias' is an undefined tensor"),
                         ValueError);
    // Every failed load left b unchanged, even though the other tensors were fine.
    CHECK(max_abs_diff(b.head->weight(), before) == 0);
    // Non-strict loading skips the missing names.
    missing["head.weight"] = zeros({10, 4});
    b.load_state_dict(missing, false);
    CHECK(max_abs_diff(b.head->weight(), zeros({10, 4})) == 0);
}

TEST_CASE("train and eval reach every submodule, dropout follows the mode") {
    Generator gen(3);
    Model model(gen);
    const auto all_training = [&](bool expected) {
        for (const auto& [name, m] : model.named_modules())
            if (m->is_training() != expected) return false;
        return true;
    };
    CHECK(all_training(true));
    model.eval();
    CHECK(all_training(false));
    const Tensor x = randn({8, 4}, gen);
    const auto block = std::static_pointer_cast<Block>(model.layers->at(0));
    CHECK(max_abs_diff(block->drop->forward(x), x) == 0);  // eval: dropout is the identity
    model.train();
    CHECK(max_abs_diff(block->drop->forward(x), x) > 0);
    CHECK(all_training(true));
    model.layers->train(false);
    CHECK(model.is_training());
    CHECK_FALSE(model.layers->at(1)->is_training());
    CHECK(model.head->is_training());
}

TEST_CASE("Module::to converts every parameter and buffer in place") {
    Generator gen(4);
    Model model(gen);
    const Tensor w32 = clone(model.head->weight().detach());
    sum(model.head->forward(ones({2, 4}))).backward();
    CHECK(model.head->weight().grad().defined());
    model.to(DType::Float64);
    for (const auto& [name, t] : model.state_dict()) {
        INFO(name);
        CHECK(t.dtype() == DType::Float64);
    }
    // The layer's own handle sees the conversion; values are converted exactly; grads dropped.
    CHECK(model.head->weight().dtype() == DType::Float64);
    CHECK(max_abs_diff(model.head->weight(), to_dtype(w32, DType::Float64)) == 0);
    CHECK_FALSE(model.head->weight().grad().defined());
    CHECK(model.head->weight().requires_grad());
    CHECK(model.head->forward(ones({2, 4}, {.dtype = DType::Float64})).dtype() == DType::Float64);
    CHECK_THROWS_WITH_AS(model.to(DType::Int64), doctest::Contains("not a float dtype"), DTypeError);
}

TEST_CASE("after Module::to every layer follows its parameters' new dtype: options, checks and masks") {
    // Layers that keep a dtype in their options (Linear, Embedding, LayerNorm,
    // MultiHeadAttention) must check inputs and build masks in the converted dtype.
    Generator gen(5);
    auto linear = std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = 4, .out_features = 3}, gen);
    auto embedding =
        std::make_shared<nn::Embedding>(nn::EmbeddingOptions{.num_embeddings = 5, .embedding_dim = 4}, gen);
    auto norm = std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {4}});
    auto global = std::make_shared<nn::MultiHeadAttention>(
        nn::MultiHeadAttentionOptions{.embed_dim = 4, .num_heads = 2}, gen);
    auto local = std::make_shared<nn::MultiHeadAttention>(
        nn::MultiHeadAttentionOptions{
            .embed_dim = 4, .num_heads = 2, .scoring = {.local = nn::LocalMode::Predictive, .window = 1}},
        gen);
    for (const DType dtype : {DType::Float64, DType::Float32}) {
        CAPTURE(dtype);
        for (nn::Module* m : std::initializer_list<nn::Module*>{linear.get(), embedding.get(), norm.get(),
                                                                global.get(), local.get()})
            m->to(dtype);
        CHECK(linear->options().dtype == dtype);
        CHECK(embedding->options().dtype == dtype);
        CHECK(norm->options().dtype == dtype);
        CHECK(global->options().dtype == dtype);
        const Tensor x = randn({2, 3, 4}, gen, {.dtype = dtype});
        CHECK(linear->forward(x).dtype() == dtype);
        CHECK(embedding->forward(index_tensor({0, 4, 2}, {3})).dtype() == dtype);
        CHECK(norm->forward(x).dtype() == dtype);
        const Tensor padding = tensor({0.0, 0.0, 1.0, 0.0, 0.0, 0.0}, {2, 3}, {.dtype = DType::Bool});
        for (const auto& mha : {global, local}) {
            const auto res = mha->forward(x, {.key_padding_mask = padding, .is_causal = true});
            CHECK(res.output.dtype() == dtype);
            CHECK(res.weights.dtype() == dtype);
            CHECK(all_finite(res.output));
            const DType other = dtype == DType::Float32 ? DType::Float64 : DType::Float32;
            CHECK_THROWS_AS(mha->forward(randn({2, 3, 4}, gen, {.dtype = other})), DTypeError);
        }
    }
    // And the converted layer trains: float64 gradcheck through the whole of it.
    global->to(DType::Float64);
    auto run = [&](const std::vector<Tensor>& in) {
        return global->forward(in[0], {.need_weights = false}).output;
    };
    CHECK_GRADCHECK(run, std::vector<Tensor>{rand64({2, 3, 4}, 6)});
}

TEST_CASE("Linear matches PyTorch (values and gradients), with and without bias") {
    nn::Linear with_bias({.in_features = 4, .out_features = 5});
    check_against_fixture(with_bias, "linear");
    nn::Linear without_bias({.in_features = 3, .out_features = 2, .bias = false});
    CHECK(names_of(without_bias.named_parameters()) == std::vector<std::string>{"weight"});
    check_against_fixture(without_bias, "linear_no_bias");
}

TEST_CASE("LayerNorm matches PyTorch, affine over two dims and plain") {
    nn::LayerNorm affine({.normalized_shape = {3, 4}});
    check_against_fixture(affine, "layer_norm");
    nn::LayerNorm plain({.normalized_shape = {4}, .eps = 1e-3, .elementwise_affine = false});
    CHECK(plain.parameters().empty());
    check_against_fixture(plain, "layer_norm_plain");
}

TEST_CASE("every layer passes float64 gradcheck with respect to its input and parameters") {
    Generator gen(5);
    SUBCASE("Linear") {
        for (bool bias : {true, false}) {
            nn::Linear layer({.in_features = 3, .out_features = 4, .bias = bias, .dtype = DType::Float64},
                             gen);
            check_layer_gradients(layer, rand64({2, 5, 3}, 6));
            check_layer_gradients(layer, rand64({3}, 7));
        }
    }
    SUBCASE("LayerNorm") {
        nn::LayerNorm affine({.normalized_shape = {2, 3}, .dtype = DType::Float64});
        // Move the parameters away from 1 and 0 so their gradients are exercised in general.
        affine.load_state_dict(
            {{"weight", rand64({2, 3}, 8).detach()}, {"bias", rand64({2, 3}, 9).detach()}});
        check_layer_gradients(affine, rand64({4, 2, 3}, 10));
        nn::LayerNorm no_bias({.normalized_shape = {5}, .bias = false, .dtype = DType::Float64});
        CHECK(names_of(no_bias.named_parameters()) == std::vector<std::string>{"weight"});
        check_layer_gradients(no_bias, rand64({3, 5}, 11));
        nn::LayerNorm plain({.normalized_shape = {5}, .elementwise_affine = false, .dtype = DType::Float64});
        check_layer_gradients(plain, rand64({2, 2, 5}, 12));
    }
    SUBCASE("Embedding (weight)") {
        nn::Embedding layer({.num_embeddings = 5, .embedding_dim = 3, .dtype = DType::Float64}, gen);
        const Tensor ids = index_tensor({0, 4, 4, 2, 1, 4}, {2, 3});
        auto fn = [&](const Inputs&) { return layer.forward(ids); };
        CHECK_GRADCHECK(fn, layer.parameters());
    }
    SUBCASE("Dropout (train mode, the same mask on every call)") {
        Generator mask_gen(13);
        nn::Dropout layer({.p = 0.3}, mask_gen);
        auto fn = [&](const Inputs& in) {
            mask_gen.manual_seed(13);
            return layer.forward(in[0]);
        };
        CHECK_GRADCHECK(fn, Inputs{rand64({4, 5}, 14)});
    }
    SUBCASE("Sequential") {
        nn::Sequential seq(
            std::make_shared<nn::Linear>(
                nn::LinearOptions{.in_features = 3, .out_features = 4, .dtype = DType::Float64}, gen),
            std::make_shared<nn::LayerNorm>(
                nn::LayerNormOptions{.normalized_shape = {4}, .dtype = DType::Float64}),
            std::make_shared<nn::Linear>(
                nn::LinearOptions{.in_features = 4, .out_features = 2, .dtype = DType::Float64}, gen));
        check_layer_gradients(seq, rand64({3, 3}, 15));
    }
}

TEST_CASE("Linear initialisation is PyTorch's U(-1/sqrt(in), 1/sqrt(in)) for weight and bias") {
    Generator gen(16);
    nn::Linear layer({.in_features = 16, .out_features = 256}, gen);
    const double bound = 0.25;
    for (const Tensor& p : layer.parameters()) {
        const auto v = p.to_vector<double>();
        const auto [lo, hi] = std::ranges::minmax(v);
        CHECK(lo >= -bound);
        CHECK(hi < bound);
        CHECK(lo < -0.9 * bound);  // the whole interval is used
        CHECK(hi > 0.9 * bound);
        double mean = 0.0, var = 0.0;
        for (double x : v) mean += x;
        mean /= static_cast<double>(v.size());
        for (double x : v) var += (x - mean) * (x - mean);
        var /= static_cast<double>(v.size());
        // U(-b, b): mean 0, variance b^2 / 3 (4096 weights: the mean's sd is 0.0023).
        if (v.size() > 1000) {
            CHECK(std::abs(mean) < 0.012);
            CHECK(var == doctest::Approx(bound * bound / 3).epsilon(0.1));
        }
    }
    // The same seed gives the same layer; another seed another one.
    Generator same(16), other(17);
    CHECK(max_abs_diff(nn::Linear({.in_features = 16, .out_features = 256}, same).weight(), layer.weight()) ==
          0);
    CHECK(max_abs_diff(nn::Linear({.in_features = 16, .out_features = 256}, other).weight(), layer.weight()) >
          0);
    CHECK(layer.weight().shape() == Shape{256, 16});
    CHECK(layer.bias().shape() == Shape{256});
    CHECK(layer.weight().requires_grad());
}

TEST_CASE("Embedding and LayerNorm initialisation") {
    Generator gen(18);
    nn::Embedding emb({.num_embeddings = 100, .embedding_dim = 100, .padding_idx = -1}, gen);
    CHECK(emb.options().padding_idx == 99);
    const auto v = emb.weight().to_vector<double>();
    double mean = 0.0, var = 0.0;
    for (std::size_t i = 0; i < 9900; ++i) mean += v[i];
    mean /= 9900;
    for (std::size_t i = 0; i < 9900; ++i) var += (v[i] - mean) * (v[i] - mean);
    var /= 9900;
    CHECK(std::abs(mean) < 0.05);  // N(0, 1): the mean's sd is 0.01
    CHECK(var == doctest::Approx(1.0).epsilon(0.05));
    CHECK(std::all_of(v.begin() + 9900, v.end(), [](double e) { return e == 0.0; }));  // the padding row
    nn::LayerNorm norm({.normalized_shape = {2, 3}});
    CHECK(max_abs_diff(norm.weight(), ones({2, 3})) == 0);
    CHECK(max_abs_diff(norm.bias(), zeros({2, 3})) == 0);
}

TEST_CASE("Embedding adds gradients of repeated ids") {
    Generator gen(19);
    nn::Embedding emb({.num_embeddings = 5, .embedding_dim = 2}, gen);
    const Tensor ids = index_tensor({1, 3, 1, 1}, {2, 2});
    const Tensor out = emb.forward(ids);
    CHECK(out.shape() == Shape{2, 2, 2});
    CHECK(out.at({1, 0, 1}) == emb.weight().at({1, 1}));
    sum(out).backward();
    const Tensor expected = tensor({0, 0, 3, 3, 0, 0, 1, 1, 0, 0}, {5, 2});
    CHECK(max_abs_diff(emb.weight().grad(), expected) == 0);
}

TEST_CASE("Embedding padding_idx: PyTorch's values, no gradient into the padding row") {
    const auto c = testing::load_fixture("nn").at("cases").at("embedding");
    nn::Embedding emb({.num_embeddings = 6, .embedding_dim = 3, .padding_idx = 2, .dtype = DType::Float64});
    load_fixture_params(emb, c);  // the fixture's padding row is not zero: its value is still used
    const Tensor out = emb.forward(fixture_tensor(c.at("ids"), DType::Int64));
    CHECK(max_abs_diff(out, fixture_tensor(c.at("out"))) < 1e-15);
    sum(out * fixture_tensor(c.at("r"))).backward();
    CHECK(max_abs_diff(emb.weight().grad(), fixture_tensor(c.at("grad.weight"))) < 1e-12);
    for (std::int64_t j = 0; j < 3; ++j) CHECK(emb.weight().grad().at({2, j}) == 0.0);
    // Without the padding id in the batch the plain lookup is used; the result agrees.
    const Tensor plain = emb.forward(index_tensor({0, 1}, {2}));
    CHECK(plain.at({1, 2}) == emb.weight().at({1, 2}));
}

TEST_CASE("Dropout zeroes about p of the elements while training and is the identity in eval") {
    Generator gen(20);
    nn::Dropout drop({.p = 0.25}, gen);
    const Tensor x = ones({100, 100});
    const auto v = drop.forward(x).to_vector<double>();
    const auto zeros_count = std::ranges::count(v, 0.0);
    CHECK(zeros_count == doctest::Approx(2500).epsilon(0.1));
    CHECK(std::ranges::all_of(v, [](double e) { return e == 0.0 || std::abs(e - 1.0 / 0.75) < 1e-6; }));
    drop.eval();
    CHECK(max_abs_diff(drop.forward(x), x) == 0);
    nn::Dropout none({.p = 0.0}, gen);
    CHECK(max_abs_diff(none.forward(x), x) == 0);
    // The same seed gives the same mask.
    Generator g1(21), g2(21);
    nn::Dropout d1({}, g1), d2({}, g2);
    CHECK(max_abs_diff(d1.forward(x), d2.forward(x)) == 0);
}

TEST_CASE("Sequential chains its modules and names them 0, 1, ...") {
    Generator gen(22);
    auto first = std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = 3, .out_features = 4}, gen);
    auto second = std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = 4, .out_features = 2}, gen);
    nn::Sequential seq;
    CHECK(seq.push_back(first) == first);
    seq.push_back(std::make_shared<nn::Dropout>(nn::DropoutOptions{.p = 0.5}, gen));
    seq.push_back(second);
    CHECK(seq.size() == 3);
    CHECK(names_of(seq.named_parameters()) ==
          std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
    CHECK(seq.at(2) == second);
    CHECK_THROWS_WITH_AS(seq.at(3), doctest::Contains("index 3 out of range for 3 modules"), IndexError);
    seq.eval();
    const Tensor x = randn({5, 3}, gen);
    CHECK(max_abs_diff(seq.forward(x), second->forward(first->forward(x))) == 0);
    // Nested and empty.
    nn::Sequential outer(std::make_shared<nn::Sequential>(first), std::make_shared<nn::Sequential>());
    CHECK(names_of(outer.named_parameters()) == std::vector<std::string>{"0.0.weight", "0.0.bias"});
    CHECK(max_abs_diff(nn::Sequential().forward(x), x) == 0);
    CHECK_THROWS_WITH_AS(seq.push_back(std::shared_ptr<nn::Linear>()), doctest::Contains("null module"),
                         ValueError);
}

TEST_CASE("ModuleList names its modules 0, 1, ... and holds any module") {
    Generator gen(23);
    auto linear = std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = 3, .out_features = 4}, gen);
    auto norm = std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {4}});
    nn::ModuleList list;
    CHECK(list.push_back(linear) == linear);
    list.push_back(norm);
    CHECK(list.size() == 2);
    CHECK(names_of(list.named_parameters()) ==
          std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
    CHECK(list.at(1) == norm);
    CHECK_THROWS_WITH_AS(list.at(2), doctest::Contains("ModuleList::at: index 2 out of range for 2 modules"),
                         IndexError);
    CHECK_THROWS_WITH_AS(list.push_back(std::shared_ptr<nn::Linear>()), doctest::Contains("null module"),
                         ValueError);
    list.eval();
    CHECK_FALSE(linear->is_training());
    CHECK(nn::to_string(list).starts_with("ModuleList(\n  (0): Linear("));
}

TEST_CASE("layers print as PyTorch does") {
    Generator gen(23);
    CHECK(fmt::format("{}", nn::Linear({.in_features = 4, .out_features = 8}, gen)) ==
          "Linear(in_features=4, out_features=8, bias=true)");
    CHECK(
        fmt::format("{}", nn::Embedding({.num_embeddings = 10, .embedding_dim = 3, .padding_idx = 0}, gen)) ==
        "Embedding(num_embeddings=10, embedding_dim=3, padding_idx=0)");
    CHECK(fmt::format("{}", nn::LayerNorm({.normalized_shape = {4}})) ==
          "LayerNorm(normalized_shape=[4], eps=1e-05, elementwise_affine=true)");
    CHECK(fmt::format("{}", nn::Dropout({.p = 0.1}, gen)) == "Dropout(p=0.1)");
    nn::Sequential seq(std::make_shared<nn::Linear>(
                           nn::LinearOptions{.in_features = 2, .out_features = 3, .bias = false}, gen),
                       std::make_shared<nn::Dropout>());
    CHECK(fmt::format("{}", seq) ==
          "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=false)\n  (1): Dropout(p=0.5)\n)");
}

TEST_CASE("layers reject bad options and bad input") {
    Generator gen(24);
    CHECK_THROWS_WITH_AS(nn::Linear({.in_features = -1, .out_features = 2}),
                         doctest::Contains("Linear: in_features"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Linear({.in_features = 2, .out_features = 2, .dtype = DType::Int64}),
                         doctest::Contains("Linear: dtype"), DTypeError);
    nn::Linear layer({.in_features = 3, .out_features = 2}, gen);
    CHECK_THROWS_WITH_AS(layer.forward(zeros({4, 5})),
                         doctest::Contains("linear: x [4, 5] does not match weight [2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(
        layer.forward(zeros({4, 3}, {.dtype = DType::Float64})),
        doctest::Contains("Linear: input is float64 [4, 3] but the layer's parameters are float32"),
        DTypeError);
    CHECK_THROWS_WITH_AS(nn::Embedding({.num_embeddings = 4, .embedding_dim = 2, .padding_idx = 4}),
                         doctest::Contains("padding_idx 4"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Embedding({.num_embeddings = 4, .embedding_dim = 2, .padding_idx = -5}),
                         doctest::Contains("padding_idx -5"), ValueError);
    nn::Embedding emb({.num_embeddings = 4, .embedding_dim = 2}, gen);
    CHECK_THROWS_AS(emb.forward(index_tensor({1, 4}, {2})), IndexError);
    CHECK_THROWS_AS(emb.forward(zeros({2})), DTypeError);
    CHECK_THROWS_WITH_AS(nn::LayerNorm({.normalized_shape = {}}),
                         doctest::Contains("LayerNorm: normalized_shape"), ValueError);
    CHECK_THROWS_WITH_AS(nn::LayerNorm({.normalized_shape = {3}, .eps = -1.0}),
                         doctest::Contains("LayerNorm: eps"), ValueError);
    nn::LayerNorm norm({.normalized_shape = {3}});
    CHECK_THROWS_WITH_AS(
        norm.forward(zeros({3, 4})),
        doctest::Contains("layer_norm: normalized_shape [3] does not match the last dimensions of x [3, 4]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(nn::Dropout({.p = 1.5}), doctest::Contains("Dropout: p must be in [0, 1], got 1.5"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::Dropout({.p = -0.1}), doctest::Contains("Dropout: p"), ValueError);
}

TEST_CASE("a dtype mismatch names the layer and the input, not an inner op") {
    Generator gen(3);
    const Tensor x64 = zeros({2, 3, 4}, {.dtype = DType::Float64});
    nn::Linear linear({.in_features = 4, .out_features = 2}, gen);
    CHECK_THROWS_WITH_AS(
        linear.forward(x64),
        doctest::Contains("Linear: input is float64 [2, 3, 4] but the layer's parameters are float32"),
        DTypeError);
    nn::LayerNorm norm({.normalized_shape = {4}});
    CHECK_THROWS_WITH_AS(norm.forward(x64), doctest::Contains("LayerNorm: input is float64"), DTypeError);
    nn::Embedding embedding({.num_embeddings = 5, .embedding_dim = 4}, gen);
    CHECK_THROWS_WITH_AS(embedding.forward(zeros({2})), doctest::Contains("Embedding: ids must be int64"),
                         DTypeError);
    nn::Attention attention({.query_dim = 4, .project_query = true, .project_key = true}, gen);
    CHECK_THROWS_WITH_AS(
        attention.forward(x64, x64),
        doctest::Contains("Attention: query is float64 [2, 3, 4] but the layer's parameters are float32"),
        DTypeError);
    nn::MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2}, gen);
    CHECK_THROWS_WITH_AS(mha.forward(x64), doctest::Contains("MultiHeadAttention: query is float64"),
                         DTypeError);
    // after Module::to the same input is accepted
    linear.to(DType::Float64);
    CHECK(linear.forward(x64).dtype() == DType::Float64);
    attention.to(DType::Float64);
    CHECK(attention.options().dtype == DType::Float64);
    CHECK(attention.forward(x64, x64).output.dtype() == DType::Float64);
}

TEST_CASE("AttentionOptions takes a dtype for every parameter") {
    Generator gen(4);
    nn::Attention attention(
        {.query_dim = 4,
         .scoring = {.score = nn::Score::Additive, .local = nn::LocalMode::Predictive, .window = 2},
         .project_query = true,
         .project_value = true,
         .dtype = DType::Float64},
        gen);
    for (const auto& [name, p] : attention.named_parameters()) {
        CAPTURE(name);
        CHECK(p.dtype() == DType::Float64);
    }
    CHECK(attention.named_parameters().size() >= 7);
    const Tensor x = randn({1, 5, 4}, gen, {.dtype = DType::Float64});
    CHECK(attention.forward(x, x).output.dtype() == DType::Float64);
    CHECK_THROWS_WITH_AS(nn::Attention({.query_dim = 4, .dtype = DType::Int64}, gen),
                         doctest::Contains("Attention: dtype must be float32 or float64"), DTypeError);
    // a parameter-free layer computes in its inputs' dtype
    nn::Attention plain({.query_dim = 4}, gen);
    CHECK(plain.forward(x, x).output.dtype() == DType::Float64);
}

TEST_CASE("load_state_dict converts float64 and float32 as PyTorch's copy_ does") {
    Generator gen(5);
    nn::Linear f32({.in_features = 3, .out_features = 2}, gen);
    nn::Linear f64({.in_features = 3, .out_features = 2, .dtype = DType::Float64}, gen);
    f64.load_state_dict(f32.state_dict());  // float32 -> float64 is exact
    CHECK(f64.weight().dtype() == DType::Float64);
    CHECK(f64.weight().to_vector<double>() == to_dtype(f32.weight(), DType::Float64).to_vector<double>());
    nn::StateDict precise = f64.state_dict();
    precise["bias"] = tensor({0.1, 1e-20}, {2}, {.dtype = DType::Float64});
    f32.load_state_dict(precise);  // float64 -> float32 rounds
    CHECK(f32.bias().dtype() == DType::Float32);
    CHECK(f32.bias().to_vector<float>() == std::vector<float>{0.1f, 1e-20f});
    CHECK(f32.weight().requires_grad());
    nn::StateDict as_bool = f32.state_dict();
    as_bool["bias"] = zeros({2}, {.dtype = DType::Bool});
    CHECK_THROWS_WITH_AS(f32.load_state_dict(as_bool),
                         doctest::Contains("'bias' has dtype bool in the checkpoint"), DTypeError);
}
