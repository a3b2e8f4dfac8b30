// ProcessGroup and DistributedDataParallel over MPI's C API; without MPI, one process of one.
#include "optim/distributed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#ifdef ATTOGRAD_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: no deprecated C++ bindings
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace attograd::optim {

int launcher_world_size() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
        if (const char* value = std::getenv(name)) return std::max(1, std::atoi(value));
    }
    return std::getenv("PMIX_RANK") != nullptr ? 2 : 1;  // PMIx without a size: assume several
}

bool under_launcher() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "PMIX_RANK"}) {
        if (std::getenv(name) != nullptr) return true;
    }
    return false;
}

int launcher_rank() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
        if (const char* value = std::getenv(name)) return std::max(0, std::atoi(value));
    }
    return 0;
}

namespace {

using Clock = std::chrono::steady_clock;

// abort()'s last words on stderr: a failed write (stderr closed or full) must not keep the
// process from exiting with its code, so it is not fmt::print's exception.
void print_abort_message(const std::string& text) {
    (void)std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
}

}  // namespace

bool mpi_available() {
#ifdef ATTOGRAD_MPI
    return true;
#else
    return false;
#endif
}

// --- ProcessGroup ---------------------------------------------------------------------------

#ifdef ATTOGRAD_MPI
struct ProcessGroup::Impl {
    MPI_Comm comm = MPI_COMM_NULL;
    bool finalize = false;  // we initialised MPI, so we finalise it
};

namespace {

// Turns an MPI return code into a DistributedError naming the attograd function and the call.
void check_mpi(int code, std::string_view where, std::string_view call) {
    if (code == MPI_SUCCESS) [[likely]]
        return;
    std::array<char, MPI_MAX_ERROR_STRING> text{};
    int length = 0;
    if (MPI_Error_string(code, text.data(), &length) != MPI_SUCCESS) length = 0;
    throw DistributedError(
        fmt::format("{}: {} failed: {}", where, call, std::string_view(text.data(), length)));
}

// A fingerprint of the tensors' dtypes and shapes (FNV-1a, 64 bits), one per tensor.
std::vector<std::uint64_t> signatures(const std::vector<Tensor>& tensors) {
    std::vector<std::uint64_t> out;
    out.reserve(tensors.size());
    for (const Tensor& t : tensors) {
        std::uint64_t h = 0xcbf29ce484222325ULL;
        const auto mix = [&](std::uint64_t v) {
            for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xff)) * 0x100000001b3ULL;
        };
        mix(static_cast<std::uint64_t>(t.dtype()));
        mix(static_cast<std::uint64_t>(t.dim()));
        for (const std::int64_t d : t.shape()) mix(static_cast<std::uint64_t>(d));
        out.push_back(h);
    }
    return out;
}

MPI_Datatype mpi_type(float) { return MPI_FLOAT; }
MPI_Datatype mpi_type(double) { return MPI_DOUBLE; }

// MPI counts are int: large buffers go in pieces of at most 1 GiB.
constexpr std::size_t kMaxBytes = std::size_t{1} << 30;

}  // namespace

ProcessGroup::ProcessGroup() : impl_(std::make_unique<Impl>()) {
    if (launcher_world_size() == 1) return;  // a single process: MPI stays untouched
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
        int provided = 0;
        // Errors during MPI_Init itself are fatal by MPI's default (MPI ends the process).
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        impl_->finalize = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm), "world", "MPI_Comm_dup");
    check_mpi(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN), "world", "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(impl_->comm, &rank_), "world", "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(impl_->comm, &size_), "world", "MPI_Comm_size");
}

ProcessGroup::~ProcessGroup() {
    if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (impl_->finalize && !finalised) MPI_Finalize();
}

std::vector<double> ProcessGroup::sum(std::vector<double> values) const {
    if (size_ == 1 || values.empty()) return values;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM,
                            impl_->comm),
              "ProcessGroup::sum", "MPI_Allreduce");
    return values;
}

bool ProcessGroup::any(bool flag) const {
    if (size_ == 1) return flag;
    int value = flag ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, impl_->comm), "ProcessGroup::any",
              "MPI_Allreduce");
    return value != 0;
}

void ProcessGroup::broadcast(const std::vector<Tensor>& tensors, int root) const {
    AG_CHECK(root >= 0 && root < size_, ValueError,
             "ProcessGroup::broadcast: root {} is not a rank in [0, {})", root, size_);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        AG_CHECK(tensors[i].defined(), ValueError, "ProcessGroup::broadcast: tensor {} is undefined", i);
    }
    if (size_ == 1) return;
    // Every rank compares its fingerprints with the minimum and maximum over the ranks (one
    // MPI_MIN over [h, ~h]), first of the count, then of each tensor, so that all ranks throw
    // together instead of exchanging buffers of different sizes.
    const auto agree = [&](std::vector<std::uint64_t> h) {
        std::vector<std::uint64_t> both(h.size() * 2);
        for (std::size_t k = 0; k < h.size(); ++k) both[2 * k] = h[k], both[2 * k + 1] = ~h[k];
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, both.data(), static_cast<int>(both.size()), MPI_UINT64_T,
                                MPI_MIN, impl_->comm),
                  "ProcessGroup::broadcast", "MPI_Allreduce");
        for (std::size_t k = 0; k < h.size(); ++k)
            if (both[2 * k] != ~both[2 * k + 1]) return static_cast<std::int64_t>(k);
        return std::int64_t{-1};
    };
    AG_CHECK(agree({tensors.size()}) < 0, DistributedError,
             "ProcessGroup::broadcast: the ranks pass different numbers of tensors (rank {} has {})", rank_,
             tensors.size());
    const std::int64_t differs = agree(signatures(tensors));
    AG_CHECK(
        differs < 0, DistributedError,
        "ProcessGroup::broadcast: tensor {} differs in dtype or shape between the ranks (rank {} has {} {})",
        differs, rank_, differs < 0 ? "" : dtype_name(tensors[differs].dtype()),
        differs < 0 ? Shape{} : tensors[differs].shape());
    for (const Tensor& t : tensors) {
        auto* bytes = static_cast<char*>(const_cast<Tensor&>(t).raw_data());
        const std::size_t total = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
        for (std::size_t done = 0; done < total; done += kMaxBytes) {
            const int n = static_cast<int>(std::min(kMaxBytes, total - done));
            check_mpi(MPI_Bcast(bytes + done, n, MPI_BYTE, root, impl_->comm), "ProcessGroup::broadcast",
                      "MPI_Bcast");
        }
    }
}

void ProcessGroup::barrier() const {
    if (size_ > 1) check_mpi(MPI_Barrier(impl_->comm), "ProcessGroup::barrier", "MPI_Barrier");
}

void ProcessGroup::abort(int code, std::string_view message) const {
    print_abort_message(fmt::format("attograd: rank {} of {}: {}\n", rank_, size_, message));
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
}

void* ProcessGroup::native_handle() const {
    return impl_->comm == MPI_COMM_NULL ? nullptr : static_cast<void*>(&impl_->comm);
}

#else  // no MPI: every process is rank 0 of 1

struct ProcessGroup::Impl {};

ProcessGroup::ProcessGroup() : impl_(std::make_unique<Impl>()) {
    const int launched = launcher_world_size();
    AG_CHECK(launched == 1, DistributedError,
             "world: an MPI launcher started {} processes, but this attograd was built without MPI "
             "(ATTOGRAD_USE_MPI=OFF or MPI not found); each would train alone. Install libopenmpi-dev and "
             "rebuild, or run one process",
             launched);
}
ProcessGroup::~ProcessGroup() = default;
std::vector<double> ProcessGroup::sum(std::vector<double> values) const { return values; }
bool ProcessGroup::any(bool flag) const { return flag; }
void ProcessGroup::broadcast(const std::vector<Tensor>& tensors, int root) const {
    AG_CHECK(root == 0, ValueError, "ProcessGroup::broadcast: root {} is not a rank in [0, 1)", root);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        AG_CHECK(tensors[i].defined(), ValueError, "ProcessGroup::broadcast: tensor {} is undefined", i);
    }
}
void ProcessGroup::barrier() const {}
void ProcessGroup::abort(int code, std::string_view message) const {
    print_abort_message(fmt::format("attograd: rank 0 of 1: {}\n", message));
    std::exit(code);
}
void* ProcessGroup::native_handle() const { return nullptr; }

#endif

ProcessGroup& world() {
    static ProcessGroup group;  // MPI_Init on first use, MPI_Finalize at exit
    return group;
}

// --- DistributedDataParallel ----------------------------------------------------------------

namespace {

// The gradients of one dtype, packed in registration order, and the rank-0 gather space.
template <class T>
struct Flat {
    std::vector<std::size_t> params;  // indices into the parameter list
    std::vector<T> data;
    std::vector<T> gathered;     // deterministic, rank 0: size() x chunk
    std::vector<double> totals;  // deterministic, rank 0: one chunk of float64 sums
    std::size_t chunk = 1;       // elements per bucket
    std::int64_t buckets() const {
        return data.empty() ? 0 : static_cast<std::int64_t>((data.size() + chunk - 1) / chunk);
    }
};

// Writes `values` (numel(param) elements) into the parameter's gradient: in place when the
// parameter alone holds its gradient buffer, else as a new gradient.
template <class T>
void write_grad(const Tensor& param, const T* values) {
    auto& held = param.impl()->grad;
    const bool exclusive = held && held.use_count() == 1 && held->storage.use_count() == 1;
    Tensor grad = exclusive ? Tensor(held) : empty(param.shape(), {.dtype = param.dtype()});
    std::copy(values, values + grad.numel(), grad.data<T>());
    if (!exclusive) Tensor(param).set_grad(grad);
}

}  // namespace

struct DistributedDataParallel::Buffers {
    Flat<float> f32;
    Flat<double> f64;
    std::vector<double> header;   // [weight, has gradient per parameter], summed over the ranks
    std::vector<double> weights;  // deterministic, rank 0: every rank's weight
};

DistributedDataParallel::DistributedDataParallel(std::vector<Tensor> parameters,
                                                 DistributedDataParallelOptions options)
    : params_(std::move(parameters)), options_(options), buffers_(std::make_unique<Buffers>()) {
    AG_CHECK(options_.bucket_cap_mb > 0.0 && options_.bucket_cap_mb <= 2048.0, ValueError,
             "DistributedDataParallel: bucket_cap_mb must be in (0, 2048], got {}", options_.bucket_cap_mb);
    for (std::size_t i = 0; i < params_.size(); ++i) {
        AG_CHECK(params_[i].defined(), ValueError, "DistributedDataParallel: parameter {} is undefined", i);
        AG_CHECK(is_floating(params_[i].dtype()), ValueError,
                 "DistributedDataParallel: parameter {} is {} {}; only float32 and float64 parameters have "
                 "gradients",
                 i, dtype_name(params_[i].dtype()), params_[i].shape());
    }
    const ProcessGroup& group = world();
    if (group.size() == 1) return;
    group.broadcast(params_);
    const double bytes = options_.bucket_cap_mb * 1024.0 * 1024.0;
    Buffers& b = *buffers_;
    std::size_t n32 = 0, n64 = 0;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        const auto n = static_cast<std::size_t>(params_[i].numel());
        if (params_[i].dtype() == DType::Float32) {
            b.f32.params.push_back(i), n32 += n;
        } else {
            b.f64.params.push_back(i), n64 += n;
        }
    }
    b.f32.data.resize(n32);
    b.f64.data.resize(n64);
    b.f32.chunk = std::max<std::size_t>(1, static_cast<std::size_t>(bytes / sizeof(float)));
    b.f64.chunk = std::max<std::size_t>(1, static_cast<std::size_t>(bytes / sizeof(double)));
    b.header.resize(params_.size() + 1);
    if (options_.deterministic && group.is_main()) {
        b.weights.resize(static_cast<std::size_t>(group.size()));
        b.f32.gathered.resize(std::min(n32, b.f32.chunk) * static_cast<std::size_t>(group.size()));
        b.f64.gathered.resize(std::min(n64, b.f64.chunk) * static_cast<std::size_t>(group.size()));
        b.f32.totals.resize(std::min(n32, b.f32.chunk));
        b.f64.totals.resize(std::min(n64, b.f64.chunk));
    }
}

DistributedDataParallel::~DistributedDataParallel() = default;

std::int64_t DistributedDataParallel::bucket_count() const {
    return buffers_->f32.buckets() + buffers_->f64.buckets();
}

std::int64_t DistributedDataParallel::gradient_bytes() const {
    std::int64_t bytes = 0;
    for (const Tensor& p : params_) bytes += p.numel() * static_cast<std::int64_t>(dtype_size(p.dtype()));
    return bytes;
}

#ifdef ATTOGRAD_MPI
namespace {

// Packs the gradients of `flat`'s parameters times `scale` (zeros where a rank has none).
template <class T>
void pack(Flat<T>& flat, const std::vector<Tensor>& params, double scale) {
    std::size_t offset = 0;
    for (const std::size_t i : flat.params) {
        const Tensor grad = params[i].grad();
        const auto n = static_cast<std::size_t>(params[i].numel());
        T* out = flat.data.data() + offset;
        if (!grad.defined()) {
            std::fill(out, out + n, T(0));
        } else {
            const T* g = grad.data<T>();
            if (scale == 1.0) {
                std::copy(g, g + n, out);
            } else {
                for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<T>(g[k] * scale);
            }
        }
        offset += n;
    }
}

// The buckets of `flat`, reduced across the ranks in order: MPI_Allreduce (sum of the
// pre-scaled gradients), or gather, float64 sum in rank order with the weights, broadcast.
template <class T>
void reduce(Flat<T>& flat, MPI_Comm comm, bool deterministic, const std::vector<double>& weights,
            double total, bool main, int ranks) {
    const MPI_Datatype type = mpi_type(T{});
    for (std::size_t start = 0; start < flat.data.size(); start += flat.chunk) {
        const std::size_t n = std::min(flat.chunk, flat.data.size() - start);
        T* bucket = flat.data.data() + start;
        const int count = static_cast<int>(n);
        if (!deterministic) {
            check_mpi(MPI_Allreduce(MPI_IN_PLACE, bucket, count, type, MPI_SUM, comm),
                      "DistributedDataParallel::average_gradients", "MPI_Allreduce");
            continue;
        }
        check_mpi(
            MPI_Gather(bucket, count, type, main ? flat.gathered.data() : nullptr, count, type, 0, comm),
            "DistributedDataParallel::average_gradients", "MPI_Gather");
        if (main) {
            std::fill(flat.totals.begin(), flat.totals.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
            for (int r = 0; r < ranks; ++r) {
                const T* g = flat.gathered.data() + static_cast<std::size_t>(r) * n;
                const double w = weights[static_cast<std::size_t>(r)];
                for (std::size_t k = 0; k < n; ++k) flat.totals[k] += w * static_cast<double>(g[k]);
            }
            for (std::size_t k = 0; k < n; ++k) bucket[k] = static_cast<T>(flat.totals[k] / total);
        }
        check_mpi(MPI_Bcast(bucket, count, type, 0, comm), "DistributedDataParallel::average_gradients",
                  "MPI_Bcast");
    }
}

template <class T>
void unpack(const Flat<T>& flat, const std::vector<Tensor>& params, const std::vector<double>& header) {
    std::size_t offset = 0;
    for (const std::size_t i : flat.params) {
        if (header[i + 1] > 0.0) write_grad(params[i], flat.data.data() + offset);
        offset += static_cast<std::size_t>(params[i].numel());
    }
}

}  // namespace
#endif

void DistributedDataParallel::average_gradients(double weight) {
    AG_CHECK(std::isfinite(weight) && weight >= 0.0, ValueError,
             "DistributedDataParallel::average_gradients: weight must be finite and >= 0, got {}", weight);
    const ProcessGroup& group = world();
    if (group.size() == 1) {  // the hot path of one process: nothing to do, no MPI call
        AG_CHECK(weight > 0.0, ValueError,
                 "DistributedDataParallel::average_gradients: the weights of the ranks sum to 0 (no rank has "
                 "examples)");
        return;
    }
#ifdef ATTOGRAD_MPI
    Buffers& b = *buffers_;
    const MPI_Comm comm = *static_cast<MPI_Comm*>(group.native_handle());
    b.header[0] = weight;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        const Tensor grad = params_[i].grad();
        // Checked before the first collective: a rank that throws later would leave the others waiting.
        AG_CHECK(!grad.defined() || grad.dtype() == params_[i].dtype(), DTypeError,
                 "DistributedDataParallel::average_gradients: parameter {} is {} but its gradient is {}", i,
                 dtype_name(params_[i].dtype()), dtype_name(grad.dtype()));
        b.header[i + 1] = grad.defined() ? 1.0 : 0.0;
    }
    const auto start = Clock::now();
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, b.header.data(), static_cast<int>(b.header.size()), MPI_DOUBLE,
                            MPI_SUM, comm),
              "DistributedDataParallel::average_gradients", "MPI_Allreduce");
    double total = b.header[0];
    if (options_.deterministic) {
        check_mpi(MPI_Gather(&weight, 1, MPI_DOUBLE, b.weights.data(), 1, MPI_DOUBLE, 0, comm),
                  "DistributedDataParallel::average_gradients", "MPI_Gather");
        if (group.is_main()) {
            total = 0.0;
            for (const double w : b.weights) total += w;  // rank order
        }
    }
    comm_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    // Every rank sees the same sum of non-negative weights, so all throw together.
    AG_CHECK(b.header[0] > 0.0, ValueError,
             "DistributedDataParallel::average_gradients: the weights of the ranks sum to 0 (no rank has "
             "examples)");
    const double scale = options_.deterministic ? 1.0 : weight / total;
    pack(b.f32, params_, scale);
    pack(b.f64, params_, scale);
    const auto reduce_start = Clock::now();
    reduce(b.f32, comm, options_.deterministic, b.weights, total, group.is_main(), group.size());
    reduce(b.f64, comm, options_.deterministic, b.weights, total, group.is_main(), group.size());
    comm_seconds_ += std::chrono::duration<double>(Clock::now() - reduce_start).count();
    unpack(b.f32, params_, b.header);
    unpack(b.f64, params_, b.header);
#endif
}

}  // namespace attograd::optim
