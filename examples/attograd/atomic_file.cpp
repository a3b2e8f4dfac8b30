// Atomic file writes: a temporary file in the same directory, then rename.
#include "atomic_file.hpp"

#include "core/error.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace attograd::cli {

void write_file_atomic(const std::filesystem::path& path, std::string_view contents) {
    // Renaming over a device (as root: /dev/null) would replace it with a regular file.
    std::error_code status_error;
    const auto existing = std::filesystem::status(path, status_error);
    AG_CHECK(!std::filesystem::exists(existing) || std::filesystem::is_regular_file(existing), IoError,
             "{}: exists and is not a regular file; not replacing it (use --to - for standard output)",
             path.string());
    const std::filesystem::path temp = path.string() + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        AG_CHECK(out.good(), IoError, "{}: cannot open for writing", temp.string());
        out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
        out.flush();
        if (!out.good()) {
            std::error_code ignored;
            std::filesystem::remove(temp, ignored);
            throw IoError(fmt::format("{}: write failed", temp.string()));
        }
    }
    std::error_code error;
    std::filesystem::rename(temp, path, error);
    if (error) {
        std::error_code ignored;
        std::filesystem::remove(temp, ignored);
        throw IoError(fmt::format("{}: cannot rename the temporary file into place: {}", path.string(),
                                  error.message()));
    }
}

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
