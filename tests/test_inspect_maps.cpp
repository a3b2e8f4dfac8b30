// inspect's maps from recorder records (every weight layout), cropping, and head knockout.
#include "helpers.hpp"

#include "inspect/knockout.hpp"
#include "inspect/recorded_maps.hpp"

#include <limits>

using namespace testing;
using namespace attograd::nn;
using namespace attograd::inspect;

namespace {

double max_abs(const Tensor& t) {
    double m = 0.0;
    for (const double v : to_dtype(t, DType::Float64).to_vector<double>()) m = std::max(m, std::abs(v));
    return m;
}

std::vector<std::string> tokens(std::int64_t n, const char* prefix) {
    std::vector<std::string> out;
    for (std::int64_t i = 0; i < n; ++i) out.push_back(std::string(prefix).append(std::to_string(i)));
    return out;
}

// A two-layer self-attention stack and a single-head cross-attention, in plain Modules.
struct Stack : Module {
    std::shared_ptr<MultiHeadAttention> first, second;
    std::shared_ptr<Attention> cross;
    explicit Stack(Generator& gen, LocalMode local = LocalMode::None) {
        first = register_module("first", std::make_shared<MultiHeadAttention>(
                                             MultiHeadAttentionOptions{.embed_dim = 8, .num_heads = 4}, gen));
        second = register_module(
            "second", std::make_shared<MultiHeadAttention>(
                          MultiHeadAttentionOptions{
                              .embed_dim = 8, .num_heads = 2, .scoring = {.local = local, .window = 1}},
                          gen));
        cross = register_module("cross", std::make_shared<Attention>(AttentionOptions{.query_dim = 8}, gen));
    }
    std::string type_name() const override { return "Stack"; }
    // x [B, T, 8], y [B, Tq, 8] -> [B, Tq, 8]; asks for no weights itself.
    Tensor forward(const Tensor& x, const Tensor& y) const {
        const Tensor h =
            second->forward(first->forward(x, {.need_weights = false}).output, {.need_weights = false})
                .output;
        return cross->forward(y, h, AttentionArgs{.need_weights = false}).output;
    }
};

}  // namespace

TEST_CASE(
    "maps from a recorder: every head of [B, h, Tq, Tk] and [B, Tq, Tk] records, labelled, in layer order") {
    Generator gen(3);
    const Stack model(gen);
    const Tensor x = randn({2, 5, 8}, gen), y = randn({2, 3, 8}, gen);
    AttentionRecorder recorder(model);
    (void)model.forward(x, y);
    const auto labels = [](const std::string& name) {
        return name == "cross" ? TokenLabels{tokens(3, "y"), tokens(5, "x")}
                               : TokenLabels{tokens(5, "x"), tokens(5, "x")};
    };
    const auto maps = attention_maps(recorder.records(), labels, 1);
    REQUIRE(maps.size() == 4 + 2 + 1);
    const auto w_first = recorder.weights("first")[0].to_vector<float>();  // [2, 4, 5, 5]
    for (std::int64_t head = 0; head < 4; ++head) {
        const auto& map = maps[static_cast<std::size_t>(head)];
        CHECK(map.module == "first");
        CHECK(map.layer == 0);
        CHECK(map.head == head);
        CHECK(map.queries == tokens(5, "x"));
        for (std::int64_t q = 0; q < 5; ++q)
            for (std::int64_t k = 0; k < 5; ++k)
                CHECK(map.at(q, k) == w_first[static_cast<std::size_t>(((1 * 4 + head) * 5 + q) * 5 + k)]);
    }
    CHECK(maps[4].module == "second");
    CHECK(maps[4].layer == 1);
    CHECK(maps[6].module == "cross");
    CHECK(maps[6].layer == 2);
    CHECK(maps[6].head == 0);
    CHECK(maps[6].rows() == 3);
    CHECK(maps[6].cols() == 5);
    const auto w_cross = recorder.weights("cross")[0].to_vector<float>();  // [2, 3, 5]
    CHECK(maps[6].at(2, 4) == w_cross[static_cast<std::size_t>((1 * 3 + 2) * 5 + 4)]);
}

TEST_CASE("maps from local attention's dense view: zeros outside the window, rows summing to 1") {
    Generator gen(4);
    const Stack model(gen, LocalMode::Monotonic);
    AttentionRecorder recorder(model);
    (void)model.forward(randn({1, 6, 8}, gen), randn({1, 2, 8}, gen));
    const auto maps = attention_maps(std::vector<RecordedAttention>{recorder.records()[1]},
                                     TokenLabels{tokens(6, "x"), tokens(6, "x")});
    REQUIRE(maps.size() == 2);
    for (const auto& map : maps) {
        for (std::int64_t q = 0; q < 6; ++q) {
            double total = 0.0;
            for (std::int64_t k = 0; k < 6; ++k) {
                if (std::abs(k - q) > 1) CHECK(map.at(q, k) == 0.0);
                total += map.at(q, k);
            }
            CHECK(total == doctest::Approx(1.0));
        }
    }
}

TEST_CASE("maps from records: bad labels, layouts, batch index and empty records are clear errors") {
    const Tensor w = full({2, 3, 4}, 0.25);
    CHECK_THROWS_WITH_AS(
        maps_from_weights("dec.attn", 0, w, 0, {tokens(2, "q"), tokens(4, "k")}),
        doctest::Contains("layer 'dec.attn' weights [2, 3, 4] need 3 query and 4 key labels, got 2 and 4"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        maps_from_weights("dec.attn", 0, full({3, 4}, 0.25), 0, {tokens(3, "q"), tokens(4, "k")}),
        doctest::Contains("must be [B, Tq, Tk] or [B, h, Tq, Tk], got [3, 4]"), ShapeError);
    CHECK_THROWS_WITH_AS(maps_from_weights("dec.attn", 0, w, 2, {tokens(3, "q"), tokens(4, "k")}),
                         doctest::Contains("batch index 2 is outside [0, 2)"), IndexError);
    Tensor bad = full({1, 2, 2}, 0.5);
    bad.data<float>()[3] = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH_AS(
        maps_from_weights("enc", 0, bad, 0, {tokens(2, "q"), tokens(2, "k")}),
        doctest::Contains("'enc head 0' [2, 2] has a non-finite weight inf at row 1, column 1"), ValueError);
    CHECK_THROWS_WITH_AS(attention_maps({}, TokenLabels{}), doctest::Contains("no attention was recorded"),
                         ValueError);
}

TEST_CASE("layer_maps: one layer's maps by name and call, numbered as attention_maps numbers them") {
    Generator gen(5);
    const Stack model(gen);
    const Tensor x = randn({2, 5, 8}, gen), y1 = randn({2, 3, 8}, gen), y2 = randn({2, 2, 8}, gen);
    AttentionRecorder recorder(model);
    (void)model.forward(x, y1);
    (void)model.forward(x, y2);  // a second call of every layer, the cross-attention with 2 queries
    const TokenLabels self{tokens(5, "x"), tokens(5, "x")};
    const auto second = layer_maps(recorder, "second", self, 1, 1);
    const auto expected = maps_from_weights("second", 1, recorder.weights("second")[1], 1, self);
    REQUIRE(second.size() == 2);
    for (std::size_t h = 0; h < 2; ++h) {
        CHECK(second[h].module == "second");
        CHECK(second[h].layer == 1);
        CHECK(second[h].head == std::int64_t(h));
        CHECK(second[h].weights == expected[h].weights);
    }
    const auto cross = layer_maps(recorder, "cross", {tokens(2, "y"), tokens(5, "x")}, 1);
    REQUIRE(cross.size() == 1);
    CHECK(cross[0].layer == 2);
    CHECK(cross[0].rows() == 2);
    const auto w = recorder.weights("cross")[1].to_vector<float>();  // [2, 2, 5], batch element 0
    CHECK(cross[0].at(1, 3) == w[static_cast<std::size_t>(1 * 5 + 3)]);
    // The first call is the default.
    CHECK(layer_maps(recorder, "cross", {tokens(3, "y"), tokens(5, "x")})[0].rows() == 3);

    CHECK_THROWS_WITH_AS(
        layer_maps(recorder, "decoder.cross", self),
        doctest::Contains("layer_maps: no record of layer 'decoder.cross'; the recorder holds "
                          "[first, second, cross]"),
        ValueError);
    CHECK_THROWS_WITH_AS(layer_maps(recorder, "first", self, 2),
                         doctest::Contains("layer_maps: call 2 of layer 'first' outside [0, 2)"), IndexError);
    CHECK_THROWS_WITH_AS(layer_maps(recorder, "first", self, -1), doctest::Contains("call -1"), IndexError);
    CHECK_THROWS_WITH_AS(layer_maps(recorder, "cross", self),
                         doctest::Contains("need 3 query and 5 key labels"), ShapeError);
}

TEST_CASE("crop_map keeps the real tokens of a padded example") {
    const Tensor w = reshape(arange(0.0, 12.0, 1.0, {.dtype = DType::Float64}), {1, 3, 4});
    const auto map = maps_from_weights("a", 0, w, 0, {tokens(3, "q"), tokens(4, "k")})[0];
    AttentionMap with_right = map;
    with_right.right = {3, 1, 0};
    const auto cropped = crop_map(with_right, 2, 2);
    CHECK(cropped.queries == tokens(2, "q"));
    CHECK(cropped.keys == tokens(2, "k"));
    CHECK(cropped.weights == std::vector<double>{0, 1, 4, 5});
    CHECK(cropped.right == std::vector<std::int64_t>{-1, 1});
    CHECK_THROWS_WITH_AS(crop_map(map, 4, 1),
                         doctest::Contains("cannot keep [4, 1] of map 'a head 0' [3, 4]"), IndexError);
}

TEST_CASE(
    "head knockout: named heads get zero weights and add nothing, the rest is unchanged, scope ends it") {
    Generator gen(5);
    MultiHeadAttention mha({.embed_dim = 8, .num_heads = 4, .dtype = DType::Float64}, gen);
    const Tensor x = randn({2, 5, 8}, gen, {.dtype = DType::Float64});
    const auto full_run = mha.forward(x, {.average_attn_weights = false});
    Tensor silenced_out, silenced_w;
    {
        HeadKnockout knockout(mha, {{"", {1, 3}}});
        const auto r = mha.forward(x, {.average_attn_weights = false});
        silenced_out = r.output;
        silenced_w = r.weights;
    }
    // Reference: the concatenated heads with heads 1 and 3 zeroed, through out_proj.
    const auto w = silenced_w.to_vector<double>(), w_all = full_run.weights.to_vector<double>();
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t h = 0; h < 4; ++h)
            for (std::int64_t i = 0; i < 25; ++i) {
                const auto at = static_cast<std::size_t>((b * 4 + h) * 25 + i);
                CHECK(w[at] == (h == 1 || h == 3 ? 0.0 : w_all[at]));
            }
    // out = concat(heads) W_o^T + b_o: with the weights of heads 1 and 3 at 0, their value
    // columns contribute nothing; recompute by hand from the projections.
    const std::int64_t e = 8, d = 2;
    const Tensor qkv = linear(x, mha.in_proj_weight(), mha.in_proj_bias());  // [2, 5, 24]
    const Tensor v = narrow(qkv, 2, 2 * e, e);                               // [2, 5, 8]
    Tensor heads = zeros({2, 5, 8}, {.dtype = DType::Float64});
    const auto vv = v.to_vector<double>();
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t h = 0; h < 4; ++h)
            for (std::int64_t q = 0; q < 5; ++q)
                for (std::int64_t j = 0; j < d; ++j) {
                    double sum = 0.0;
                    for (std::int64_t k = 0; k < 5; ++k)
                        sum += w[static_cast<std::size_t>(((b * 4 + h) * 5 + q) * 5 + k)] *
                               vv[static_cast<std::size_t>((b * 5 + k) * e + h * d + j)];
                    heads.data<double>()[(b * 5 + q) * e + h * d + j] = sum;
                }
    const Tensor expected = mha.out_proj().forward(heads);
    CHECK(max_abs(expected - silenced_out) < 1e-12);
    // The guard is gone: the full output again.
    CHECK(max_abs(mha.forward(x).output - full_run.output) == 0.0);
}

TEST_CASE("head knockout reaches layers deep in a tree, nests, and the recorder sees the zeros") {
    Generator gen(6);
    const Stack model(gen);
    const Tensor x = randn({1, 5, 8}, gen), y = randn({1, 3, 8}, gen);
    const Tensor before = model.forward(x, y);
    {
        HeadKnockout outer(model, {{"first", {0}}});
        {
            HeadKnockout inner(model, {{"cross", {0}}});
            AttentionRecorder recorder(model);
            const Tensor out = model.forward(x, y);
            CHECK(max_abs(out) == 0.0);  // the only cross head is silent: zero output
            const auto first = recorder.weights("first")[0].to_vector<float>();  // [1, 4, 5, 5]
            CHECK(std::all_of(first.begin(), first.begin() + 25, [](float v) { return v == 0.0; }));
            CHECK(std::any_of(first.begin() + 25, first.end(), [](float v) { return v != 0.0f; }));
        }
        const Tensor out = model.forward(x, y);
        CHECK(max_abs(out) > 0.0);
        CHECK(max_abs(out - before) > 0.0);  // head 0 of "first" still silent
    }
    CHECK(max_abs(model.forward(x, y) - before) == 0.0);
}

TEST_CASE("head knockout: gradients through a silenced head are zero") {
    Generator gen(8);
    MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = DType::Float64}, gen);
    const Tensor x = randn({1, 3, 4}, gen, {.dtype = DType::Float64});
    HeadKnockout knockout(mha, {{"", {0, 1}}});
    sum(mha.forward(x).output).backward();
    const auto g = mha.in_proj_weight().grad().to_vector<double>();
    CHECK(std::all_of(g.begin(), g.end(), [](double v) { return v == 0.0; }));
}

TEST_CASE(
    "head knockout refuses names and heads that do not exist, empty requests and models without attention") {
    Generator gen(7);
    const Stack model(gen);
    CHECK_THROWS_WITH_AS(
        HeadKnockout(model, {{"third", {0}}}),
        doctest::Contains("'third' is not an attention layer of the model; its layers: 'first' (4 heads), "
                          "'second' (2 heads), 'cross' (1 head)"),
        ValueError);
    CHECK_THROWS_WITH_AS(HeadKnockout(model, {{"second", {2}}}),
                         doctest::Contains("layer 'second' has 2 heads, no head 2"), IndexError);
    CHECK_THROWS_WITH_AS(HeadKnockout(model, {{"cross", {-1}}}),
                         doctest::Contains("layer 'cross' has 1 head, no head -1"), IndexError);
    CHECK_THROWS_WITH_AS(HeadKnockout(model, {}), doctest::Contains("names no layer"), ValueError);
    CHECK_THROWS_WITH_AS(HeadKnockout(model, {{"first", {1, 1}}}),
                         doctest::Contains("layer 'first' names head 1 twice"), ValueError);
    CHECK_THROWS_WITH_AS(HeadKnockout(model, {{"first", {}}}),
                         doctest::Contains("layer 'first' names no head"), ValueError);
    Linear plain({.in_features = 2, .out_features = 2}, gen);
    CHECK_THROWS_WITH_AS(HeadKnockout(plain, {{"", {0}}}),
                         doctest::Contains("the model (Linear) has no attention layer"), ValueError);
    // A failed guard leaves nothing installed.
    const Tensor x = randn({1, 5, 8}, gen), y = randn({1, 3, 8}, gen);
    CHECK(max_abs(model.forward(x, y)) > 0.0);
    CHECK(attention_layers(model).size() == 3);
}
