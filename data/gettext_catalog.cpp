// The .mo reader: bounds-checked 32-bit reads in the file's byte order.
#include "data/gettext_catalog.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace attograd::data {
namespace {

constexpr std::uint32_t mo_magic = 0x950412de;
constexpr std::uint64_t header_bytes = 28;

class MoReader {
public:
    MoReader(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {
        AG_CHECK(bytes_.size() >= header_bytes, IoError,
                 "{}: not a .mo file: {} bytes, shorter than the 28-byte header", name_, bytes_.size());
        const std::uint32_t little = read_u32(0);
        big_endian_ = false;
        if (little != mo_magic) {
            big_endian_ = true;
            AG_CHECK(read_u32(0) == mo_magic, IoError,
                     "{}: not a .mo file: magic number 0x{:08x}, expected 0x950412de (either byte order)",
                     name_, little);
        }
    }

    // The 32-bit number at `offset` (which the caller checked to fit) in the file's byte order.
    std::uint32_t read_u32(std::uint64_t offset) const {
        AG_ASSERT(offset + 4 <= bytes_.size(), "mo read at {} of {}", offset, bytes_.size());
        std::uint32_t value = 0;
        for (int k = 0; k < 4; ++k) {
            const auto byte = static_cast<unsigned char>(
                bytes_[offset + static_cast<std::uint64_t>(big_endian_ ? k : 3 - k)]);
            value = (value << 8) | byte;
        }
        return value;
    }

    // Checks that a table of `count` (length, offset) pairs at `offset` fits in the file.
    void check_table(const char* what, std::uint64_t count, std::uint64_t offset) const {
        AG_CHECK(offset + count * 8 <= bytes_.size(), IoError,
                 "{}: corrupt .mo file: the table of {} ({} entries at offset {}) passes the end of the file "
                 "({} bytes)",
                 name_, what, count, offset, bytes_.size());
    }

    // String `index` of the table at `table`: `length` bytes at `offset`.
    std::string_view string_at(const char* what, std::uint64_t table, std::uint64_t index) const {
        const std::uint64_t length = read_u32(table + index * 8);
        const std::uint64_t offset = read_u32(table + index * 8 + 4);
        AG_CHECK(offset + length <= bytes_.size(), IoError,
                 "{}: corrupt .mo file: {} string {} ({} bytes at offset {}) passes the end of the file ({} "
                 "bytes)",
                 name_, what, index, length, offset, bytes_.size());
        return bytes_.substr(offset, length);
    }

    const std::string& name() const { return name_; }

private:
    std::string_view bytes_;
    const std::string& name_;
    bool big_endian_ = false;
};

std::vector<std::string> split_nul(std::string_view text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t at; (at = text.find('\0', start)) != std::string_view::npos; start = at + 1)
        parts.emplace_back(text.substr(start, at - start));
    parts.emplace_back(text.substr(start));
    return parts;
}

}  // namespace

GettextCatalog parse_gettext_catalog(std::string_view bytes, const std::string& name) {
    const MoReader reader(bytes, name);
    const std::uint32_t revision = reader.read_u32(4);
    AG_CHECK((revision >> 16) <= 1, IoError, "{}: unsupported .mo file revision {}.{} (0.x and 1.x are read)",
             name, revision >> 16, revision & 0xffff);
    const std::uint64_t count = reader.read_u32(8);
    const std::uint64_t originals = reader.read_u32(12);
    const std::uint64_t translations = reader.read_u32(16);
    reader.check_table("originals", count, originals);
    reader.check_table("translations", count, translations);

    GettextCatalog catalog;
    for (std::uint64_t i = 0; i < count; ++i) {
        std::string_view original = reader.string_at("original", originals, i);
        const std::string_view translation = reader.string_at("translation", translations, i);
        if (original.empty()) {
            catalog.header = std::string(translation);
            continue;
        }
        CatalogMessage message;
        if (const auto separator = original.find('\x04'); separator != std::string_view::npos) {
            message.context = std::string(original.substr(0, separator));
            original.remove_prefix(separator + 1);
        }
        if (const auto nul = original.find('\0'); nul != std::string_view::npos) {
            message.source_plural = std::string(original.substr(nul + 1));
            original = original.substr(0, nul);
        }
        message.source = std::string(original);
        message.translations = split_nul(translation);
        catalog.messages.push_back(std::move(message));
    }
    return catalog;
}

GettextCatalog read_gettext_catalog(const std::filesystem::path& path) {
    constexpr std::size_t max_bytes = std::size_t{64} << 20;
    const std::string bytes = InputFile(path, path.string()).read_all(max_bytes);
    return parse_gettext_catalog(bytes, path.string());
}

}  // namespace attograd::data
