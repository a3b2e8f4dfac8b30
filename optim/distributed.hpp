// Data-parallel training over MPI: the process group and gradient averaging across ranks.
#pragma once

#include "core/error.hpp"
#include "core/tensor.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace attograd::optim {

/// An MPI call failed, MPI is missing, or the ranks disagree (e.g. on their parameters). The
/// message starts with the attograd function and, for a failed call, gives the MPI call and
/// MPI's own error string.
class DistributedError : public Error {
public:
    using Error::Error;
};

/// Whether this build of attograd has MPI (CMake option ATTOGRAD_USE_MPI).
bool mpi_available();

/// The number of processes an MPI launcher (Open MPI's mpirun, MPICH's hydra, PMIx, srun)
/// started, read from its environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE) without
/// initialising MPI; 1 for a process no launcher started.
int launcher_world_size();
/// This process's rank as the launcher numbered it (OMPI_COMM_WORLD_RANK, PMI_RANK,
/// PMIX_RANK), without initialising MPI: for a program to know, before world(), whether it is
/// rank 0; 0 for a process no launcher started.
int launcher_rank();
/// True when an MPI launcher started this process, even as the only one (`mpirun -np 1`):
/// its standard streams are then the launcher's forwarding, often a terminal of its own
/// whatever the launcher's output is redirected to.
bool under_launcher();

/// The processes of this run: MPI_COMM_WORLD, duplicated so that attograd's error handler
/// (MPI_ERRORS_RETURN: every failure becomes a DistributedError) does not change the user's.
///
/// Use world() to get it. A process not started by an MPI launcher (no OMPI_COMM_WORLD_SIZE,
/// PMI_SIZE or PMIX_RANK in the environment) is rank 0 of 1 and never initialises MPI; every
/// collective below is then the identity with no MPI call. Collectives must be called by
/// every rank in the same order (MPI's rule); a rank that fails instead should call abort().
/// Single-threaded use: call it from one thread at a time (MPI_THREAD_FUNNELED).
class ProcessGroup {
public:
    ProcessGroup(const ProcessGroup&) = delete;
    ProcessGroup& operator=(const ProcessGroup&) = delete;
    ~ProcessGroup();

    /// This process's index in [0, size()).
    int rank() const { return rank_; }
    /// The number of processes (MPI's world size).
    int size() const { return size_; }
    /// Whether this is rank 0, the one that prints and writes files.
    bool is_main() const { return rank_ == 0; }

    /// Sums `values` over the ranks, element by element, in float64 (MPI_Allreduce, MPI_SUM);
    /// every rank gets the sums. Exact for integer counts below 2^53; for other values the
    /// order of the additions is MPI's. Throws DistributedError.
    std::vector<double> sum(std::vector<double> values) const;
    /// Whether `flag` is true on any rank (MPI_LOR). Throws DistributedError.
    bool any(bool flag) const;
    /// Overwrites every tensor with rank `root`'s values (MPI_Bcast, in order; float32,
    /// float64, int64 and bool). Every rank must pass tensors of the same shapes and dtypes:
    /// throws DistributedError naming the first tensor that differs, on every rank.
    void broadcast(const std::vector<Tensor>& tensors, int root = 0) const;
    /// Waits for every rank (MPI_Barrier). Throws DistributedError.
    void barrier() const;
    /// Prints "attograd: rank R of N: <message>" on standard error and ends every rank with
    /// `code` (MPI_Abort): a rank that cannot go on must not leave the others waiting in a
    /// collective. In a single process it prints the same line and calls std::exit(code).
    [[noreturn]] void abort(int code, std::string_view message) const;

    /// A pointer to attograd's MPI communicator (`*static_cast<MPI_Comm*>(...)`) for code that
    /// calls MPI itself; null in a single process.
    void* native_handle() const;

private:
    friend ProcessGroup& world();
    ProcessGroup();
    struct Impl;
    std::unique_ptr<Impl> impl_;
    int rank_ = 0, size_ = 1;
};

/// The process group of this run, initialised (MPI_Init_thread) on the first call when
/// started by an MPI launcher, and finalised at exit. Throws DistributedError when MPI fails
/// to start, or when this build has no MPI but an MPI launcher started several processes
/// (they would each train alone and write the same files).
ProcessGroup& world();

/// Options of DistributedDataParallel, named as in PyTorch's DDP where it has them.
struct DistributedDataParallelOptions {
    /// Size of one allreduce in MiB (PyTorch's `bucket_cap_mb`, default 25): the gradients,
    /// packed in registration order, are reduced in chunks of this many bytes.
    double bucket_cap_mb = 25.0;
    /// Reduce deterministically: rank 0 gathers each bucket (MPI_Gather), adds the ranks'
    /// weighted gradients in rank order in float64, and broadcasts the result (MPI_Bcast).
    /// Bit for bit the same over repeated runs on the same number of ranks, whatever MPI's
    /// allreduce algorithm; slower (rank 0 receives every rank's gradients).
    bool deterministic = false;
};

/// Data-parallel gradient averaging over the ranks of world(), as PyTorch's
/// DistributedDataParallel (Li et al. 2020, "PyTorch Distributed: Experiences on
/// Accelerating Data Parallel Training", VLDB; the `torch.nn.parallel.DistributedDataParallel`
/// docs) but over a list of parameters and called explicitly after backward:
///
///     DistributedDataParallel ddp(model.parameters());   // rank 0's values everywhere
///     loss.backward();                                    // each rank on its share of the batch
///     ddp.average_gradients(examples_on_this_rank);       // every rank: the same gradients
///     optimizer.step();
///
/// With rank r's gradient g_r of the mean loss over its n_r examples and weight w_r = n_r,
/// every rank gets  g = sum_r w_r g_r / sum_r w_r,  which is the gradient of the mean loss
/// over all examples: one process with the whole batch gets the same, to float rounding
/// (uneven splits included). Equal weights (the default 1) give the plain average, PyTorch's.
///
/// What is guaranteed: every rank ends with the same bits in every gradient (Open MPI's
/// allreduce gives all ranks one result, which the MPI standard only recommends; the
/// deterministic option broadcasts one whatever the MPI), so the ranks' parameters
/// never drift apart; with `deterministic`, the same bits on every repeated run with the same
/// ranks and inputs. What is not: bit equality with one process (a different summation
/// order), or between runs on different numbers of ranks; equality at all when the loss is
/// not a mean of per-example terms weighted as above, or when the model draws random numbers
/// (dropout, hard attention) whose draws depend on the split.
///
/// A parameter with no gradient on a rank counts as a zero gradient there; one with no
/// gradient on any rank keeps none (the optimizer skips it, as it would in one process).
/// At world size 1 the constructor and average_gradients() make no MPI call.
class DistributedDataParallel {
public:
    /// Checks that every rank has the same parameters (count, dtypes, shapes: a
    /// DistributedError on every rank otherwise) and overwrites them with rank 0's values.
    /// Throws ValueError on an undefined parameter, a non-float one, or bucket_cap_mb not in
    /// (0, 2048].
    explicit DistributedDataParallel(std::vector<Tensor> parameters,
                                     DistributedDataParallelOptions options = {});
    ~DistributedDataParallel();
    DistributedDataParallel(const DistributedDataParallel&) = delete;
    DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

    /// Replaces every parameter's gradient by the weighted average over the ranks (see the
    /// class). `weight` is this rank's share, usually its number of examples or target tokens;
    /// 0 for a rank with no examples. Collective: every rank calls it once per step. Throws
    /// ValueError on every rank when the weights sum to 0, and on this rank alone when
    /// `weight` is negative or not finite (call ProcessGroup::abort then); DistributedError when
    /// MPI fails; DTypeError when a gradient's dtype differs from its parameter's.
    void average_gradients(double weight = 1.0);

    /// The parameters, in registration order (the bucket order).
    const std::vector<Tensor>& parameters() const { return params_; }
    /// The number of buckets per average_gradients() call (0 at world size 1).
    std::int64_t bucket_count() const;
    /// Bytes of gradient each rank sends per average_gradients() call on several ranks (the
    /// parameters' bytes; excluding the header of one float64 per parameter plus one).
    std::int64_t gradient_bytes() const;
    /// Wall-clock seconds spent in MPI calls by average_gradients() so far.
    double communication_seconds() const { return comm_seconds_; }

private:
    struct Buffers;
    std::vector<Tensor> params_;
    DistributedDataParallelOptions options_;
    std::unique_ptr<Buffers> buffers_;
    double comm_seconds_ = 0.0;
};

}  // namespace attograd::optim
