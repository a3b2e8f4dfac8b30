// The reverse-mode tape: one entry per recorded op, walked backwards from the loss.
#include "core/autograd.hpp"

#include "core/error.hpp"
#include "core/ops_reduce.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace attograd {
namespace {

thread_local bool grad_mode = true;
thread_local bool anomaly_mode = false;

using ImplPtr = std::shared_ptr<detail::TensorImpl>;

// The inputs of one entry (null where no grad is needed): up to three inline, which covers
// nearly every op, so recording does not allocate for them.
class EntryInputs {
public:
    void assign(const Tensor* inputs, std::size_t n) {
        size_ = n;
        ImplPtr* dst = inline_.data();
        if (n > inline_.size()) {
            heap_.resize(n);
            dst = heap_.data();
        }
        for (std::size_t i = 0; i < n; ++i)
            if (inputs[i].defined() && inputs[i].requires_grad()) dst[i] = inputs[i].impl();
    }
    std::span<const ImplPtr> view() const {
        return {size_ > inline_.size() ? heap_.data() : inline_.data(), size_};
    }
    void clear() {
        for (auto& p : inline_) p.reset();
        heap_.clear();
        size_ = 0;
    }

private:
    std::array<ImplPtr, 3> inline_;
    std::vector<ImplPtr> heap_;
    std::size_t size_ = 0;
};

struct Entry {
    std::int64_t seq;
    const char* op;
    EntryInputs inputs;
    std::weak_ptr<detail::TensorImpl> output;  // weak: a dead output makes the entry unreachable
    autograd::BackwardFn backward;
    bool reached = false;

    // Drops what the entry holds (its inputs and its backward's captures) and marks it for
    // erasure (op null).
    void release() {
        op = nullptr;
        inputs.clear();
        backward = nullptr;
    }
};

// Set while this thread's tape exists: outputs destroyed during thread teardown, after it, are
// ignored.
thread_local bool tape_alive = false;

// Outputs destroyed on another thread than the one whose tape recorded them (a pipeline that
// hands tensors on): their seqs wait here for the owning tape, under one lock, since that is
// rare. `pending` lets the owner check without the lock at each record.
struct RemoteInbox {
    std::vector<std::int64_t> seqs;
    std::atomic<bool> pending{false};
};

struct RemoteDead {
    std::mutex mutex;
    std::unordered_map<std::uint32_t, RemoteInbox> inboxes;  // the live tapes' (nodes stay put)
    std::atomic<std::uint32_t> next_tape_id{1};
};

RemoteDead& remote_dead() {
    static auto* instance = new RemoteDead;  // never destroyed: outputs may die after statics
    return *instance;
}

struct Tape {
    Tape() : id(remote_dead().next_tape_id++) {
        RemoteDead& r = remote_dead();
        const std::lock_guard lock(r.mutex);
        inbox = &r.inboxes[id];
        tape_alive = true;
    }
    ~Tape() {
        tape_alive = false;
        {
            RemoteDead& r = remote_dead();
            const std::lock_guard lock(r.mutex);
            r.inboxes.erase(id);
        }
        while (!entries.empty()) entries.pop_back();  // from the back, as clear_tape
    }
    Tape(const Tape&) = delete;
    Tape& operator=(const Tape&) = delete;

    const std::uint32_t id;        // in each recorded output (TensorImpl::tape_id)
    RemoteInbox* inbox = nullptr;  // this tape's node in remote_dead()
    std::vector<Entry> entries;    // ordered by seq
    std::int64_t next_seq = 0;
    std::size_t sweep_at = 1024;
    std::vector<std::int64_t> dead;  // entries whose output was destroyed since release_dead
    std::size_t released = 0;        // entries released in place, not yet erased

    // Releases the entries whose outputs were destroyed: their backward functions (and what
    // they hold: a kept [B, h, T, T] attention weight, say) go now, not at the next sweep,
    // which comes only every 1024 entries. A forward run again and again with gradients on and
    // no backward (an evaluation loop without NoGradGuard) otherwise kept up to 1024 steps of
    // saved tensors: 16 GB for the large step's attention. Releasing an entry may destroy more
    // outputs; they join `dead` and are released in the same loop. Nothing here erases from
    // `entries` while destructors run, so the iterator stays valid.
    void release_dead() {
        if (inbox->pending.load(std::memory_order_acquire)) {
            RemoteDead& r = remote_dead();
            const std::lock_guard lock(r.mutex);
            dead.insert(dead.end(), inbox->seqs.begin(), inbox->seqs.end());
            inbox->seqs.clear();
            inbox->pending.store(false, std::memory_order_relaxed);
        }
        while (!dead.empty()) {
            const std::int64_t seq = dead.back();
            dead.pop_back();
            auto it = std::lower_bound(entries.begin(), entries.end(), seq,
                                       [](const Entry& e, std::int64_t s) { return e.seq < s; });
            if (it == entries.end() || it->seq != seq || it->op == nullptr || !it->output.expired()) continue;
            it->release();
            ++released;
        }
        if (released > 64 && released > entries.size() / 2) {
            std::erase_if(entries, [](const Entry& e) { return e.op == nullptr; });
            released = 0;
        }
    }

    // Drops entries whose output no tensor holds any more. Walking from the back lets one
    // pass cascade: dropping an entry releases its inputs, which may be earlier outputs.
    void sweep() {
        for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
            if (it->output.expired()) it->release();
        }
        std::erase_if(entries, [](const Entry& e) { return e.op == nullptr; });
        released = 0;
        sweep_at = std::max<std::size_t>(1024, entries.size() * 2);
    }
};

Tape& tape() {
    thread_local Tape instance;
    return instance;
}

// dst += src elementwise (same shape and dtype, both contiguous).
void add_into(Tensor& dst, const Tensor& src) {
    dispatch_floating(dst.dtype(), "backward", [&]<class T>(T) {
        T* d = dst.data<T>();
        const T* s = src.data<T>();
        const std::int64_t n = dst.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i) d[i] += s[i];
    });
}

Tensor copy_of(const Tensor& t) {
    Tensor out = empty(t.shape(), {.dtype = t.dtype()});
    std::memcpy(out.raw_data(), t.raw_data(), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
    return out;
}

}  // namespace

void detail::note_output_destroyed(std::uint32_t tape_id, std::int64_t seq) noexcept {
    if (tape_alive) {
        Tape& own = tape();
        if (own.id == tape_id) {
            own.dead.push_back(seq);
            return;
        }
    }
    RemoteDead& r = remote_dead();
    const std::lock_guard lock(r.mutex);
    const auto it = r.inboxes.find(tape_id);
    if (it == r.inboxes.end()) return;  // that thread and its tape are gone
    it->second.seqs.push_back(seq);
    it->second.pending.store(true, std::memory_order_release);
}

bool grad_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

bool anomaly_mode_enabled() { return anomaly_mode; }

AnomalyModeGuard::AnomalyModeGuard() : previous_(anomaly_mode) { anomaly_mode = true; }
AnomalyModeGuard::~AnomalyModeGuard() { anomaly_mode = previous_; }

namespace autograd {

std::size_t tape_size() {
    Tape& t = tape();
    t.release_dead();
    return t.entries.size() - t.released;
}

void clear_tape() {
    Tape& t = tape();
    // Destroy from the back so releasing inputs never outlives what points at them.
    while (!t.entries.empty()) t.entries.pop_back();
    t.dead.clear();
    t.released = 0;
}

bool Gradients::needs(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }

void BackwardFn::operator()(const Tensor& grad_output, Gradients& grads) const {
    AG_ASSERT(ops_ != nullptr, "backward: empty backward function");
    ops_->call(callable(), grad_output, grads);
}

void Gradients::add(std::size_t i, const Tensor& grad) {
    if (!needs(i)) return;
    if (anomaly_mode)
        AG_CHECK(all_finite(grad), AutogradError,
                 "anomaly: backward of '{}' produced NaN or Inf in the gradient of input {} {}", op_, i,
                 grad.shape());
    accumulate(*inputs_[i], grad, op_);
}

Tensor Gradients::accumulator(std::size_t i) {
    AG_ASSERT(needs(i), "'{}' backward asked for the gradient buffer of input {}, which needs none", op_, i);
    detail::TensorImpl& target = *inputs_[i];
    if (!target.grad)
        target.grad = zeros(target.shape, {.dtype = target.dtype}).impl();
    else if (target.grad.use_count() > 1 || target.grad->storage.use_count() > 1)
        target.grad = copy_of(Tensor(target.grad)).impl();  // shared: never write into it
    if (anomaly_mode) handed_out_.push_back(i);
    return Tensor(target.grad);
}

bool Gradients::has_gradient(std::size_t i) const { return needs(i) && inputs_[i]->grad != nullptr; }

void Gradients::check_accumulators() const {
    for (const std::size_t i : handed_out_)
        AG_CHECK(all_finite(Tensor(inputs_[i]->grad)), AutogradError,
                 "anomaly: backward of '{}' produced NaN or Inf in the gradient of input {} {}", op_, i,
                 inputs_[i]->shape);
}

bool needs_record(std::initializer_list<const Tensor*> inputs) {
    if (!grad_mode) return false;
    for (const Tensor* t : inputs)
        if (t->defined() && t->requires_grad()) return true;
    return false;
}

bool needs_record(const std::vector<Tensor>& inputs) {
    if (!grad_mode) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

namespace {

void record_entry(const char* op, const Tensor* inputs, std::size_t n, Tensor& output,
                  autograd::BackwardFn&& backward) {
    if (anomaly_mode)
        AG_CHECK(all_finite(output), AutogradError, "anomaly: '{}' produced NaN or Inf in its output {}", op,
                 output.shape());
    Tape& t = tape();
    t.release_dead();
    if (t.entries.size() >= t.sweep_at) t.sweep();
    Entry& entry = t.entries.emplace_back();
    entry.seq = t.next_seq++;
    entry.op = op;
    entry.inputs.assign(inputs, n);
    entry.output = output.impl();
    entry.backward = std::move(backward);
    auto& impl = *output.impl();
    impl.requires_grad = true;
    impl.grad_fn_seq = entry.seq;
    impl.tape_id = t.id;
}

}  // namespace

void record(const char* op, const std::vector<Tensor>& inputs, Tensor& output, BackwardFn backward) {
    record_entry(op, inputs.data(), inputs.size(), output, std::move(backward));
}

void record(const char* op, std::initializer_list<Tensor> inputs, Tensor& output, BackwardFn backward) {
    record_entry(op, inputs.begin(), inputs.size(), output, std::move(backward));
}

void accumulate(detail::TensorImpl& target, const Tensor& grad, std::string_view op) {
    AG_ASSERT(grad.shape() == target.shape && grad.dtype() == target.dtype,
              "'{}' backward gave a gradient {} {} for an input {} {}", op, grad.shape(), grad.dtype(),
              target.shape, target.dtype);
    if (!target.grad) {
        // Take the buffer when nobody else holds it; otherwise copy, so a later in-place
        // accumulation cannot write into another tensor's gradient. The gradient of an
        // intermediate tensor that does not retain it is only read by its own entry's backward
        // in this walk and then dropped, so it may share the buffer: the in-place path below
        // copies shared buffers before writing.
        const bool sole_owner = grad.impl().use_count() == 1 && grad.impl()->storage.use_count() == 1;
        const bool transient = target.grad_fn_seq >= 0 && !target.retains_grad && !target.graph_released;
        target.grad = sole_owner || transient ? grad.impl() : copy_of(grad).impl();
        return;
    }
    Tensor existing(target.grad);
    if (target.grad.use_count() > 2 || target.grad->storage.use_count() > 1) {
        existing = copy_of(existing);  // the current gradient is shared: never write into it
        target.grad = existing.impl();
    }
    add_into(existing, grad);
}

void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
    AG_CHECK(root.defined(), AutogradError, "backward: called on an undefined tensor");
    auto& impl = *root.impl();
    AG_CHECK(impl.requires_grad, AutogradError,
             "backward: tensor {} does not require grad and has no recorded history", impl.shape);
    AG_CHECK(grad_output.shape() == impl.shape, ShapeError,
             "backward: gradient shape {} does not match tensor shape {}", grad_output.shape(), impl.shape);
    AG_CHECK(grad_output.dtype() == impl.dtype, DTypeError,
             "backward: gradient dtype {} does not match tensor dtype {}", grad_output.dtype(), impl.dtype);
    NoGradGuard no_grad;
    if (impl.grad_fn_seq < 0) {  // a leaf: its gradient is the upstream gradient
        accumulate(impl, grad_output, "backward");
        return;
    }
    AG_CHECK(!impl.graph_released, AutogradError,
             "backward: the tape entries of this tensor were already released by an earlier "
             "backward; pass retain_graph = true to the first backward to go through them twice");
    Tape& t = tape();
    AG_CHECK(impl.tape_id == t.id, AutogradError,
             "backward: tensor {} was recorded on another thread; each thread records on its own tape, so "
             "call backward on the thread that ran the forward",
             impl.shape);
    auto it = std::lower_bound(t.entries.begin(), t.entries.end(), impl.grad_fn_seq,
                               [](const Entry& e, std::int64_t seq) { return e.seq < seq; });
    AG_CHECK(it != t.entries.end() && it->seq == impl.grad_fn_seq, AutogradError,
             "backward: the tape entry that produced this tensor is gone (the tape was cleared)");

    // Seed the root; the walk below drops its gradient again unless it retains grad.
    accumulate(impl, grad_output, "backward");
    const auto last = static_cast<std::ptrdiff_t>(it - t.entries.begin());
    for (std::ptrdiff_t i = last; i >= 0; --i) {
        Entry& entry = t.entries[static_cast<std::size_t>(i)];
        auto output = entry.output.lock();
        if (!output || !output->grad) continue;
        Tensor grad_out(output->retains_grad ? output->grad : std::move(output->grad));
        Gradients grads(entry.inputs.view(), entry.op);
        entry.backward(grad_out, grads);
        if (anomaly_mode) grads.check_accumulators();
        entry.reached = true;
    }

    if (!retain_graph) {
        for (Entry& entry : t.entries) {
            if (!entry.reached) continue;
            if (auto output = entry.output.lock()) output->graph_released = true;
        }
        // Release consumed entries back to front (each may hold the last reference to an
        // earlier entry's output).
        for (auto e = t.entries.rbegin(); e != t.entries.rend(); ++e) {
            if (!e->reached) continue;
            e->inputs.clear();
            e->backward = nullptr;
        }
        std::erase_if(t.entries, [](const Entry& e) { return e.reached; });
        t.sweep();
    } else {
        for (Entry& entry : t.entries) entry.reached = false;
    }
}

}  // namespace autograd
}  // namespace attograd
