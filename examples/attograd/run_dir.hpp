// A run directory: what `train` writes and `eval` / `inspect` / `train --resume` read.
//
//   DIR/config.json         the RunConfig (format version, task, model, training, vocabulary)
//                           and the run's progress; written last, so its presence marks a
//                           complete run
//   DIR/model.safetensors   the model's state_dict
//   DIR/optimizer.safetensors  the optimizer's and schedule's state (for --resume)
//   DIR/metrics.csv         step, loss, accuracies, lr, seconds
//   DIR/heldout.tsv         user data runs: the held-out examples
//   DIR/attention_snapshots.safetensors  the first held-out examples' attention every
//                           --snapshot-every steps (inspect::save_snapshots; absent when off)
#pragma once

#include "config.hpp"
#include "models.hpp"
#include "tasks.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace attograd::cli {

/// A run opened from its directory.
struct LoadedRun {
    std::filesystem::path dir;
    RunConfig config;
    nlohmann::json progress;             ///< config.json's "progress" (steps_done, seconds, ...)
    std::unique_ptr<Task> task;
    std::unique_ptr<Generator> generator;  ///< the model's generator (hard attention samples from it)
    std::shared_ptr<Model> model;
};

/// The task `config` names: a bundled task, or user data: for training the TSV file named in
/// the config, otherwise the held-out examples saved in `dir`/heldout.tsv.
std::unique_ptr<Task> task_for_run(const RunConfig& config, const std::filesystem::path& dir, bool for_training);

/// Throws IoError naming `file` and the tensor when a floating tensor of `state` holds NaN or
/// Inf: a flipped byte can leave a well-formed checkpoint whose weights would be drawn as
/// confident garbage, or whose optimizer state would look like a diverged run.
void check_all_finite(const std::map<std::string, Tensor>& state, const std::filesystem::path& file);

/// Opens `dir`: reads config.json (refusing other format versions), rebuilds the task and the
/// model and loads model.safetensors. Throws IoError naming the file when the directory or a
/// file is missing, unreadable or corrupt, or when the checkpoint does not fit config.json;
/// ValueError for a bad config. The model is in eval mode.
LoadedRun load_run(const std::filesystem::path& dir, bool for_training = false);

}  // namespace attograd::cli
