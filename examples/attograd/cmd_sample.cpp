// `attograd sample`: text drawn from a language model run (--model lm), token by token, with
// temperature and top-k sampling (nn::generate).
#include "commands.hpp"
#include "console.hpp"
#include "evaluation.hpp"
#include "run_dir.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"
#include "data/text.hpp"
#include "nn/sampling.hpp"
#include "nn/transformer_lm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace attograd::cli {

namespace {

/// The ids of `prompt` in the run's vocabulary, tokenised as the task does. UsageError when it
/// is not UTF-8, holds a control character, is empty, or has a token the vocabulary lacks (the
/// model has no embedding for it) or a reserved one.
std::vector<std::int64_t> prompt_ids(const Task& task, const Vocabulary& vocab, const std::string& prompt) {
    const std::string quoted = fmt::format("--prompt '{}'", shown_text(prompt));
    if (!data::is_valid_utf8(prompt))
        throw UsageError(fmt::format("{}: is not valid UTF-8 (bad bytes shown as \\xHH)", quoted));
    if (const std::string control = data::first_control(prompt); !control.empty())
        throw UsageError(fmt::format("{}: holds the control character {}", quoted, control));
    const std::vector<std::string> tokens = task.tokenize(prompt);
    if (tokens.empty()) throw UsageError(fmt::format("{}: is empty", quoted));
    std::vector<std::int64_t> ids;
    for (const auto& token : tokens) {
        if (!vocab.contains(token) || Vocabulary::is_reserved(token))
            throw UsageError(fmt::format("{}: '{}' is not in the model's vocabulary ({} {}s)", quoted,
                                         shown_text(token), vocab.size() - Vocabulary::reserved_count,
                                         task.info().char_level ? "character" : "token"));
        ids.push_back(vocab.id(token));
    }
    return ids;
}

}  // namespace

int cmd_sample(const SampleArgs& args) {
    if (!(std::isfinite(args.temperature) && args.temperature > 0.0))
        throw UsageError(
            fmt::format("--temperature must be a finite number > 0, got {:g}", args.temperature));
    if (args.top_k_given && args.top_k < 1)
        throw UsageError(fmt::format("--top-k must be >= 1, got {}", args.top_k));
    if (args.length < 1 || args.length > SampleArgs::max_length)
        throw UsageError(
            fmt::format("--length must be in [1, {}] tokens, got {}", SampleArgs::max_length, args.length));
    const LoadedRun run = load_run(args.run);
    const nn::TransformerLM* lm = language_model(*run.model);
    if (lm == nullptr)
        throw UsageError(
            fmt::format("--run {}: sample draws from language models (--model lm); this run is --model {}",
                        shown_path(run.dir), run.config.model.kind));
    const Vocabulary& vocab = run.config.vocab;
    const std::vector<std::int64_t> prompt = prompt_ids(*run.task, vocab, args.prompt);

    // The reserved tokens are never a target of an lm run: they cannot be drawn.
    std::vector<double> reserved(static_cast<std::size_t>(vocab.size()), 0.0);
    for (std::int64_t id = 0; id < Vocabulary::reserved_count; ++id)
        reserved[static_cast<std::size_t>(id)] = -std::numeric_limits<double>::infinity();
    const Tensor mask = tensor(reserved, {1, vocab.size()});
    const nn::NextTokenLogits next = lm->next_token_logits();
    const nn::NextTokenLogits model = [&](const Tensor& ids) {
        const Tensor logits = next(ids);  // [1, t, V]
        return select(logits, 1, logits.size(1) - 1) + mask;
    };
    Generator generator(args.seed);
    const std::vector<std::int64_t> ids =
        nn::generate(model, prompt,
                     {.max_new_tokens = args.length,
                      .max_context = lm->options().max_len,
                      .sampling = {.temperature = args.temperature,
                                   .top_k = args.top_k_given ? std::optional(args.top_k) : std::nullopt}},
                     generator);
    output(stdout, "{}\n", run.task->detokenize(vocab.lookup_tokens(ids)));
    return 0;
}

}  // namespace attograd::cli
