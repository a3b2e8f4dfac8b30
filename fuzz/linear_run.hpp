// The training run that fuzz_run_dir resumes and make_run_dir_corpus writes: a linear model
// trained by the library's Trainer with Adam, a cosine schedule, checkpoints, the divergence
// rule, early stopping and a CSV log (docs/snippets/trainer_loop.cpp's run, a few steps long).
#pragma once

#include "attograd.hpp"

#include <filesystem>
#include <memory>

namespace attograd::fuzzing {

/// Everything a Trainer over the run directory `dir` needs; fit() trains to `max_steps`.
class LinearRun {
public:
    LinearRun(const std::filesystem::path& dir, std::int64_t max_steps)
        : model_({.in_features = 4, .out_features = 2}, init_),
          optimizer_(model_.parameters(), {.lr = 0.01}),
          schedule_(optimizer_, {.T_max = 8}),
          trainer_(model_, optimizer_,
                   {.max_steps = max_steps,
                    .val_check_interval = 2,
                    .log_every_n_steps = 1,
                    .seed = 1,
                    .default_root_dir = dir,
                    .handle_signals = false}) {
        trainer_.set_scheduler(&schedule_).set_config({{"in_features", 4}});
        trainer_.add_callback(std::make_shared<train::ModelCheckpoint>());
        trainer_.add_callback(std::make_shared<train::DivergenceMonitor>());
        trainer_.add_callback(std::make_shared<train::CSVLogger>(train::CSVLoggerOptions{
            .train_columns = {{"loss", "loss"}}, .val_columns = {{"val_loss", "val_loss"}}}));
        trainer_.add_callback(std::make_shared<train::EarlyStopping>(
            train::EarlyStoppingOptions{.monitor = "val_loss", .stopping_threshold = 1e-4, .mode = "min"}));
    }

    /// Trains a new run (empty `ckpt_path`) or resumes the one at `ckpt_path`.
    train::FitResult fit(const std::filesystem::path& ckpt_path) {
        const Tensor w = tensor({0.5, -1.0, 0.25, 2.0, -0.75, 0.1, 1.5, -0.5}, {4, 2});
        const auto step = [&](std::int64_t, Generator& g) {
            const Tensor x = randn({8, 4}, g);
            return train::StepOutput{.loss = mse_loss(model_.forward(x), matmul(x, w)), .logs = {}};
        };
        const auto validate = [&] {
            NoGradGuard no_grad;
            Generator fixed(99);
            const Tensor x = randn({16, 4}, fixed);
            return train::Metrics{{"val_loss", mse_loss(model_.forward(x), matmul(x, w)).item()}};
        };
        return trainer_.fit(step, validate, ckpt_path);
    }

private:
    Generator init_{0};
    nn::Linear model_;
    optim::Adam optimizer_;
    optim::CosineAnnealingLR schedule_;
    train::Trainer trainer_;
};

/// The files of a run that the fuzz input carries, in its order.
inline constexpr const char* kRunFiles[] = {"config.json", "model.safetensors", "optimizer.safetensors",
                                            "metrics.csv"};

}  // namespace attograd::fuzzing
