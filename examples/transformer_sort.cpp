// An encoder-decoder Transformer from the library's blocks learns the bundled sort task, decodes
// the held-out sources with beam search and draws one output's cross-attention in the terminal.
// Run: build/examples/transformer_sort [steps]
#include "attograd.hpp"

#include <fmt/core.h>

using namespace attograd;
using data::Vocabulary;

int main(int argc, char** argv) {
    const std::int64_t steps = argc > 1 ? std::stoll(argv[1]) : 300;
    const auto task = data::make_task("sort");  // 4-10 distinct letters from a-t -> sorted
    const Vocabulary vocab(task->symbols());
    Generator gen(0);
    std::vector<data::Example> train(4096);
    for (data::Example& e : train) e = task->train_example(gen);
    const data::Batcher batcher(train, vocab, {.batch_size = 64, .shuffle = true});
    const std::int64_t V = vocab.size(), E = 32;
    const nn::TransformerStackOptions stack{
        .layer = {.d_model = E, .nhead = 2, .dim_feedforward = 64, .dropout = 0}};
    nn::ModuleList model;  // holds the parts: model.parameters() and model.eval() reach them all
    const auto embed = model.push_back(std::make_shared<nn::Embedding>(nn::EmbeddingOptions{V, E}, gen));
    const auto encoder = model.push_back(std::make_shared<nn::TransformerEncoder>(stack, gen));
    const auto decoder = model.push_back(std::make_shared<nn::TransformerDecoder>(stack, gen));
    const auto head = model.push_back(std::make_shared<nn::Linear>(nn::LinearOptions{E, V}, gen));
    const nn::SinusoidalPositionalEncoding pe({.embedding_dim = E});
    const auto encode = [&](const data::PaddedSequences& src) {  // [B, S] -> memory [B, S, E]
        return encoder->forward(pe.forward(embed->forward(src.ids)),
                                {.src_key_padding_mask = src.key_padding_mask});
    };
    const nn::DecodeStep decode = [&](const Tensor& prefix, const Tensor& memory, const Tensor& pad) {
        return head->forward(decoder->forward(pe.forward(embed->forward(prefix)), memory,  // logits [N, t, V]
                                              {.memory_key_padding_mask = pad, .tgt_is_causal = true}));
    };
    optim::Adam adam(model.parameters(), {.lr = 3e-3});
    for (std::int64_t step = 1; step <= steps;) {
        for (const data::Batch& b : batcher.epoch(gen)) {
            if (step > steps) break;
            // The decoder reads <bos> y and predicts y <eos>: Batch.target holds neither.
            const data::TeacherForcing tf = data::teacher_forcing(b.target);
            const Tensor logits = decode(tf.decoder_input.ids, encode(b.source), b.source.key_padding_mask);
            const Tensor loss = cross_entropy(reshape(logits, {-1, V}), reshape(tf.labels, {-1}),
                                              {.ignore_index = Vocabulary::pad_id});
            adam.zero_grad();
            loss.backward();
            adam.step();
            if (step++ % 100 == 0) fmt::print("step {:4}  loss {:.4f}\n", step - 1, loss.item());
        }
    }

    model.eval();  // decoding expects eval mode (no dropout)
    const nn::DecodeOptions options{.bos_id = Vocabulary::bos_id,
                                    .eos_id = Vocabulary::eos_id,
                                    .max_length = 12,
                                    .beam_size = 4,
                                    .length_penalty = 0.6};
    std::vector<std::vector<std::int64_t>> held_out;
    for (const data::Example& e : task->held_out()) held_out.push_back(vocab.encode(e.source));
    const data::PaddedSequences src = data::pad_sequences(held_out);
    const auto decoded = nn::beam_search(encode(src), src.key_padding_mask, decode, options);
    std::size_t right = 0;
    for (std::size_t i = 0; i < decoded.size(); ++i)
        right += vocab.decode(decoded[i][0].tokens) == task->held_out()[i].target;
    fmt::print("beam search (beam 4): {} of {} held-out sources sorted exactly\n\n", right, decoded.size());

    // One output's cross-attention: beam_search re-runs the decoder on it under the recorder.
    const data::Example& probe = task->held_out()[1];
    const data::PaddedSequences one = data::pad_sequences({vocab.encode(probe.source)});
    nn::AttentionRecorder recorder(*decoder);
    const nn::Hypothesis best = nn::beam_search(encode(one), one.key_padding_mask, decode, options)[0][0];
    std::vector<std::string> outputs = vocab.decode(best.tokens);
    if (best.finished) outputs.push_back(Vocabulary::eos);
    const std::string layer = "layers.0.multihead_attn";
    for (inspect::AttentionMap& map :
         inspect::maps_from_weights(layer, 0, recorder.weights(layer)[0], 0, {outputs, probe.source})) {
        map.alignment_share = inspect::alignment_share(map, *task->alignment(probe));  // t -> t-th smallest
        fmt::print("{}\n", inspect::render_heatmap(map, {.colour = inspect::detect_term_colour(stdout),
                                                         .width = inspect::terminal_width(stdout)}));
    }
}
