// `attograd train`: parses the run (train_setup.hpp), builds the library's Trainer with the
// program's step and callbacks (train_step.hpp), and fits it into the run directory.
#include "commands.hpp"
#include "console.hpp"
#include "data_parallel.hpp"
#include "fraction_text.hpp"
#include "snapshot_probes.hpp"
#include "train_setup.hpp"
#include "train_step.hpp"

#include "core/error.hpp"
#include "core/gemm_backend.hpp"
#include "data/text.hpp"
#include "train/callbacks.hpp"
#include "train/run_lock.hpp"
#include "train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace attograd::cli {

namespace {

/// Held-out examples whose attention `train` snapshots, and the most snapshots a run keeps
/// (a longer run thins them and doubles the period: inspect::SnapshotOptions).
constexpr std::int64_t max_snapshots = 32;

/// A ValueError met in the model's own outputs on inputs checked when the run was set up (the
/// training batches, the held-out examples, the snapshot probes): with finite parameters the
/// outputs can still overflow (a huge --lr), which is the run diverging, not a bad input. A plain
/// ValueError, as only the ranks that compute it meet it (snapshots are rank 0's).
ValueError diverged_outputs(std::int64_t step, const ValueError& e) {
    return ValueError(fmt::format(
        "training diverged at step {}: {}; try a lower --lr or --weight-decay, or --clip", step, e.what()));
}

}  // namespace

int cmd_train(const TrainArgs& args) {
    // Under mpirun every rank trains on its share of each batch; rank 0 prints and writes.
    const optim::ProcessGroup& ranks = train_world();
    // From here to the end of training a signal is recorded, not the default action: set-up
    // takes the run's lock (and may make folders for it), which a killed process would leave.
    // Trainer::fit's own guard nests in this one and keeps a signal that arrived before it.
    std::optional<train::InterruptGuard> signals(std::in_place);
    TrainSetup run = setup_training(args, ranks);
    signals->test_hook(-1);  // as a signal while setting up would
    const RunConfig& config = run.config;
    const TrainConfig& t = config.train;
    const TaskInfo& info = run.task->info();
    Model& model = *run.model;
    auto optimizer = make_optimizer(t, model.parameters());
    auto schedule = make_schedule(*optimizer, t);
    check_resume_state(run, *optimizer, schedule.get());
    if (!setup_agreed()) return 2;  // another rank's set-up failed and said why

    TrainStep step(model, *run.model_generator, config, *run.task, ranks);
    train::Trainer trainer(
        model, *optimizer,
        {.max_steps = t.steps,
         .val_check_interval = t.eval_every,
         .log_every_n_steps = std::max<std::int64_t>(1, std::min<std::int64_t>(t.eval_every, 10)),
         .gradient_clip_val = t.clip,
         .seed = t.seed,
         .default_root_dir = run.out,
         .is_global_zero = ranks.is_main(),
         .replace_run = true,  // --out was checked (--force) by setup_training
         .sync_signal = agreed_signal});
    trainer.set_lock(std::move(run.lock)).set_scheduler(schedule.get()).set_config(to_json(config));
    auto bar = std::make_shared<train::ProgressBar>("accuracy", args.quiet || !ranks.is_main());
    const std::string metric =
        info.metric == Metric::Sequence ? "heldout_sequence_accuracy" : "heldout_token_accuracy";
    auto early_stopping = std::make_shared<train::EarlyStopping>(train::EarlyStoppingOptions{
        .monitor = metric, .stopping_threshold = target_accuracy(info.name), .stop = t.early_stop});
    trainer.add_callback(std::make_shared<train::DivergenceMonitor>(
        train::DivergenceMonitorOptions{.hint = "try a lower --lr or --weight-decay, or --clip"}));
    trainer.add_callback(std::make_shared<AverageGradients>(model, step));  // rank 0's parameters everywhere
    trainer.add_callback(bar)
        .add_callback(std::make_shared<ValidationLine>(bar))
        .add_callback(early_stopping);
    // Snapshots of the first held-out examples' attention (they draw no random numbers: the
    // training is the same with and without them).
    std::shared_ptr<train::AttentionSnapshots> snapshots;
    if (t.snapshot_every > 0 && ranks.is_main()) {
        auto probes =
            snapshot_probes(model, config.model, *run.task, vocabularies(config), snapshot_probe_count);
        if (!probes.empty()) {
            for (inspect::SnapshotProbe& probe : probes) {
                probe.forward = [forward = std::move(probe.forward), &trainer] {
                    try {
                        return forward();
                    } catch (const ValueError& e) {
                        throw diverged_outputs(trainer.global_step(), e);
                    }
                };
            }
            // The period the earlier run reached, unless --snapshot-every changed it.
            const bool same_period = !args.was_given("snapshot-every") ||
                                     args.flags.train.snapshot_every == run.run_snapshot_every;
            snapshots = std::make_shared<train::AttentionSnapshots>(
                model, std::move(probes),
                train::AttentionSnapshotsOptions{
                    .snapshot = {.every = t.snapshot_every, .max_snapshots = max_snapshots},
                    .filename = snapshot_file,
                    .resume_period = same_period,
                    .check_loaded = [&](const std::vector<inspect::AttentionSnapshot>& loaded,
                                        std::int64_t steps_done) {
                        check_run_snapshots(
                            loaded, vocabularies(config).target, steps_done,
                            snapshot_layout(model, config.model, *run.task, vocabularies(config)),
                            probe_outputs(model, config.model, *run.task, vocabularies(config)));
                    }});
            trainer.add_callback(snapshots);
        }
    }
    if (!snapshots) trainer.add_callback(std::make_shared<KeptSnapshots>());
    trainer.add_callback(std::make_shared<train::CSVLogger>(metrics_csv_options()));
    trainer.add_callback(std::make_shared<HeldoutFile>(config, *run.task));
    trainer.add_callback(std::make_shared<ProbePredictions>(model, config, *run.task));
    trainer.add_callback(std::make_shared<KernelRecord>());
    trainer.add_callback(std::make_shared<FirstStepRanks>(ranks.size()));
    trainer.add_callback(std::make_shared<train::ModelCheckpoint>(
        train::ModelCheckpointOptions{.every_n_train_steps = t.checkpoint_every}));

    std::int64_t parameters = 0;
    for (const auto& p : model.parameters()) parameters += p.numel();
    const std::int64_t uniform = config.model.uniform_attention;
    bar->line(fmt::format(
        "{} {}: {}{}", run.resuming ? "resuming" : "training", info.name, describe(config, parameters),
        uniform >= 0 ? fmt::format("; attention layer {} ({}) held uniform", uniform,
                                   model.attention_layers()[static_cast<std::size_t>(uniform)].name)
                     : ""));
    bar->line(fmt::format(
        "{} lr {:g}, batch {}, {} steps from step {}; target {:.0f}% held-out {} accuracy on {} examples",
        t.optim, t.lr, t.batch, t.steps, run.counters.steps_done, 100 * target_accuracy(info.name),
        info.metric == Metric::Sequence ? "sequence" : "token", run.task->held_out().size()));

    if (const std::string cpu = machine_cpu();
        run.resuming && ranks.is_main() &&
        (run.counters.gemm_library != gemm_library() || run.counters.cpu != cpu))
        output(stderr,
               "attograd: warning: the run trained on {} on '{}', and this resume runs on {} on '{}': its "
               "steps may differ in their last bits from those of the run never interrupted\n",
               data::escape_control(run.counters.gemm_library), data::escape_control(run.counters.cpu),
               gemm_library(), data::escape_control(cpu));
    const train::ValidationFunction validate = heldout_validation(model, config, *run.task, trainer);
    if (const int signal = signals->signal(); signal != 0) {
        output(stderr, "attograd: {} before training started: nothing was written\n",
               train::signal_name(signal));
        return 128 + signal;  // the lock, and the folders made for it, go with `run`
    }
    train::FitResult result;
    try {
        result = trainer.fit(
            [&](std::int64_t at, Generator& generator) {
                try {
                    return step(at, generator);
                } catch (const ValueError& e) {
                    throw diverged_outputs(at + 1, e);
                }
            },
            [&] {
                try {
                    return validate();
                } catch (const ValueError& e) {
                    throw diverged_outputs(trainer.global_step(), e);
                }
            },
            run.resuming ? run.out : std::filesystem::path());
    } catch (const train::Diverged& e) {  // any other error is reported as itself
        throw_on_every_rank(e);           // decided from figures every rank shares
    }
    signals.reset();
    // As the user gave it, unless the kernel cannot follow that path (`new/../link` with `new`
    // missing, which the run directory resolved lexically): then where the run is.
    std::error_code missing;
    const std::string out = shell_quote(
        (std::filesystem::exists(run.out, missing) ? run.out : train::run_directory_path(run.out)).string());
    if (result.signal != 0) {
        if (ranks.is_main())
            output(stderr,
                   "attograd: {} at step {} of {}: saved the run; continue it with `attograd train --resume "
                   "{}`\n",
                   train::signal_name(result.signal), result.global_step, t.steps, out);
        return 128 + result.signal;
    }
    if (!ranks.is_main()) return 0;
    output(stdout, "{}: held-out sequence accuracy {}%, token accuracy {}% after {} steps in {:.1f} s{}\n",
           info.name, fraction_text(result.validation["heldout_sequence_accuracy"], 1, 100),
           fraction_text(result.validation["heldout_token_accuracy"], 1, 100), result.global_step,
           trainer.seconds(),
           early_stopping->reached()
               ? fmt::format(" (target {:.0f}% reached)", 100 * target_accuracy(info.name))
               : "");
    std::error_code ec;
    const bool heldout_file =
        std::filesystem::exists(std::filesystem::path(run.out) / "heldout.tsv", ec);  // a --data run's split
    const std::string written = shown_path(run.out);
    output(
        stdout,
        "wrote {}{} (model.safetensors, optimizer.safetensors, config.json, metrics.csv{}{}); next: attograd "
        "inspect --run {}\n",
        written, written.ends_with('/') ? "" : "/", snapshots ? ", " + std::string(snapshot_file) : "",
        heldout_file ? ", heldout.tsv" : "", out);
    return 0;
}

}  // namespace attograd::cli
