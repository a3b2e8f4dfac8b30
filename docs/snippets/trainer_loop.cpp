// A resumable training program with train::Trainer: Ctrl-C and run again to resume bit for bit.
#include <attograd/attograd.hpp>
using namespace attograd;

int main() {
    Generator init(0);
    nn::Linear model({.in_features = 4, .out_features = 2}, init);  // your model
    optim::Adam optimizer(model.parameters(), {.lr = 0.01});
    optim::CosineAnnealingLR schedule(optimizer, {.T_max = 2000});
    const Tensor w = tensor({0.5, -1.0, 0.25, 2.0, -0.75, 0.1, 1.5, -0.5}, {4, 2});

    train::Trainer trainer(
        model, optimizer,
        {.max_steps = 2000, .val_check_interval = 200, .seed = 1, .default_root_dir = "runs/linear"});
    trainer.set_scheduler(&schedule).set_config({{"in_features", 4}});
    trainer.add_callback(std::make_shared<train::ModelCheckpoint>());  // every 100 steps
    trainer.add_callback(std::make_shared<train::DivergenceMonitor>());
    trainer.add_callback(std::make_shared<train::CSVLogger>(train::CSVLoggerOptions{
        .train_columns = {{"loss", "loss"}}, .val_columns = {{"val_loss", "val_loss"}}}));
    trainer.add_callback(std::make_shared<train::EarlyStopping>(
        train::EarlyStoppingOptions{.monitor = "val_loss", .stopping_threshold = 1e-4, .mode = "min"}));
    trainer.add_callback(std::make_shared<train::ProgressBar>("", false));

    const auto step = [&](std::int64_t, Generator& g) {  // all randomness from g
        const Tensor x = randn({32, 4}, g);
        return train::StepOutput{.loss = mse_loss(model.forward(x), matmul(x, w)), .logs = {}};
    };
    const auto validate = [&] {
        NoGradGuard no_grad;
        Generator fixed(99);
        const Tensor x = randn({256, 4}, fixed);
        return train::Metrics{{"val_loss", mse_loss(model.forward(x), matmul(x, w)).item()}};
    };
    const train::FitResult result = trainer.fit(step, validate, train::ckpt_last);
    return result.signal != 0 ? 128 + result.signal : 0;
}
