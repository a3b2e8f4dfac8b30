// The one way attograd reads an integer from a JSON file (config.json, progress, checkpoint and
// snapshot headers): nlohmann's get<T>() converts without checking, so 2^64 - 1 read as int64
// becomes -1 and 1.5 becomes 1.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace attograd::detail {

/// The integer `value` holds when it is a JSON integer inside T's range; std::nullopt for any
/// other type (a float such as 1.5, a string) and for an integer outside [min T, max T].
template <class T>
std::optional<T> json_integer(const nlohmann::json& value) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    if (value.is_number_unsigned()) {
        const auto u = value.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
        return std::nullopt;
    }
    if (value.is_number_integer()) {  // a negative integer (nlohmann stores those as int64)
        const auto i = value.get<std::int64_t>();
        if constexpr (std::is_signed_v<T>) {
            if (i >= std::numeric_limits<T>::min() && i <= std::numeric_limits<T>::max())
                return static_cast<T>(i);
        } else if (i >= 0 && static_cast<std::uint64_t>(i) <= std::numeric_limits<T>::max()) {
            return static_cast<T>(i);
        }
    }
    return std::nullopt;
}

/// "[MIN, MAX]" of T, for messages about a value json_integer<T> refused.
template <class T>
std::string json_integer_range() {
    return "[" + std::to_string(std::numeric_limits<T>::min()) + ", " +
           std::to_string(std::numeric_limits<T>::max()) + "]";
}

}  // namespace attograd::detail
