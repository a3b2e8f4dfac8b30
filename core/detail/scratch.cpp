// The calling thread's list of scratch buffers (core/detail/scratch.hpp).
#include "core/detail/scratch.hpp"

#include <algorithm>

namespace attograd::detail {
namespace {

// Set while the thread's registry exists: a scratch buffer destroyed after it during thread
// teardown has nothing to leave.
thread_local bool registry_alive = false;

struct Registry {
    Registry() { registry_alive = true; }
    ~Registry() { registry_alive = false; }
    std::vector<ScratchBase*> buffers;
};

Registry& registry() {
    thread_local Registry instance;
    return instance;
}

}  // namespace

ScratchBase::ScratchBase() { registry().buffers.push_back(this); }

ScratchBase::~ScratchBase() {
    if (!registry_alive) return;
    auto& buffers = registry().buffers;
    buffers.erase(std::remove(buffers.begin(), buffers.end(), this), buffers.end());
}

void release_thread_scratch() noexcept {
    for (ScratchBase* buffer : registry().buffers) buffer->release();
}

std::size_t thread_scratch_bytes() noexcept {
    std::size_t total = 0;
    for (const ScratchBase* buffer : registry().buffers) total += buffer->bytes();
    return total;
}

}  // namespace attograd::detail
