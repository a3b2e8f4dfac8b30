// The subcommands of the `attograd` program and the command-line entry point.
#pragma once

#include "config.hpp"
#include "quoting.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attograd::cli {

/// Raised for bad usage or bad input found by the program itself (exit code 2).
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// `attograd train` arguments. The settings' flags (settings.hpp) write into `flags`; options
/// not given keep the task's defaults: `given` lists the long names of those that were given
/// (e.g. "lr").
struct TrainArgs {
    std::string task, data, out, resume;
    bool chars = false;
    std::string lang;                          ///< --task translate: the catalogs' language
    std::int64_t min_freq = 2, max_vocab = 0;  ///< --task translate: the vocabulary's limits
    /// --task translate and --data: "separate" source and target vocabularies or one "shared"
    /// (default: separate for translate, shared for --data).
    std::string vocab;
    RunConfig flags;     ///< the values of the settings' flags (those in `given` count)
    bool force = false;  ///< --out may replace a run that is there
    bool quiet = false;
    std::vector<std::string> given;
    bool was_given(const std::string& name) const;
};

/// `attograd eval` arguments.
struct EvalArgs {
    std::string run;
    std::vector<std::string> inputs;
    bool json = false;
    std::string to;         ///< file to write the JSON results to ("" = none, "-" = stdout)
    std::int64_t show = 5;  ///< held-out examples printed
    std::int64_t beam = 1;  ///< beam size (1 = greedy); see DecodeSettings
    double length_penalty = 0.0;
};

/// `attograd inspect` arguments.
struct InspectArgs {
    std::string run;
    std::vector<std::string> inputs;
    std::int64_t samples = 1;
    bool samples_given = false;
    std::string format = "term";
    std::string to;
    std::vector<std::string> knockout;  ///< "LAYER.HEAD" texts (repeatable)
    bool saliency = false;
    bool rollout = false;
    bool flow = false;
    bool faithfulness = false;  ///< every head's faithfulness table (faithfulness_over_held_out)
    std::int64_t beam = 1;      ///< beam size (1 = greedy); see DecodeSettings
    double length_penalty = 0.0;
};

/// `attograd sample` arguments: nn::generate's sampling, PyTorch's and Hugging Face's semantics.
struct SampleArgs {
    std::string run;
    std::string prompt;
    double temperature = 1.0;   ///< logits are divided by it (> 0)
    std::int64_t top_k = 0;     ///< keep the k largest logits (>= 1), when top_k_given
    bool top_k_given = false;   ///< --top-k was given (else every token may be drawn)
    std::int64_t length = 200;  ///< tokens to draw after the prompt
    std::uint64_t seed = 0;     ///< the same seed draws the same text
    static constexpr std::int64_t max_length = 10000;
};

/// Prints the bundled tasks: name, example, default model, target, right alignment.
int cmd_tasks();
/// Trains a model (docs/reference/program.md); returns the exit code.
int cmd_train(const TrainArgs& args);
/// Evaluates a saved run on its held-out split and on --input texts.
int cmd_eval(const EvalArgs& args);
/// Draws a saved run's attention for --input texts or held-out samples.
int cmd_inspect(const InspectArgs& args);
/// Prints the prompt followed by `length` tokens drawn from a language model run (--model lm).
/// Throws UsageError for bad flags, a prompt the vocabulary cannot read, or another kind of run.
int cmd_sample(const SampleArgs& args);

/// Parses the command line and runs the subcommand. Exit codes: 0 success, 2 bad usage or bad
/// input (one line on stderr), 1 internal failure.
int run_cli(int argc, char** argv);

}  // namespace attograd::cli
