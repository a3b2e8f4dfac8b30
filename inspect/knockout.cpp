// Head knockout as a scoped guard: silence named heads of named layers without changing model code.
#include "inspect/knockout.hpp"

#include "core/error.hpp"
#include "nn/attention.hpp"
#include "nn/multihead_attention.hpp"

#include <fmt/format.h>

namespace attograd::inspect {

namespace {

std::int64_t head_count(const nn::Module* module) {
    if (dynamic_cast<const nn::Attention*>(module) != nullptr) return 1;
    if (const auto* mha = dynamic_cast<const nn::MultiHeadAttention*>(module))
        return mha->options().num_heads;
    return 0;
}

std::string listing(const std::vector<AttentionLayer>& layers) {
    std::string out;
    for (const auto& layer : layers)
        out += fmt::format("{}'{}' ({} head{})", out.empty() ? "" : ", ", layer.name, layer.num_heads,
                           layer.num_heads == 1 ? "" : "s");
    return out;
}

}  // namespace

std::vector<AttentionLayer> attention_layers(const nn::Module& root) {
    std::vector<AttentionLayer> out;
    for (const auto& [name, module] : root.named_modules())
        if (const std::int64_t h = head_count(module); h > 0) out.push_back({name, h});
    return out;
}

HeadKnockout::HeadKnockout(const nn::Module& root,
                           const std::map<std::string, std::vector<std::int64_t>>& heads) {
    AG_CHECK(!heads.empty(), ValueError, "HeadKnockout: names no layer and head to silence");
    const auto layers = attention_layers(root);
    AG_CHECK(!layers.empty(), ValueError, "HeadKnockout: the model ({}) has no attention layer",
             root.type_name());
    const auto modules = root.named_modules();
    if (nn::detail::active_head_silencing() != nullptr)
        silencing_.silenced = nn::detail::active_head_silencing()->silenced;
    for (const auto& [name, chosen] : heads) {
        const nn::Module* module = nullptr;
        for (const auto& [n, m] : modules)
            if (n == name && head_count(m) > 0) module = m;
        AG_CHECK(module != nullptr, ValueError,
                 "HeadKnockout: '{}' is not an attention layer of the model; its layers: {}", name,
                 listing(layers));
        const std::int64_t h = head_count(module);
        AG_CHECK(!chosen.empty(), ValueError, "HeadKnockout: layer '{}' names no head", name);
        auto& silenced = silencing_.silenced[module];
        silenced.resize(static_cast<std::size_t>(h), false);
        std::vector<bool> named(static_cast<std::size_t>(h), false);
        for (const std::int64_t head : chosen) {
            AG_CHECK(head >= 0 && head < h, IndexError, "HeadKnockout: layer '{}' has {} head{}, no head {}",
                     name, h, h == 1 ? "" : "s", head);
            AG_CHECK(!named[static_cast<std::size_t>(head)], ValueError,
                     "HeadKnockout: layer '{}' names head {} twice", name, head);
            named[static_cast<std::size_t>(head)] = true;
            silenced[static_cast<std::size_t>(head)] = true;
        }
    }
    silencing_.previous = nn::detail::active_head_silencing();
    nn::detail::active_head_silencing() = &silencing_;
}

HeadKnockout::~HeadKnockout() { nn::detail::active_head_silencing() = silencing_.previous; }

}  // namespace attograd::inspect
