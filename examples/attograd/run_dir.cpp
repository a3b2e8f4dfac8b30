// A run directory: what `train` writes and `eval` / `inspect` / `train --resume` read.
#include "run_dir.hpp"

#include "file_io.hpp"
#include "core/error.hpp"
#include "core/serialization.hpp"
#include "data_task.hpp"

#include <algorithm>
#include <cmath>

namespace attograd::cli {

std::unique_ptr<Task> task_for_run(const RunConfig& config, const std::filesystem::path& dir, bool for_training) {
    if (config.task.name != "data") return make_task(config.task.name);
    if (for_training) return make_data_task(read_tsv(config.task.data, config.task.chars), config.task.chars);
    const auto path = dir / "heldout.tsv";
    auto held_out = parse_tsv(read_file(path), config.task.chars, path.string());
    std::vector<std::string> symbols(config.vocab.tokens().begin() + 4, config.vocab.tokens().end());
    return make_saved_data_task(std::move(held_out), config.task.chars, std::move(symbols));
}

void check_all_finite(const std::map<std::string, Tensor>& state, const std::filesystem::path& file) {
    for (const auto& [name, tensor] : state) {
        if (!is_floating(tensor.dtype())) continue;
        const auto values = tensor.to_vector<double>();
        AG_CHECK(std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); }), IoError,
                 "{}: tensor '{}' holds NaN or Inf values (a corrupt checkpoint)", file.string(), name);
    }
}

LoadedRun load_run(const std::filesystem::path& dir, bool for_training) {
    AG_CHECK(std::filesystem::is_directory(dir), IoError, "{}: no such run directory", dir.string());
    const auto config_path = dir / "config.json";
    AG_CHECK(std::filesystem::exists(config_path), IoError,
             "{}: not a run directory (no config.json; `attograd train --out DIR` writes one)", dir.string());
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(read_file(config_path));
    } catch (const nlohmann::json::exception& e) {
        throw IoError(fmt::format("{}: not valid JSON: {}", config_path.string(), e.what()));
    }
    LoadedRun run;
    run.dir = dir;
    run.config = run_config_from_json(json);
    run.progress = json.value("progress", nlohmann::json::object());
    run.task = task_for_run(run.config, dir, for_training);
    validate(run.config, run.task->info());
    run.generator = std::make_unique<Generator>(run.config.train.seed);
    run.model = make_model(run.config.model, run.config.vocab, *run.generator);
    const auto weights = dir / "model.safetensors";
    const auto state = load_safetensors(weights);  // IoError naming the file when corrupt
    check_all_finite(state, weights);
    try {
        run.model->load_state_dict(state);
    } catch (const Error& e) {
        throw IoError(fmt::format("{}: does not fit config.json: {}", weights.string(), e.what()));
    }
    run.model->eval();
    return run;
}

}  // namespace attograd::cli
