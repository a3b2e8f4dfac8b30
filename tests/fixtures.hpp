// Reading the PyTorch reference fixtures (tests/fixtures/<area>.json, made by make_fixtures.py).
#pragma once

#include "attograd.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace testing {

/// The parsed tests/fixtures/<area>.json; fails the test when it is missing.
inline nlohmann::json load_fixture(const std::string& area) {
    const std::string path = std::string(ATTOGRAD_FIXTURE_DIR) + "/" + area + ".json";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << path << " (run tests/make_fixtures.py)");
    return nlohmann::json::parse(in);
}

/// A fixture tensor {"shape": [...], "data": [...]} as a tensor of `dtype`.
inline attograd::Tensor fixture_tensor(const nlohmann::json& j, attograd::DType dtype = attograd::DType::Float64) {
    const auto shape = j.at("shape").get<attograd::Shape>();
    if (dtype == attograd::DType::Int64) return attograd::index_tensor(j.at("data").get<std::vector<std::int64_t>>(), shape);
    return attograd::tensor(j.at("data").get<std::vector<double>>(), shape, {.dtype = dtype});
}

/// Largest |a - b| over all elements (shapes must match; fails the test otherwise).
inline double max_abs_diff(const attograd::Tensor& a, const attograd::Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
    double worst = 0.0;
    for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
    return worst;
}

}  // namespace testing
