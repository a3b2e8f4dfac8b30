// nn::Seq2SeqTransformer learns to sort, beam-decodes the held-out sources and draws a cross-attention.
#include "attograd.hpp"

using namespace attograd;

int main(int argc, char** argv) {
    const std::int64_t steps = argc > 1 ? std::stoll(argv[1]) : 300;
    const auto task = data::make_task("sort");  // 4-10 distinct letters from a-t -> sorted
    const data::Vocabulary vocab(task->symbols());
    Generator gen(0);
    const data::Batcher batcher(task->train_examples(4096, gen), vocab, {.batch_size = 64, .shuffle = true});
    nn::TransformerOptions arch{.d_model = 32, .nhead = 2, .dim_feedforward = 64, .dropout = 0};
    arch.num_encoder_layers = arch.num_decoder_layers = 1;  // torch.nn.Transformer's default is 6 + 6
    nn::Seq2SeqTransformer model({.vocab_size = vocab.size(), .pad_id = vocab.pad_id, .transformer = arch},
                                 gen);

    optim::Adam adam(model.parameters(), {.lr = 3e-3});
    for (std::int64_t step = 0; const data::Batch& b : batcher.batches(steps, gen)) {
        const data::TeacherForcing tf = data::teacher_forcing(b.target);          // <bos> y -> y <eos>
        const Tensor logits = model.forward(b.source.ids, tf.decoder_input.ids);  // [B, T, V]
        const Tensor loss = cross_entropy(transpose(logits, 1, 2), tf.labels, {.ignore_index = vocab.pad_id});
        adam.zero_grad();
        loss.backward();
        adam.step();
        if (++step % 100 == 0) fmt::print("step {:4}  loss {:.4f}\n", step, loss.item());
    }

    model.eval();  // no dropout while decoding
    const nn::DecodeOptions beam{.bos_id = vocab.bos_id, .eos_id = vocab.eos_id, .max_length = 12};
    const auto& held_out = task->held_out();
    const auto decoded = model.beam_search(data::collate(held_out, vocab).source.ids, beam);
    const std::int64_t right = data::exact_matches(nn::best_tokens(decoded), held_out, vocab);
    fmt::print("beam search (beam 4): {} of {} held-out sources sorted exactly\n\n", right, held_out.size());

    // One output's cross-attention: beam_search re-runs the decoder on it under the recorder.
    nn::AttentionRecorder recorder(model);
    const nn::Hypothesis best = model.beam_search(data::collate({held_out[1]}, vocab).source.ids, beam)[0][0];
    const inspect::TokenLabels labels{vocab.lookup_tokens(best.output_ids(vocab.eos_id)), held_out[1].source};
    for (const auto& map :
         inspect::layer_maps(recorder, "transformer.decoder.layers.0.multihead_attn", labels))
        fmt::print("{}\n", inspect::render_heatmap(map, {.colour = inspect::detect_term_colour(stdout)}));
}
