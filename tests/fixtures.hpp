// Reading the PyTorch reference fixtures (tests/fixtures/<area>.json, made by make_fixtures.py).
#pragma once

#include "attograd.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
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
inline attograd::Tensor fixture_tensor(const nlohmann::json& j,
                                       attograd::DType dtype = attograd::DType::Float64) {
    const auto shape = j.at("shape").get<attograd::Shape>();
    if (dtype == attograd::DType::Int64)
        return attograd::index_tensor(j.at("data").get<std::vector<std::int64_t>>(), shape);
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

/// |a - ref| relative to the reference's scale: the largest |ref|, at least 1. Parity tests hold
/// it to 1e-10 in float64 and 1e-5 in float32 (a few float32 ulps of gradients that reach ~25:
/// two correct float32 implementations summing in different orders differ by that much).
inline double scaled_diff(const attograd::Tensor& a, const attograd::Tensor& ref) {
    double scale = 1.0;
    for (const double x : ref.to_vector<double>()) scale = std::max(scale, std::abs(x));
    return max_abs_diff(a, ref) / scale;
}

/// A fixture mask: bool masks are stored as 0/1 with "dtype": "bool", float masks as values.
inline attograd::Tensor fixture_mask(const nlohmann::json& j, attograd::DType dtype) {
    if (j.at("dtype") == "bool")
        return attograd::gt(fixture_tensor(j), attograd::scalar(0.5, {.dtype = attograd::DType::Float64}));
    return fixture_tensor(j, dtype);
}

/// The checkpoint fixtures that a gen_*.py script loads into PyTorch: <stem>_state.safetensors
/// (module's state_dict) and <stem>_io.safetensors (inputs and outputs, with `meta`). With
/// ATTOGRAD_WRITE_FIXTURES set it rewrites both; then it checks that the committed state is
/// module's, bit for bit, and the metadata, and returns the committed inputs and outputs for
/// the caller to compare with what it computed now.
inline attograd::SafetensorsContents checkpoint_fixture(const std::string& stem,
                                                        const attograd::nn::Module& module,
                                                        const std::map<std::string, attograd::Tensor>& io,
                                                        const std::map<std::string, std::string>& meta) {
    const std::filesystem::path dir = ATTOGRAD_FIXTURE_DIR;
    if (std::getenv("ATTOGRAD_WRITE_FIXTURES") != nullptr) {
        attograd::nn::save(module, dir / (stem + "_state.safetensors"));
        attograd::save_safetensors(dir / (stem + "_io.safetensors"), io, meta);
    }
    const auto saved_state = attograd::load_safetensors(dir / (stem + "_state.safetensors"));
    const auto state = module.state_dict();
    CHECK(saved_state.size() == state.size());
    for (const auto& [name, t] : state) {
        INFO(name);
        REQUIRE(saved_state.contains(name));
        CHECK(max_abs_diff(saved_state.at(name), t) == 0.0);
    }
    auto saved_io = attograd::read_safetensors(dir / (stem + "_io.safetensors"));
    CHECK(saved_io.metadata == meta);
    return saved_io;
}

}  // namespace testing
