// `attograd eval`: held-out accuracy of a run, alignment per head, predictions for --input.
#include "commands.hpp"
#include "evaluation.hpp"
#include "run_dir.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attograd::cli {

namespace {

nlohmann::json example_json(const Task& task, const std::vector<std::string>& source,
                            const std::vector<std::string>& target, const std::vector<std::string>& prediction) {
    nlohmann::json j = {{"source", task.detokenize(source)}, {"prediction", task.detokenize(prediction)}};
    if (!target.empty()) {
        j["target"] = task.detokenize(target);
        j["correct"] = prediction == target;
    } else {
        j["target"] = nullptr;
        j["correct"] = nullptr;
    }
    return j;
}

}  // namespace

int cmd_eval(const EvalArgs& args) {
    if (args.show < 0) throw UsageError("--show must be >= 0");
    const LoadedRun run = load_run(args.run);
    const Task& task = *run.task;
    const auto& held_out = task.held_out();
    const Evaluation result = evaluate(*run.model, run.config.vocab, held_out);
    const auto alignment =
        alignment_by_head(*run.model, run.config.model, task, run.config.vocab, held_out, result.predictions);

    // Predictions for --input texts (with the right answer where the task can compute it).
    std::vector<std::vector<std::string>> input_sources, input_targets, input_predictions;
    for (const auto& text : args.inputs) {
        auto source = task.tokenize(text);
        if (source.empty()) throw UsageError("--input is empty");
        const std::vector<std::vector<std::int64_t>> ids{encode_tokens(run.config.vocab, source, true)};
        input_predictions.push_back(run.config.vocab.decode(run.model->predict(ids)[0]));
        input_targets.push_back(task.solve(source).value_or(std::vector<std::string>{}));
        input_sources.push_back(std::move(source));
    }

    if (args.json) {
        nlohmann::json examples = nlohmann::json::array();
        for (std::size_t i = 0; i < held_out.size() && static_cast<std::int64_t>(i) < args.show; ++i) {
            examples.push_back(example_json(task, held_out[i].source, held_out[i].target, result.predictions[i]));
        }
        nlohmann::json inputs = nlohmann::json::array();
        for (std::size_t i = 0; i < input_sources.size(); ++i) {
            inputs.push_back(example_json(task, input_sources[i], input_targets[i], input_predictions[i]));
        }
        nlohmann::json heads = nullptr;
        if (!alignment.empty()) {
            heads = nlohmann::json::array();
            for (const auto& a : alignment) {
                heads.push_back({{"layer", a.layer}, {"module", a.name}, {"head", a.head}, {"share", a.share}});
            }
        }
        const nlohmann::json out = {{"task", run.config.task.name},
                                    {"heldout_examples", held_out.size()},
                                    {"token_accuracy", result.token_accuracy},
                                    {"sequence_accuracy", result.sequence_accuracy},
                                    {"examples", std::move(examples)},
                                    {"inputs", std::move(inputs)},
                                    {"alignment", std::move(heads)}};
        fmt::print("{}\n", out.dump(2));
        return 0;
    }

    fmt::print("{} ({} held-out examples): token accuracy {:.2f}%, sequence accuracy {:.2f}%\n", run.config.task.name,
               held_out.size(), 100 * result.token_accuracy, 100 * result.sequence_accuracy);
    if (!alignment.empty()) {
        fmt::print("attention mass on the right source position ({}):\n", task.info().alignment);
        for (const auto& a : alignment) fmt::print("  layer {} ({}) head {}: {:.3f}\n", a.layer, a.name, a.head, a.share);
    }
    for (std::size_t i = 0; i < held_out.size() && static_cast<std::int64_t>(i) < args.show; ++i) {
        const bool ok = result.predictions[i] == held_out[i].target;
        fmt::print("  {} {} -> {}{}\n", ok ? "ok " : "err", task.detokenize(held_out[i].source),
                   task.detokenize(result.predictions[i]),
                   ok ? "" : fmt::format("   (expected {})", task.detokenize(held_out[i].target)));
    }
    for (std::size_t i = 0; i < input_sources.size(); ++i) {
        fmt::print("input: {} -> {}", task.detokenize(input_sources[i]), task.detokenize(input_predictions[i]));
        if (!input_targets[i].empty()) {
            fmt::print("   ({}, expected {})", input_predictions[i] == input_targets[i] ? "right" : "wrong",
                       task.detokenize(input_targets[i]));
        }
        fmt::print("\n");
    }
    return 0;
}

}  // namespace attograd::cli
