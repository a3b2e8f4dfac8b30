// Element types and the dispatch from a runtime dtype to a templated kernel.
#pragma once

#include "core/error.hpp"

#include <cstdint>
#include <string_view>

namespace attograd {

/// Element type of a tensor. Float32 trains; Float64 makes gradient checks tight; Int64 holds
/// token ids, targets and indices; Bool holds masks (`true` = masked / not allowed).
enum class DType : std::uint8_t { Float32, Float64, Int64, Bool };

/// Short name as PyTorch prints it: "float32", "float64", "int64", "bool".
std::string_view dtype_name(DType dtype);

/// Size of one element in bytes.
std::size_t dtype_size(DType dtype);

/// True for Float32 and Float64.
constexpr bool is_floating(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float64; }

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
    return DType::Float32;
}
template <>
constexpr DType dtype_of<double>() {
    return DType::Float64;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
    return DType::Int64;
}
template <>
constexpr DType dtype_of<bool>() {
    return DType::Bool;
}

/// Calls `fn(T{})` with T = float or double matching `dtype`; throws DTypeError naming `op`
/// for any other dtype. Kernels are templates; this is the one place they are chosen.
template <class Fn>
decltype(auto) dispatch_floating(DType dtype, std::string_view op, Fn&& fn) {
    switch (dtype) {
        case DType::Float32:
            return fn(float{});
        case DType::Float64:
            return fn(double{});
        default:
            throw DTypeError(
                fmt::format("{}: expected a float32 or float64 tensor, got {}", op, dtype_name(dtype)));
    }
}

/// Like dispatch_floating, but also accepts Int64 and Bool (copies, factories, comparisons).
template <class Fn>
decltype(auto) dispatch_all(DType dtype, Fn&& fn) {
    switch (dtype) {
        case DType::Float32:
            return fn(float{});
        case DType::Float64:
            return fn(double{});
        case DType::Int64:
            return fn(std::int64_t{});
        case DType::Bool:
            return fn(bool{});
    }
    throw InternalError("dispatch_all: unknown dtype");
}

}  // namespace attograd

// fmt's formatter specialisations sit outside attograd's namespaces, where Doxygen cannot
// place them; the reference documents them with to_string.
/// @cond
template <>
struct fmt::formatter<attograd::DType> : fmt::formatter<std::string_view> {
    auto format(attograd::DType d, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(attograd::dtype_name(d), ctx);
    }
};
/// @endcond
