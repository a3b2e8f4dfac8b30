// Head knockout as a scoped guard: silence named heads of named layers without changing model code.
#include "inspect/knockout.hpp"

#include "core/error.hpp"

namespace attograd::inspect {

namespace {

constexpr const char* kOp = "HeadKnockout";

// The named heads as silencing replacements; refuses a head named twice (checked before the
// range, which AttentionIntervention checks).
std::map<std::string, std::map<std::int64_t, Replacement>> silencing(
    const std::map<std::string, std::vector<std::int64_t>>& heads) {
    std::map<std::string, std::map<std::int64_t, Replacement>> out;
    for (const auto& [name, chosen] : heads) {
        auto& layer = out[name];
        for (const std::int64_t head : chosen) {
            AG_CHECK(layer.count(head) == 0, ValueError, "{}: layer '{}' names head {} twice", kOp, name,
                     head);
            layer.emplace(head, Replacement::silence());
        }
    }
    return out;
}

}  // namespace

HeadKnockout::HeadKnockout(const nn::Module& root,
                           const std::map<std::string, std::vector<std::int64_t>>& heads)
    : intervention_(root, silencing(heads), {}, kOp) {}

}  // namespace attograd::inspect
