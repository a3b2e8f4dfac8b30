// Reading untrusted files: regular files only, bounded JSON nesting and excerpts, checksums.
#include "core/input_file.hpp"

#include "core/error.hpp"
#include "core/protected_path.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace attograd {
namespace {

std::string errno_text() { return std::strerror(errno); }

const char* kind_of(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISDIR(mode)) return "a directory";
    return "not a regular file";
}

void check_regular(const struct stat& st, const std::string& where) {
    AG_CHECK(S_ISREG(st.st_mode), IoError, "{}: is {}, not a regular file", where, kind_of(st.st_mode));
}

}  // namespace

InputFile::InputFile(const std::filesystem::path& path, std::string where) : where_(std::move(where)) {
    check_protected_path(path, where_);  // nothing is read through another user's planted link
    struct stat st {};
    AG_CHECK(::stat(path.c_str(), &st) == 0, IoError, "{}: cannot open: {}", where_, errno_text());
    check_regular(st, where_);
    // O_NONBLOCK: had a FIFO replaced the file since stat(), open() would wait for a writer.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    AG_CHECK(fd_ >= 0, IoError, "{}: cannot open: {}", where_, errno_text());
    const bool stat_ok = ::fstat(fd_, &st) == 0;
    if (!stat_ok || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        AG_CHECK(stat_ok, IoError, "{}: cannot stat: {}", where_, errno_text());
        check_regular(st, where_);
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

bool InputFile::read_at(void* data, std::size_t bytes, std::uint64_t offset) const {
    auto* p = static_cast<char*>(data);
    while (bytes > 0) {
        const ssize_t n =
            ::pread(fd_, p, std::min<std::size_t>(bytes, std::size_t{1} << 30), static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        AG_CHECK(n >= 0, IoError, "{}: read failed: {}", where_, errno_text());
        if (n == 0) return false;
        p += n;
        offset += static_cast<std::uint64_t>(n);
        bytes -= static_cast<std::size_t>(n);
    }
    return true;
}

void InputFile::read_pieces(const std::function<void(std::string_view)>& take,
                            std::size_t piece_bytes) const {
    // Read until the end rather than trusting size(): the file may grow or shrink meanwhile.
    std::string buffer(piece_bytes, '\0');
    for (std::uint64_t offset = 0;;) {
        const ssize_t n = ::pread(fd_, buffer.data(), buffer.size(), static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        AG_CHECK(n >= 0, IoError, "{}: read failed: {}", where_, errno_text());
        if (n == 0) return;
        take(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
        offset += static_cast<std::uint64_t>(n);
    }
}

std::string InputFile::read_all(std::size_t max_bytes) const {
    std::string text;
    text.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(size_, max_bytes)));
    read_pieces(
        [&](std::string_view piece) {
            AG_CHECK(text.size() + piece.size() <= max_bytes, IoError, "{}: larger than {} bytes", where_,
                     max_bytes);
            text.append(piece);
        },
        std::size_t{1} << 16);
    return text;
}

void check_json_depth(std::string_view text, std::size_t max_depth, std::string_view where) {
    std::size_t depth = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            AG_CHECK(++depth <= max_depth, IoError, "{}: JSON nested deeper than {} levels", where,
                     max_depth);
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
}

std::string excerpt(std::string_view text, std::size_t max_chars) {
    if (text.size() <= max_chars) return std::string(text);
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 continuation
    return fmt::format("{}... ({} bytes)", text.substr(0, cut), text.size());
}

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash) {
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

std::uint64_t fnv1a64(std::string_view bytes) { return fnv1a64(bytes, 0xcbf29ce484222325ULL); }

std::string file_checksum(const std::filesystem::path& path) {
    const InputFile file(path, path.string());
    std::uint64_t hash = fnv1a64(std::string_view());
    file.read_pieces([&](std::string_view piece) { hash = fnv1a64(piece, hash); });
    return fmt::format("{:016x}", hash);
}

bool is_checksum_text(std::string_view text) {
    return text.size() == 16 && std::all_of(text.begin(), text.end(), [](char h) {
               return (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f');
           });
}

}  // namespace attograd
