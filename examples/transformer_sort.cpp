// nn::Transformer learns the bundled sort task, decodes the held-out sources with beam search
// and draws one output's cross-attention in the terminal. Run: build/examples/transformer_sort [steps]
#include "attograd.hpp"

#include <fmt/core.h>

using namespace attograd;

int main(int argc, char** argv) {
    const std::int64_t steps = argc > 1 ? std::stoll(argv[1]) : 300;
    const auto task = data::make_task("sort");  // 4-10 distinct letters from a-t -> sorted
    const data::Vocabulary vocab(task->symbols());
    const std::int64_t V = vocab.size(), E = 32;
    Generator gen(0);
    std::vector<data::Example> train(4096);
    for (data::Example& e : train) e = task->train_example(gen);
    const data::Batcher batcher(train, vocab, {.batch_size = 64, .shuffle = true});

    nn::TransformerOptions arch{.d_model = E, .nhead = 2, .dim_feedforward = 64, .dropout = 0};
    arch.num_encoder_layers = arch.num_decoder_layers = 1;  // torch.nn.Transformer's default is 6 + 6
    nn::ModuleList model;  // model.parameters() and model.eval() reach every part
    const auto embed = model.push_back(std::make_shared<nn::Sequential>(  // ids [B, T] -> [B, T, E]
        std::make_shared<nn::Embedding>(nn::EmbeddingOptions{V, E}, gen),
        std::make_shared<nn::SinusoidalPositionalEncoding>(nn::PositionalEncodingOptions{E})));
    const auto transformer = model.push_back(std::make_shared<nn::Transformer>(arch, gen));
    const auto head = model.push_back(std::make_shared<nn::Linear>(nn::LinearOptions{E, V}, gen));
    const auto encode = [&](const data::PaddedSequences& src) {  // memory [B, S, E]
        return transformer->encode(embed->forward(src.ids), {.src_key_padding_mask = src.key_padding_mask});
    };
    const nn::DecodeStep decode = [&](const Tensor& prefix, const Tensor& memory, const Tensor& pad) {
        const nn::TransformerDecoderArgs args{.memory_key_padding_mask = pad, .tgt_is_causal = true};
        return head->forward(transformer->decode(embed->forward(prefix), memory, args));  // [N, t, V]
    };

    optim::Adam adam(model.parameters(), {.lr = 3e-3});
    for (std::int64_t step = 1; step <= steps;)
        for (const data::Batch& b : batcher.epoch(gen)) {
            if (step > steps) break;
            const data::TeacherForcing tf = data::teacher_forcing(b.target);  // <bos> y -> y <eos>
            const Tensor logits = decode(tf.decoder_input.ids, encode(b.source), b.source.key_padding_mask);
            const Tensor loss = cross_entropy(reshape(logits, {-1, V}), reshape(tf.labels, {-1}),
                                              {.ignore_index = vocab.pad_id});
            adam.zero_grad();
            loss.backward();
            adam.step();
            if (step++ % 100 == 0) fmt::print("step {:4}  loss {:.4f}\n", step - 1, loss.item());
        }

    model.eval();  // no dropout while decoding
    const nn::DecodeOptions beam{.bos_id = vocab.bos_id, .eos_id = vocab.eos_id, .max_length = 12};
    const auto& held_out = task->held_out();
    const data::PaddedSequences src = data::Batcher(held_out, vocab, {.batch_size = 500}).epoch()[0].source;
    const auto decoded = nn::beam_search(encode(src), src.key_padding_mask, decode, beam);
    std::size_t right = 0;
    for (std::size_t i = 0; i < decoded.size(); ++i)
        right += vocab.decode(decoded[i][0].tokens) == held_out[i].target;
    fmt::print("beam search (beam 4): {} of {} held-out sources sorted exactly\n\n", right, decoded.size());

    // One output's cross-attention: beam_search re-runs the decoder on it under the recorder.
    const data::PaddedSequences one = data::pad_sequences({vocab.encode(held_out[1].source)});
    nn::AttentionRecorder recorder(*transformer);
    const nn::Hypothesis best = nn::beam_search(encode(one), one.key_padding_mask, decode, beam)[0][0];
    std::vector<std::string> outputs = vocab.decode(best.tokens);
    if (best.finished) outputs.push_back(vocab.eos);
    const std::string layer = "decoder.layers.0.multihead_attn";
    for (const inspect::AttentionMap& map :
         inspect::maps_from_weights(layer, 0, recorder.weights(layer)[0], 0, {outputs, held_out[1].source}))
        fmt::print("{}\n", inspect::render_heatmap(map, {.colour = inspect::detect_term_colour(stdout)}));
}
