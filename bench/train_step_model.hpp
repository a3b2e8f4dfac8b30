// The model of bench_train_step and bench_distributed: embedding 16 -> E, MultiHeadAttention
// (global, or local-m when window >= 0), Linear E -> 16.
#pragma once

#include "attograd.hpp"

#include <memory>
#include <string>

namespace bench {

using namespace attograd;

struct Config {
    std::string name;
    std::int64_t batch, time, embed, heads, window;  // window < 0: global attention
};

struct Model : nn::Module {
    std::shared_ptr<nn::Embedding> embedding;
    std::shared_ptr<nn::MultiHeadAttention> attention;
    std::shared_ptr<nn::Linear> head;
    Model(const Config& c, Generator& gen) {
        embedding = register_module(
            "embedding", std::make_shared<nn::Embedding>(
                             nn::EmbeddingOptions{.num_embeddings = 16, .embedding_dim = c.embed}, gen));
        nn::MultiHeadAttentionOptions options{.embed_dim = c.embed, .num_heads = c.heads};
        if (c.window >= 0) {
            options.scoring.local = nn::LocalMode::Monotonic;
            options.scoring.window = c.window;
        }
        attention = register_module("attention", std::make_shared<nn::MultiHeadAttention>(options, gen));
        head = register_module(
            "head",
            std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = c.embed, .out_features = 16}, gen));
    }
    std::string type_name() const override { return "Model"; }
};

}  // namespace bench
