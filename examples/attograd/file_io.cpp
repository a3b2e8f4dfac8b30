// Reading whole files with a size bound (writes go through attograd::write_file_atomic).
#include "file_io.hpp"

#include "core/error.hpp"

#include <fstream>
#include <string>

namespace attograd::cli {

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    AG_CHECK(in.good(), IoError, "{}: cannot open", path.string());
    std::string text;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        text.append(buffer, static_cast<std::size_t>(in.gcount()));
        AG_CHECK(text.size() <= max_bytes, IoError, "{}: larger than {} MiB", path.string(), max_bytes >> 20);
    }
    AG_CHECK(!in.bad(), IoError, "{}: cannot read", path.string());
    return text;
}

}  // namespace attograd::cli
