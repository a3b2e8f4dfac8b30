// Standard streams that never crash training.
#include "train/output.hpp"

namespace attograd::train {

void write_stream(std::FILE* stream, std::string_view text) noexcept {
    if (!text.empty()) (void)std::fwrite(text.data(), 1, text.size(), stream);
}

}  // namespace attograd::train
