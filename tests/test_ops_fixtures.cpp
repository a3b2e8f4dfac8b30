// Replays tests/fixtures/ops.json (PyTorch's values and gradients, made by gen_ops.py) for
// every op in core/: forward values and the gradient of sum(out * R) for every float input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

using namespace attograd;
using nlohmann::json;

namespace {

using Replay = std::function<Tensor(const std::vector<Tensor>&, const json&)>;

Reduction reduction_of(const json& args) {
    const auto name = args.at("reduction").get<std::string>();
    if (name == "mean") return Reduction::Mean;
    if (name == "sum") return Reduction::Sum;
    REQUIRE(name == "none");
    return Reduction::None;
}

CrossEntropyOptions class_options(const json& args) {
    return {.reduction = reduction_of(args),
            .ignore_index = args.at("ignore_index").get<std::int64_t>(),
            .label_smoothing = args.at("label_smoothing").get<double>()};
}

std::int64_t axis(const json& args) { return args.at("axis").get<std::int64_t>(); }

// One entry per op name used in ops.json: how attograd computes it from the stored inputs.
const std::map<std::string, Replay>& replays() {
    using In = const std::vector<Tensor>&;
    using A = const json&;
    static const std::map<std::string, Replay> table = {
        {"add", [](In in, A) { return add(in[0], in[1]); }},
        {"sub", [](In in, A) { return sub(in[0], in[1]); }},
        {"mul", [](In in, A) { return mul(in[0], in[1]); }},
        {"div", [](In in, A) { return div(in[0], in[1]); }},
        {"neg", [](In in, A) { return neg(in[0]); }},
        {"exp", [](In in, A) { return exp(in[0]); }},
        {"log", [](In in, A) { return log(in[0]); }},
        {"sqrt", [](In in, A) { return sqrt(in[0]); }},
        {"pow", [](In in, A a) { return pow(in[0], a.at("exponent").get<double>()); }},
        {"abs", [](In in, A) { return abs(in[0]); }},
        {"tanh", [](In in, A) { return tanh(in[0]); }},
        {"sigmoid", [](In in, A) { return sigmoid(in[0]); }},
        {"relu", [](In in, A) { return relu(in[0]); }},
        {"gelu", [](In in, A) { return gelu(in[0]); }},
        {"matmul", [](In in, A) { return matmul(in[0], in[1]); }},
        {"transpose",
         [](In in, A a) {
             return transpose(in[0], a.at("dim0").get<std::int64_t>(), a.at("dim1").get<std::int64_t>());
         }},
        {"permute", [](In in, A a) { return permute(in[0], a.at("dims").get<std::vector<std::int64_t>>()); }},
        {"reshape", [](In in, A a) { return reshape(in[0], a.at("shape").get<Shape>()); }},
        {"sum",
         [](In in, A a) {
             if (a.at("axes").is_null()) return sum(in[0]);
             return sum(in[0], a.at("axes").get<std::vector<std::int64_t>>(), a.at("keepdim").get<bool>());
         }},
        {"mean",
         [](In in, A a) {
             if (a.at("axes").is_null()) return mean(in[0]);
             return mean(in[0], a.at("axes").get<std::vector<std::int64_t>>(), a.at("keepdim").get<bool>());
         }},
        {"max", [](In in, A a) { return max(in[0], axis(a), a.at("keepdim").get<bool>()).values; }},
        {"norm",
         [](In in, A a) {
             const auto p = a.at("p").get<std::string>();
             const double order = p == "inf" ? std::numeric_limits<double>::infinity() : std::stod(p);
             const auto dims = a.at("dims").is_null() ? std::vector<std::int64_t>{}
                                                      : a.at("dims").get<std::vector<std::int64_t>>();
             return norm(in[0], order, dims, a.at("keepdim").get<bool>());
         }},
        {"softmax", [](In in, A a) { return softmax(in[0], axis(a)); }},
        {"log_softmax", [](In in, A a) { return log_softmax(in[0], axis(a)); }},
        {"concat", [](In in, A a) { return concat(in, axis(a)); }},
        {"stack", [](In in, A a) { return stack(in, axis(a)); }},
        {"narrow",
         [](In in, A a) {
             return narrow(in[0], axis(a), a.at("start").get<std::int64_t>(),
                           a.at("length").get<std::int64_t>());
         }},
        {"slice",
         [](In in, A a) {
             return slice(in[0], axis(a), a.at("start").get<std::int64_t>(), a.at("end").get<std::int64_t>(),
                          a.value("step", std::int64_t{1}));
         }},
        {"select", [](In in, A a) { return select(in[0], axis(a), a.at("index").get<std::int64_t>()); }},
        {"index_0_slice_1_3_all",
         [](In in, A) {
             using namespace indexing;
             return in[0].index({0, Slice(1, 3), All});
         }},
        {"index_ellipsis_step_2_last",
         [](In in, A) {
             using namespace indexing;
             return in[0].index({Ellipsis, Slice(None, None, 2), -1});
         }},
        {"unsqueeze", [](In in, A a) { return unsqueeze(in[0], a.at("dim").get<std::int64_t>()); }},
        {"squeeze",
         [](In in, A a) {
             return a.at("dim").is_null() ? squeeze(in[0]) : squeeze(in[0], a.at("dim").get<std::int64_t>());
         }},
        {"index_tensor_tensor",
         [](In in, A) {
             return in[0].index({in[1], in[2]});
         }},
        {"index_slice_tensor",
         [](In in, A) {
             using namespace indexing;
             return in[0].index({All, in[1]});
         }},
        {"index_slice_tensor_tensor",
         [](In in, A) {
             using namespace indexing;
             return in[0].index({All, in[1], in[2]});
         }},
        {"index_int_slice_tensor",
         [](In in, A a) {
             using namespace indexing;
             return in[0].index({a.at("index").get<std::int64_t>(), All, in[1]});
         }},
        {"index_select", [](In in, A a) { return index_select(in[0], axis(a), in[1]); }},
        {"gather", [](In in, A a) { return gather(in[0], axis(a), in[1]); }},
        {"embedding", [](In in, A) { return embedding(in[0], in[1]); }},
        {"masked_fill", [](In in, A a) { return masked_fill(in[0], in[1], a.at("value").get<double>()); }},
        {"where", [](In in, A) { return where(in[0], in[1], in[2]); }},
        {"floor_divide", [](In in, A) { return floor_divide(in[0], in[1]); }},
        {"remainder", [](In in, A) { return remainder(in[0], in[1]); }},
        {"eq", [](In in, A) { return to_dtype(eq(in[0], in[1]), DType::Int64); }},
        {"ne", [](In in, A) { return to_dtype(ne(in[0], in[1]), DType::Int64); }},
        {"lt", [](In in, A) { return to_dtype(lt(in[0], in[1]), DType::Int64); }},
        {"le", [](In in, A) { return to_dtype(le(in[0], in[1]), DType::Int64); }},
        {"gt", [](In in, A) { return to_dtype(gt(in[0], in[1]), DType::Int64); }},
        {"ge", [](In in, A) { return to_dtype(ge(in[0], in[1]), DType::Int64); }},
        {"triu", [](In in, A a) { return triu(in[0], a.at("diagonal").get<std::int64_t>()); }},
        {"tril", [](In in, A a) { return tril(in[0], a.at("diagonal").get<std::int64_t>()); }},
        {"cross_entropy", [](In in, A a) { return cross_entropy(in[0], in[1], class_options(a)); }},
        {"nll_loss", [](In in, A a) { return nll_loss(in[0], in[1], class_options(a)); }},
        {"mse_loss", [](In in, A a) { return mse_loss(in[0], in[1], reduction_of(a)); }},
    };
    return table;
}

Tensor input_tensor(const json& j) {
    const auto dtype = j.at("dtype").get<std::string>();
    if (dtype == "int64") return testing::fixture_tensor(j, DType::Int64);
    if (dtype == "bool") return to_dtype(testing::fixture_tensor(j, DType::Int64), DType::Bool);
    REQUIRE(dtype == "float64");
    Tensor t = testing::fixture_tensor(j, DType::Float64);
    if (j.at("grad").get<bool>()) t.requires_grad_();
    return t;
}

// Largest |a - b| / max(1, |b|): absolute for values up to 1, relative beyond (a loss of 1e8
// carries about 1e-8 of rounding, whoever computes it).
double max_scaled_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
    double worst = 0.0;
    for (std::size_t i = 0; i < va.size(); ++i)
        worst = std::max(worst, std::abs(va[i] - vb[i]) / std::max(1.0, std::abs(vb[i])));
    return worst;
}

constexpr double kTolerance = 1e-10;

}  // namespace

TEST_CASE("every op matches PyTorch's values and gradients on the committed fixtures") {
    const json fixture = testing::load_fixture("ops");
    const auto& cases = fixture.at("cases");
    REQUIRE(cases.size() > 100);
    for (const json& c : cases) {
        const auto name = c.at("name").get<std::string>();
        CAPTURE(name);
        const auto it = replays().find(c.at("op").get<std::string>());
        REQUIRE_MESSAGE(it != replays().end(), "no replay for op " << c.at("op"));
        std::vector<Tensor> inputs;
        for (const json& j : c.at("inputs")) inputs.push_back(input_tensor(j));
        const Tensor out = it->second(inputs, c.at("args"));
        CHECK(max_scaled_diff(out, testing::fixture_tensor(c.at("output"))) <= kTolerance);
        if (c.contains("extra") && c.at("extra").contains("indices"))
            CHECK(max_scaled_diff(
                      max(inputs[0], axis(c.at("args")), c.at("args").at("keepdim").get<bool>()).indices,
                      testing::fixture_tensor(c.at("extra").at("indices"), DType::Int64)) == 0.0);
        if (!out.requires_grad()) continue;
        sum(out * testing::fixture_tensor(c.at("weight"))).backward();
        const auto& grads = c.at("grads");
        REQUIRE(grads.size() == inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            if (grads[i].is_null()) continue;
            CAPTURE(i);
            REQUIRE(inputs[i].grad().defined());
            CHECK(max_scaled_diff(inputs[i].grad(), testing::fixture_tensor(grads[i])) <= kTolerance);
        }
    }
}

TEST_CASE("the fixtures cover every op of the replay table and nothing else") {
    const json fixture = testing::load_fixture("ops");
    std::set<std::string> in_fixture;
    for (const json& c : fixture.at("cases")) in_fixture.insert(c.at("op").get<std::string>());
    std::set<std::string> in_table;
    for (const auto& [op, replay] : replays()) in_table.insert(op);
    CHECK(in_fixture == in_table);
}
