// Printing tensors: PyTorch's printed form on the committed fixtures (gen_format.py), print
// options, operator<< and fmt agreeing.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <limits>
#include <sstream>

using namespace attograd;
using nlohmann::json;

namespace {

Tensor fixture_values(const json& c) {
    std::vector<double> values;
    for (const json& v : c.at("data")) {
        if (v.is_string()) {
            const auto s = v.get<std::string>();
            values.push_back(s == "nan"
                                 ? std::numeric_limits<double>::quiet_NaN()
                                 : (s[0] == '-' ? -1.0 : 1.0) * std::numeric_limits<double>::infinity());
        } else {
            values.push_back(v.get<double>());
        }
    }
    const auto dtype = c.at("dtype").get<std::string>();
    const DType d = dtype == "float32" ? DType::Float32 : dtype == "int64" ? DType::Int64 : DType::Bool;
    REQUIRE((dtype == "float32" || dtype == "int64" || dtype == "bool"));
    if (d == DType::Int64) {
        std::vector<std::int64_t> ints;
        for (const json& v : c.at("data")) ints.push_back(v.get<std::int64_t>());
        return index_tensor(ints, c.at("shape").get<Shape>());
    }
    return tensor(values, c.at("shape").get<Shape>(), {.dtype = d});
}

PrintOptions fixture_options(const json& o) {
    PrintOptions p{.precision = o.at("precision").get<int>(),
                   .threshold = o.at("threshold").get<std::int64_t>(),
                   .edgeitems = o.at("edgeitems").get<std::int64_t>(),
                   .linewidth = o.at("linewidth").get<std::int64_t>()};
    if (!o.at("sci_mode").is_null()) p.sci_mode = o.at("sci_mode").get<bool>();
    return p;
}

}  // namespace

TEST_CASE("tensors print as PyTorch prints them, summarised only past the threshold") {
    const json fixture = testing::load_fixture("format");
    REQUIRE(fixture.at("cases").size() >= 20);
    for (const json& c : fixture.at("cases")) {
        CAPTURE(c.at("name").get<std::string>());
        const Tensor t = fixture_values(c);
        const std::string text = to_string(t, fixture_options(c.at("options")));
        const std::string expected = "tensor(" + c.at("body").get<std::string>() + ", shape=";
        CHECK(text.substr(0, std::min(text.size(), expected.size())) == expected);
    }
}

TEST_CASE("an 8-element tensor shows every element") {
    const Tensor x = tensor({1, 2, 3, 4, 5, 6, 7, 8.5}, {8});
    const std::string text = fmt::format("{}", x);
    CHECK(
        text ==
        "tensor([1.0000, 2.0000, 3.0000, 4.0000, 5.0000, 6.0000, 7.0000, 8.5000], shape=[8], dtype=float32)");
    CHECK(text.find("...") == std::string::npos);
}

TEST_CASE("set_print_options changes every later print and operator<< matches fmt") {
    const PrintOptions saved = get_print_options();
    const Tensor x = tensor({0.123456, 2.0}, {2}, {.requires_grad = true});
    set_print_options({.precision = 2});
    std::ostringstream os;
    os << x;
    CHECK(os.str() == "tensor([0.12, 2.00], shape=[2], dtype=float32, requires_grad=true)");
    CHECK(os.str() == fmt::format("{}", x));
    CHECK(os.str() == to_string(x));
    set_print_options({.threshold = 4, .edgeitems = 1});  // PyTorch: tensor([0,  ..., 9])
    CHECK(to_string(arange(10)) == "tensor([0,  ..., 9], shape=[10], dtype=int64)");
    CHECK(get_print_options().edgeitems == 1);
    set_print_options(saved);
    CHECK(get_print_options().threshold == 1000);
    CHECK(to_string(zeros({0, 3})) == "tensor([], shape=[0, 3], dtype=float32)");
    CHECK(to_string(Tensor{}) == "tensor(undefined)");
    CHECK_THROWS_WITH_AS(set_print_options({.precision = -1}),
                         doctest::Contains("set_print_options: precision"), ValueError);
    CHECK_THROWS_WITH_AS(set_print_options({.edgeitems = -2}), doctest::Contains("set_print_options"),
                         ValueError);
}

TEST_CASE("operator<< prints a Shape as fmt does") {
    std::ostringstream os;
    os << Shape{2, 3} << ' ' << Shape{} << ' ' << zeros({4, 1}).shape();
    CHECK(os.str() == "[2, 3] [] [4, 1]");
    CHECK(fmt::format("{}", Shape{2, 3}) == "[2, 3]");
}
