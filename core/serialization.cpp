// Safetensors checkpoints: named tensors and string metadata in one file.
#include "core/serialization.hpp"

#include "core/atomic_file.hpp"
#include "core/detail/json_integer.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>
#include <vector>

namespace attograd {
namespace {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and attograd writes its storage as it is in memory");
static_assert(sizeof(bool) == 1, "BOOL tensors are stored one byte per element");

// Python's reader refuses headers above 100 MB; so do we, before allocating one.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
// A safetensors header nests 3 levels ({"name": {"shape": [...]}}); 64 leaves room and the stack.
constexpr std::size_t kMaxHeaderDepth = 64;

std::string_view dtype_tag(DType dtype) {
    switch (dtype) {
        case DType::Float32:
            return "F32";
        case DType::Float64:
            return "F64";
        case DType::Int64:
            return "I64";
        case DType::Bool:
            return "BOOL";
    }
    throw InternalError("dtype_tag: unknown dtype");
}

std::optional<DType> dtype_from_tag(std::string_view tag) {
    for (DType d : {DType::Float32, DType::Float64, DType::Int64, DType::Bool})
        if (dtype_tag(d) == tag) return d;
    return std::nullopt;
}

// --- writing ------------------------------------------------------------------------------

// The JSON header, padded with spaces so the data starts 8-byte aligned.
std::string make_header(const std::map<std::string, Tensor>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& where) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        AG_CHECK(!name.empty() && name != "__metadata__", ValueError, "{}: invalid tensor name '{}'", where,
                 name);
        AG_CHECK(t.defined(), ValueError, "{}: tensor '{}' is undefined", where, name);
        const auto bytes = static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype());
        nlohmann::ordered_json entry;
        entry["dtype"] = dtype_tag(t.dtype());
        entry["shape"] = t.shape();
        entry["data_offsets"] = {offset, offset + bytes};
        header[name] = std::move(entry);
        offset += bytes;
    }
    std::string text;
    try {
        text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
    } catch (const nlohmann::json::type_error&) {
        throw ValueError(fmt::format("{}: a tensor name or metadata entry is not valid UTF-8", where));
    }
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

// --- reading ------------------------------------------------------------------------------

struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    std::uint64_t begin, end;
};

// One tensor's header entry, checked: known dtype, sizes, offsets matching shape x dtype size
// and inside the data section of `data_bytes` bytes.
Entry parse_entry(const std::string& name, const nlohmann::json& info, std::uint64_t data_bytes,
                  const std::string& where) {
    const std::string at = fmt::format("{}: tensor '{}'", where, excerpt(name));
    AG_CHECK(info.is_object(), IoError, "{}: header entry is not an object", at);
    const auto dtype_it = info.find("dtype");
    AG_CHECK(dtype_it != info.end() && dtype_it->is_string(), IoError, "{}: missing or non-string \"dtype\"",
             at);
    const std::string tag = dtype_it->get<std::string>();
    const auto dtype = dtype_from_tag(tag);
    AG_CHECK(dtype.has_value(), IoError, "{}: dtype \"{}\" is not supported (F32, F64, I64, BOOL)", at,
             excerpt(tag));

    const auto shape_it = info.find("shape");
    AG_CHECK(shape_it != info.end() && shape_it->is_array(), IoError, "{}: missing or non-array \"shape\"",
             at);
    Entry e{name, *dtype, {}, 0, 0};
    std::uint64_t count = 1;
    bool overflow = false;
    for (const auto& s : *shape_it) {
        const auto size = detail::json_integer<std::uint64_t>(s);
        AG_CHECK(size && *size <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                 IoError, "{}: shape {} holds something other than sizes >= 0", at,
                 excerpt(shape_it->dump()));
        e.shape.push_back(static_cast<std::int64_t>(*size));
        overflow = overflow || __builtin_mul_overflow(count, *size, &count);
    }
    // A zero-element tensor needs no bytes, but its other sizes still make strides: their
    // product must fit int64 too ([0, 2^62, 4] would overflow).
    std::int64_t nonzero = 1;
    for (const std::int64_t size : e.shape)
        overflow = overflow || (size > 0 && __builtin_mul_overflow(nonzero, size, &nonzero));
    std::uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(count, dtype_size(*dtype), &bytes);
    AG_CHECK(!overflow, IoError, "{}: shape {} is too large", at, excerpt(shape_it->dump()));

    const auto offsets_it = info.find("data_offsets");
    AG_CHECK(offsets_it != info.end() && offsets_it->is_array() && offsets_it->size() == 2, IoError,
             "{}: \"data_offsets\" must be [begin, end]", at);
    const auto begin = detail::json_integer<std::uint64_t>((*offsets_it)[0]),
               end = detail::json_integer<std::uint64_t>((*offsets_it)[1]);
    AG_CHECK(begin && end && *begin <= *end, IoError, "{}: bad data_offsets {}", at,
             excerpt(offsets_it->dump()));
    e.begin = *begin;
    e.end = *end;
    AG_CHECK(e.end - e.begin == bytes, IoError,
             "{}: data_offsets {} span {} bytes, but shape {} of {} needs {} bytes", at,
             excerpt(offsets_it->dump()), e.end - e.begin, e.shape, tag, bytes);
    AG_CHECK(e.end <= data_bytes, IoError,
             "{}: data_offsets {} run past the end of the data section ({} bytes); the file is truncated or "
             "corrupt",
             at, excerpt(offsets_it->dump()), data_bytes);
    return e;
}

std::map<std::string, std::string> parse_metadata(const nlohmann::json& j, const std::string& where) {
    AG_CHECK(j.is_object(), IoError, "{}: \"__metadata__\" is not an object", where);
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : j.items()) {
        AG_CHECK(value.is_string(), IoError, "{}: metadata \"{}\" is not a string", where, excerpt(key));
        out.emplace(key, value.get<std::string>());
    }
    return out;
}

// The data section must be covered exactly: tensors back to back, no overlap, no gap.
void check_layout(std::vector<Entry>& entries, std::uint64_t data_bytes, const std::string& where) {
    std::ranges::sort(entries, {}, [](const Entry& e) { return std::pair{e.begin, e.end}; });
    std::uint64_t expected = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
        AG_CHECK(e.begin >= expected, IoError,
                 "{}: tensor '{}' (bytes {}..{}) overlaps tensor '{}' (bytes {}..{})", where, excerpt(e.name),
                 e.begin, e.end, excerpt(previous->name), previous->begin, previous->end);
        AG_CHECK(e.begin == expected, IoError,
                 "{}: tensor '{}' starts at byte {}, leaving a gap after byte {}", where, excerpt(e.name),
                 e.begin, expected);
        expected = e.end;
        previous = &e;
    }
    AG_CHECK(expected == data_bytes, IoError,
             "{}: the data section has {} bytes but the tensors cover only {} (corrupt header)", where,
             data_bytes, expected);
}

}  // namespace

void save_safetensors(const fs::path& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata, AtomicFile::Symlinks symlinks) {
    const std::string where = fmt::format("save_safetensors: '{}'", path.string());
    const std::string header = make_header(tensors, metadata, where);
    AtomicFile file(path, where, symlinks);
    std::uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<std::uint8_t>(header.size() >> (8 * i));
    file.write(length, sizeof length);
    file.write(header.data(), header.size());
    for (const auto& [name, t] : tensors)
        file.write(t.raw_data(), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
    file.commit();
}

SafetensorsContents read_safetensors(const fs::path& path) {
    const std::string where = fmt::format("load_safetensors: '{}'", path.string());
    const InputFile file(path, where);  // refuses FIFOs, sockets, devices and directories
    const std::uint64_t file_bytes = file.size();

    std::uint8_t length[8];
    AG_CHECK(file_bytes >= 8 && file.read_at(length, 8, 0), IoError,
             "{}: truncated: {} bytes cannot hold the 8-byte header length", where, file_bytes);
    std::uint64_t header_bytes = 0;
    for (int i = 0; i < 8; ++i) header_bytes |= static_cast<std::uint64_t>(length[i]) << (8 * i);
    AG_CHECK(header_bytes <= file_bytes - 8, IoError,
             "{}: header length {} exceeds the {} bytes after it (truncated "
             "or not a safetensors file)",
             where, header_bytes, file_bytes - 8);
    AG_CHECK(header_bytes <= kMaxHeaderBytes, IoError, "{}: header length {} is over the limit of {} bytes",
             where, header_bytes, kMaxHeaderBytes);
    std::string text(header_bytes, '\0');
    AG_CHECK(file.read_at(text.data(), text.size(), 8), IoError, "{}: truncated header", where);
    check_json_depth(text, kMaxHeaderDepth, fmt::format("{}: corrupt header", where));
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw IoError(fmt::format("{}: corrupt header: {}", where, excerpt(e.what(), 200)));
    }
    AG_CHECK(header.is_object(), IoError, "{}: corrupt header: not a JSON object", where);

    const std::uint64_t data_start = 8 + header_bytes, data_bytes = file_bytes - data_start;
    SafetensorsContents out;
    std::vector<Entry> entries;
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__")
            out.metadata = parse_metadata(info, where);
        else
            entries.push_back(parse_entry(name, info, data_bytes, where));
    }
    check_layout(entries, data_bytes, where);

    for (const Entry& e : entries) {
        Tensor t;
        try {
            t = empty(e.shape, {.dtype = e.dtype});
        } catch (const Error& error) {  // whatever a header can still ask for that cannot be made
            throw IoError(fmt::format("{}: tensor '{}': {}", where, excerpt(e.name), error.what()));
        }
        AG_CHECK(file.read_at(t.raw_data(), e.end - e.begin, data_start + e.begin), IoError,
                 "{}: tensor '{}': truncated data", where, excerpt(e.name));
        if (e.dtype == DType::Bool) {
            const auto* bytes = static_cast<const std::uint8_t*>(t.raw_data());
            AG_CHECK(std::all_of(bytes, bytes + t.numel(), [](std::uint8_t b) { return b <= 1; }), IoError,
                     "{}: tensor '{}': BOOL data holds a byte other than 0 or 1", where, excerpt(e.name));
        }
        out.tensors.emplace(e.name, std::move(t));
    }
    return out;
}

std::map<std::string, Tensor> load_safetensors(const fs::path& path) {
    return read_safetensors(path).tensors;
}

}  // namespace attograd
