// Internal: the "missing keys [...]; unexpected keys [...]" part of a load_state_dict error.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

namespace attograd::detail {

/// "missing keys [a, b]", "unexpected keys [c]" or both joined by "; ": only the lists that
/// have keys, as PyTorch's load_state_dict error names only what went wrong.
inline std::string key_mismatch(const std::vector<std::string>& missing,
                                const std::vector<std::string>& unexpected) {
    std::string text;
    if (!missing.empty()) text = fmt::format("missing keys [{}]", fmt::join(missing, ", "));
    if (!unexpected.empty())
        text += fmt::format("{}unexpected keys [{}]", text.empty() ? "" : "; ", fmt::join(unexpected, ", "));
    return text;
}

}  // namespace attograd::detail
