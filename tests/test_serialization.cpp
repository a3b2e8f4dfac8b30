// Safetensors checkpoints: exact round trips, the byte layout, a file written by the Python
// side, corrupt files, failed saves and nn::save / nn::load.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace attograd;
namespace fs = std::filesystem;
using testing::fixture_tensor;
using testing::max_abs_diff;

namespace {

// A fresh directory, removed with its contents at the end of the test.
struct TempDir {
    fs::path path;
    TempDir() {
        static int counter = 0;
        path = fs::temp_directory_path() / fmt::format("attograd-test-{}-{}", ::getpid(), counter++);
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path, ec);
    }
    fs::path operator/(const std::string& name) const { return path / name; }
};

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file from a header text and a data section, length prefix as the format says.
std::string file_bytes(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
    return out + header + data;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
    return a.dtype() == b.dtype() && a.shape() == b.shape() &&
           std::memcmp(a.raw_data(), b.raw_data(),
                       static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

std::map<std::string, Tensor> every_kind() {
    Generator gen(1);
    const float inf = std::numeric_limits<float>::infinity();
    return {
        {"f32", tensor({1.5, -0.0, 1e-40, inf, -inf, std::nan(""), 3.4e38, 0.1}, {2, 4})},
        {"f64", randn({3, 2, 2}, gen, {.dtype = DType::Float64})},
        {"i64", index_tensor({0, -1, std::numeric_limits<std::int64_t>::max(),
                              std::numeric_limits<std::int64_t>::min()},
                             {4})},
        {"bool", eq(index_tensor({1, 0, 1, 1, 0, 0}, {2, 3}), index_tensor({1}, {}))},
        {"scalar", scalar(2.5, {.dtype = DType::Float64})},
        {"empty", zeros({0, 3})},
        {"empty_i64", index_tensor({}, {2, 0})},
        {"layer.0.weight", randn({5, 4}, gen)},
    };
}

}  // namespace

TEST_CASE("every dtype, 0-d and empty tensors and the metadata round-trip exactly") {
    TempDir dir;
    const auto tensors = every_kind();
    const std::map<std::string, std::string> metadata{
        {"format", "pt"}, {"step", "1200"}, {"note", "ünïcode ✓"}};
    save_safetensors(dir / "all.safetensors", tensors, metadata);
    const SafetensorsContents back = read_safetensors(dir / "all.safetensors");
    CHECK(back.metadata == metadata);
    REQUIRE(back.tensors.size() == tensors.size());
    for (const auto& [name, t] : tensors) {
        INFO(name);
        REQUIRE(back.tensors.contains(name));
        CHECK(same_bytes(back.tensors.at(name), t));  // bit for bit, NaN payloads and -0.0 included
        CHECK_FALSE(back.tensors.at(name).requires_grad());
    }
    // No tensors and no metadata is a valid file too.
    save_safetensors(dir / "none.safetensors", {});
    CHECK(read_safetensors(dir / "none.safetensors").tensors.empty());
    CHECK(read_safetensors(dir / "none.safetensors").metadata.empty());
    // Saving over an existing file replaces it.
    save_safetensors(dir / "none.safetensors", {{"x", ones({2})}});
    CHECK(load_safetensors(dir / "none.safetensors").at("x").shape() == Shape{2});
}

TEST_CASE("the bytes follow the safetensors format (parsed independently)") {
    TempDir dir;
    const Tensor a = tensor({1.0, 2.0, 3.0}, {3});
    const Tensor b = index_tensor({7, -8}, {1, 2});
    save_safetensors(dir / "f.safetensors", {{"b", b}, {"a", a}}, {{"k", "v"}});
    const std::string bytes = read_bytes(dir / "f.safetensors");
    REQUIRE(bytes.size() >= 8);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    CHECK(n % 8 == 0);  // the data starts 8-byte aligned
    REQUIRE(8 + n <= bytes.size());
    const std::string header_text = bytes.substr(8, n);
    CHECK(header_text.front() == '{');
    CHECK(header_text.find_last_not_of(' ') == header_text.rfind('}'));  // padded with spaces only
    const auto header = nlohmann::json::parse(header_text);
    CHECK(header.at("__metadata__") == nlohmann::json{{"k", "v"}});
    CHECK(header.at("a") ==
          nlohmann::json::parse(R"({"dtype": "F32", "shape": [3], "data_offsets": [0, 12]})"));
    CHECK(header.at("b") ==
          nlohmann::json::parse(R"({"dtype": "I64", "shape": [1, 2], "data_offsets": [12, 28]})"));
    CHECK(bytes.size() == 8 + n + 28);
    const std::string data = bytes.substr(8 + n);
    // Little-endian IEEE float32 1, 2, 3 and int64 7, -8, written out by hand.
    const std::string expected_a("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12);
    const std::string expected_b("\x07\x00\x00\x00\x00\x00\x00\x00\xf8\xff\xff\xff\xff\xff\xff\xff", 16);
    CHECK(data.substr(0, 12) == expected_a);
    CHECK(data.substr(12) == expected_b);
}

TEST_CASE("a file written by the Python side from the format's specification loads") {
    const auto c = testing::load_fixture("nn").at("cases").at("safetensors_python");
    const auto file = read_safetensors(fs::path(ATTOGRAD_FIXTURE_DIR) / "python_written.safetensors");
    CHECK(file.metadata == c.at("metadata").get<std::map<std::string, std::string>>());
    REQUIRE(file.tensors.size() == c.at("tensors").size());
    const std::map<std::string, DType> dtypes{
        {"F32", DType::Float32}, {"F64", DType::Float64}, {"I64", DType::Int64}, {"BOOL", DType::Bool}};
    for (const auto& [name, expected] : c.at("tensors").items()) {
        INFO(name);
        REQUIRE(file.tensors.contains(name));
        const Tensor& t = file.tensors.at(name);
        CHECK(t.dtype() == dtypes.at(expected.at("dtype").get<std::string>()));
        CHECK(t.shape() == expected.at("shape").get<Shape>());
        if (t.dtype() == DType::Int64) {
            CHECK(t.to_vector<std::int64_t>() == expected.at("data").get<std::vector<std::int64_t>>());
        } else {
            CHECK(t.to_vector<double>() == expected.at("data").get<std::vector<double>>());
        }
    }
}

TEST_CASE("corrupt, truncated and mismatched files raise IoError naming the file and the tensor") {
    TempDir dir;
    const fs::path path = dir / "bad.safetensors";
    const std::string name = path.string();
    const auto check_error = [&](const std::string& bytes, const std::string& needle) {
        write_bytes(path, bytes);
        INFO(needle);
        CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains(name.c_str()), IoError);
        CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains(needle.c_str()), IoError);
    };
    const std::string data(16, '\0');  // room for two float32 [2] tensors
    const auto entry = [](const std::string& tensor, const std::string& dtype, const std::string& shape,
                          const std::string& offsets) {
        return fmt::format(R"("{}": {{"dtype": "{}", "shape": {}, "data_offsets": {}}})", tensor, dtype,
                           shape, offsets);
    };
    const auto object = [](const std::vector<std::string>& entries) {
        return fmt::format("{{{}}}", fmt::join(entries, ", "));
    };
    const std::string good_a = entry("a", "F32", "[2]", "[0, 8]");
    check_error(file_bytes(object({good_a, entry("b", "F32", "[2]", "[8, 16]")}), data).substr(0, 5),
                "cannot hold the 8-byte header length");
    check_error(file_bytes(object({good_a}), std::string(8, '\0')).substr(0, 20), "header length");
    check_error(file_bytes(object({good_a, "oops"}), std::string(8, '\0')), "corrupt header");
    check_error(file_bytes("[1, 2]", ""), "not a JSON object");
    check_error(file_bytes(object({good_a, entry("b", "F16", "[2]", "[8, 12]")}), std::string(12, '\0')),
                "tensor 'b': dtype \"F16\" is not supported");
    check_error(
        file_bytes(R"({"b": {"dtype": 4, "shape": [2], "data_offsets": [0, 8]}})", std::string(8, '\0')),
        "tensor 'b': missing or non-string \"dtype\"");
    check_error(
        file_bytes(R"({"b": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", std::string(8, '\0')),
        "tensor 'b': shape [-2]");
    check_error(
        file_bytes(R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", std::string(8, '\0')),
        "tensor 'b': \"data_offsets\" must be [begin, end]");
    check_error(
        file_bytes(R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", std::string(8, '\0')),
        "tensor 'b': bad data_offsets [8,0]");
    check_error(file_bytes(object({entry("b", "F32", "[3]", "[0, 8]")}), std::string(8, '\0')),
                "tensor 'b': data_offsets [0,8] span 8 bytes, but shape [3] of F32 needs 12 bytes");
    check_error(file_bytes(object({good_a, entry("b", "F32", "[2]", "[8, 16]")}), std::string(12, '\0')),
                "tensor 'b': data_offsets [8,16] run past the end");
    check_error(file_bytes(object({good_a, entry("b", "F32", "[2]", "[4, 12]")}), std::string(12, '\0')),
                "tensor 'b' (bytes 4..12) overlaps tensor 'a' (bytes 0..8)");
    check_error(file_bytes(object({entry("b", "F32", "[2]", "[4, 12]")}), std::string(12, '\0')),
                "tensor 'b' starts at byte 4, leaving a gap");
    check_error(file_bytes(object({good_a}), std::string(12, '\0')), "the tensors cover only 8");
    check_error(file_bytes(R"({"m": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}})",
                           std::string("\x01\x02", 2)),
                "tensor 'm': BOOL data holds a byte other than 0 or 1");
    check_error(file_bytes(R"({"__metadata__": {"step": 3}})", ""), "metadata \"step\" is not a string");
    check_error(
        file_bytes(R"({"b": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 8]}})",
                   std::string(8, '\0')),
        "tensor 'b': shape [4611686018427387904,4] is too large");
    check_error(file_bytes("{}", "") + "\xff\xff\xff\xff", "the data section has 4 bytes");

    CHECK_THROWS_WITH_AS(
        load_safetensors(dir / "missing.safetensors"),
        doctest::Contains(((dir / "missing.safetensors").string() + "': cannot open").c_str()), IoError);
    CHECK_THROWS_WITH_AS(load_safetensors(dir.path), doctest::Contains("not a regular file"), IoError);
    std::string huge = file_bytes("{}", "");
    huge[7] = '\x7f';
    check_error(huge, "exceeds the 2 bytes after it");
}

TEST_CASE(
    "every truncation and every single-byte corruption of a file is an IoError or loads, never a crash") {
    TempDir dir;
    save_safetensors(dir / "good.safetensors",
                     {{"w", tensor({1, 2, 3, 4}, {2, 2})}, {"m", eq(zeros({3}), zeros({3}))}}, {{"k", "v"}});
    const std::string good = read_bytes(dir / "good.safetensors");
    const fs::path path = dir / "bad.safetensors";
    for (std::size_t size = 0; size < good.size(); ++size) {
        write_bytes(path, good.substr(0, size));
        INFO("truncated to " << size << " bytes");
        CHECK_THROWS_AS(load_safetensors(path), IoError);
    }
    // The last tensor in the data section is named when its bytes are cut off.
    write_bytes(path, good.substr(0, good.size() - 1));
    CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains("tensor 'w'"), IoError);
    for (std::size_t at = 0; at < good.size(); ++at) {
        for (char value : {'\0', '9', '"', '{', ',', '\xff'}) {
            std::string bytes = good;
            bytes[at] = value;
            write_bytes(path, bytes);
            try {
                load_safetensors(path);
            } catch (const IoError&) {
            } catch (const std::exception& e) {
                FAIL("byte " << at << " set to " << int(value) << ": " << e.what());
            }
        }
    }
}

TEST_CASE("a failed save raises IoError and leaves the old file intact, with no temporary file left") {
    TempDir dir;
    const fs::path path = dir / "model.safetensors";
    save_safetensors(path, {{"w", ones({2})}});
    const std::string old = read_bytes(path);
    const auto only_the_old_file = [&] {
        CHECK(read_bytes(path) == old);
        CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
    };

    SUBCASE("the path is a directory") {
        fs::create_directory(dir / "sub");
        CHECK_THROWS_WITH_AS(save_safetensors(dir / "sub", {{"w", ones({2})}}),
                             doctest::Contains("is a directory"), IoError);
        CHECK(fs::is_directory(dir / "sub"));
        fs::remove(dir / "sub");
        only_the_old_file();
    }
    SUBCASE("the directory does not exist") {
        CHECK_THROWS_WITH_AS(save_safetensors(dir / "nope" / "m.safetensors", {{"w", ones({2})}}),
                             doctest::Contains("cannot create temporary file"), IoError);
        only_the_old_file();
    }
    SUBCASE("the disk fills up in the middle of the write") {
        // RLIMIT_FSIZE makes write() fail with EFBIG past 4 kB, as a full disk would.
        struct sigaction ignore {
        }, previous{};
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGXFSZ, &ignore, &previous);
        rlimit saved{};
        getrlimit(RLIMIT_FSIZE, &saved);
        rlimit small = saved;
        small.rlim_cur = 4096;
        setrlimit(RLIMIT_FSIZE, &small);
        CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w", ones({100000})}}),
                             doctest::Contains("write failed"), IoError);
        setrlimit(RLIMIT_FSIZE, &saved);
        sigaction(SIGXFSZ, &previous, nullptr);
        only_the_old_file();
    }
    SUBCASE("the directory is not writable") {
        if (::geteuid() == 0) return;  // root writes anyway; the other cases cover root
        fs::permissions(dir.path, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                        fs::perm_options::remove);
        CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w", ones({3})}}), doctest::Contains("cannot create"),
                             IoError);
        fs::permissions(dir.path, fs::perms::owner_write, fs::perm_options::add);
        only_the_old_file();
    }
    SUBCASE("bad tensors are rejected before anything is written") {
        CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w", Tensor{}}}),
                             doctest::Contains("tensor 'w' is undefined"), ValueError);
        CHECK_THROWS_WITH_AS(save_safetensors(path, {{"__metadata__", ones({1})}}),
                             doctest::Contains("invalid tensor name '__metadata__'"), ValueError);
        CHECK_THROWS_WITH_AS(save_safetensors(path, {{"", ones({1})}}),
                             doctest::Contains("invalid tensor name"), ValueError);
        CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w\xff", ones({1})}}),
                             doctest::Contains("not valid UTF-8"), ValueError);
        only_the_old_file();
    }
}

TEST_CASE("nn::save and nn::load move a model's state_dict through a file") {
    TempDir dir;
    Generator gen(2);
    auto make = [&gen] {
        return nn::Sequential(
            std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = 3, .out_features = 4}, gen),
            std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {4}}));
    };
    nn::Sequential a = make(), b = make();
    nn::save(a, dir / "m.safetensors", {{"task", "copy"}});
    CHECK(read_safetensors(dir / "m.safetensors").metadata.at("task") == "copy");
    nn::load(b, dir / "m.safetensors");
    for (const auto& [name, t] : a.state_dict()) CHECK(same_bytes(t, b.state_dict().at(name)));

    // A checkpoint of another model: IoError naming the file and the tensor.
    nn::Linear other({.in_features = 3, .out_features = 5}, gen);
    nn::save(other, dir / "other.safetensors");
    nn::Linear target({.in_features = 3, .out_features = 4}, gen);
    const Tensor before = clone(target.weight().detach());
    CHECK_THROWS_WITH_AS(nn::load(target, dir / "other.safetensors"),
                         doctest::Contains((dir / "other.safetensors").c_str()), IoError);
    CHECK_THROWS_WITH_AS(nn::load(target, dir / "other.safetensors"),
                         doctest::Contains("'bias' has shape [5] in the checkpoint but [4]"), IoError);
    CHECK_THROWS_WITH_AS(nn::load(b, dir / "other.safetensors"), doctest::Contains("missing keys [0.bias"),
                         IoError);
    CHECK(max_abs_diff(target.weight(), before) == 0);
    CHECK_THROWS_WITH_AS(nn::load(target, dir / "absent.safetensors"), doctest::Contains("cannot open"),
                         IoError);
}

TEST_CASE(
    "save_safetensors refuses to replace what is not a regular file (a FIFO standing in for /dev/null)") {
    const auto dir = std::filesystem::temp_directory_path() / "attograd_test_save_fifo";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto fifo = dir / "device";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(save_safetensors(fifo, {{"w", zeros({2})}}), doctest::Contains("not a regular file"),
                         IoError);
    CHECK(std::filesystem::is_fifo(fifo));
    // Reading one is refused at once, not a wait for a writer that never comes.
    CHECK_THROWS_WITH_AS(load_safetensors(fifo), doctest::Contains("not a regular file"), IoError);
    std::filesystem::remove_all(dir);
}

namespace {
void file_commit_twice(const std::filesystem::path& target) {
    AtomicFile file(target, "test");
    file.commit();
    file.commit();
}
}  // namespace

TEST_CASE("AtomicFile replaces its target only on commit and never leaves a temporary file behind") {
    const auto dir = std::filesystem::temp_directory_path() / "attograd_test_atomic_file";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto target = dir / "notes.txt";
    auto contents = [&] {
        std::ifstream in(target);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    auto entries = [&] {
        int n = 0;
        for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
        return n;
    };
    write_file_atomic(target, "old");
    CHECK(contents() == "old");
    {
        AtomicFile file(target, "test");
        file.write("new, unfinished", 15);
        CHECK(contents() == "old");  // nothing visible before commit
        CHECK(entries() == 2);       // the target and the temporary file
    }                                // destroyed without commit: the write is abandoned
    CHECK(contents() == "old");
    CHECK(entries() == 1);
    {
        AtomicFile file(target, "test");
        file.write("new", 3);
        file.commit();
    }
    CHECK(contents() == "new");
    CHECK(entries() == 1);
    CHECK_THROWS_WITH_AS(file_commit_twice(target), doctest::Contains("committed twice"), IoError);
    // a replaced file keeps its permission bits
    std::filesystem::permissions(target,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    write_file_atomic(target, "private");
    CHECK(std::filesystem::status(target).permissions() ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
    // any name the filesystem takes (255 bytes) can be written: the temporary name is shortened
    const auto longest = dir / std::string(255, 'a');
    write_file_atomic(longest, "long");
    CHECK(std::filesystem::file_size(longest) == 4);
    std::filesystem::remove(longest);
    CHECK_THROWS_WITH_AS(write_file_atomic("", "x"), doctest::Contains("not a file name"), IoError);
    CHECK_THROWS_WITH_AS(write_file_atomic(dir, "x"), doctest::Contains("is a directory"), IoError);
    CHECK_THROWS_WITH_AS(write_file_atomic(dir / "missing" / "a.txt", "x"),
                         doctest::Contains("cannot create temporary file"), IoError);
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "hostile headers: deep nesting, zero-element tensors with huge sizes and huge names give a short "
    "IoError") {
    TempDir dir;
    const fs::path path = dir / "hostile.safetensors";
    // A million levels of nesting would overflow the stack in any recursive copy or print.
    const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
    write_bytes(path, file_bytes(R"({"a": )" + deep + "}", ""));
    CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains("nested deeper than 64"), IoError);
    // 65 levels inside a string are only text.
    write_bytes(path, file_bytes(R"({"__metadata__": {"k": ")" + std::string(100, '[') + R"("}})", ""));
    CHECK(read_safetensors(path).metadata.at("k") == std::string(100, '['));

    // No data, but [0, 2^62, 2^62] strides overflow int64.
    write_bytes(
        path,
        file_bytes(
            R"({"z": {"dtype": "F32", "shape": [0, 4611686018427387904, 4611686018427387904], "data_offsets": [0, 0]}})",
            ""));
    CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains("tensor 'z'"), IoError);
    CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains("too large"), IoError);
    // A zero-element tensor with sizes that fit loads.
    write_bytes(
        path, file_bytes(R"({"z": {"dtype": "F32", "shape": [0, 1000000, 3], "data_offsets": [0, 0]}})", ""));
    CHECK(load_safetensors(path).at("z").shape() == Shape{0, 1000000, 3});

    // A megabyte-long tensor name and shape are quoted in part, not whole.
    const std::string long_name(1'000'000, 'x');
    write_bytes(
        path,
        file_bytes(fmt::format(R"({{"{}": {{"dtype": "F32", "shape": [{}1], "data_offsets": [0, 4]}}}})",
                               long_name, std::string(300'000, ' ') + "-"),
                   std::string(4, '\0')));
    try {
        load_safetensors(path);
        FAIL("loaded");
    } catch (const IoError& e) {
        CHECK(std::string(e.what()).size() < 1000);
        CHECK(std::string(e.what()).find("xxx...") != std::string::npos);
    }
}

TEST_CASE(
    "a FIFO, a socket path or a directory in place of a checkpoint is refused at once, never waited on") {
    TempDir dir;
    const fs::path fifo = dir / "fifo.safetensors";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    ::alarm(30);  // a hang would end the test here instead of never
    CHECK_THROWS_WITH_AS(load_safetensors(fifo), doctest::Contains("is a FIFO, not a regular file"), IoError);
    CHECK_THROWS_WITH_AS(load_safetensors(dir.path), doctest::Contains("is a directory"), IoError);
    CHECK_THROWS_WITH_AS(InputFile(fifo, "where").read_all(), doctest::Contains("where: is a FIFO"), IoError);
    const fs::path socket_path = dir / "socket.safetensors";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    CHECK_THROWS_WITH_AS(load_safetensors(socket_path), doctest::Contains("is a socket"), IoError);
    ::close(fd);
    ::alarm(0);
}

TEST_CASE("check_json_depth counts arrays and objects outside strings, and excerpt bounds quoted text") {
    CHECK_NOTHROW(check_json_depth("[[[]]]", 3, "x"));
    CHECK_THROWS_WITH_AS(check_json_depth("[[[[]]]]", 3, "x"),
                         doctest::Contains("x: JSON nested deeper than 3"), IoError);
    CHECK_NOTHROW(
        check_json_depth(R"(["[[[[\"[[[["])", 1, "x"));  // brackets and an escaped quote in a string
    CHECK(excerpt("short") == "short");
    const std::string cut = excerpt(std::string(100, 'a'), 10);
    CHECK(cut == "aaaaaaaaaa... (100 bytes)");
    CHECK(excerpt("\xc3\xa9\xc3\xa9", 3) == "\xc3\xa9... (4 bytes)");  // never splits a UTF-8 character
}

TEST_CASE("fnv1a64 matches the published test values and changes with any flipped byte") {
    CHECK(fnv1a64("") == 0xcbf29ce484222325ULL);
    CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
    CHECK(fnv1a64("foobar") == 0x85944171f73967e8ULL);
    std::string bytes(4096, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
    const auto sum = fnv1a64(bytes);
    for (std::size_t i = 0; i < bytes.size(); i += 97) {
        for (const int bit : {0, 7}) {
            std::string flipped = bytes;
            flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
            CHECK(fnv1a64(flipped) != sum);
        }
    }
}

TEST_CASE("fnv1a64 continues over pieces, and file_checksum reads a file in pieces to the same sum") {
    CHECK(fnv1a64("bar", fnv1a64("foo")) == fnv1a64("foobar"));
    TempDir tmp;
    // Past one piece (1 MiB) and not a multiple of it.
    std::string bytes((std::size_t{5} << 19) + 3, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 20));
    const fs::path path = tmp.path / "big.bin";
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    CHECK(file_checksum(path) == fmt::format("{:016x}", fnv1a64(bytes)));
    std::ofstream(tmp.path / "empty.bin").close();
    CHECK(file_checksum(tmp.path / "empty.bin") == "cbf29ce484222325");
}

TEST_CASE("AtomicFile writes through a symbolic link: the link stays, the file it points to is replaced") {
    const auto dir = std::filesystem::temp_directory_path() / "attograd_test_atomic_symlink";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "real");
    write_file_atomic(dir / "real" / "a.txt", "old");
    std::filesystem::create_symlink(dir / "real" / "a.txt", dir / "link.txt");
    std::filesystem::create_symlink(dir / "link.txt", dir / "link2.txt");  // a chain of links
    write_file_atomic(dir / "link2.txt", "new");
    CHECK(std::filesystem::is_symlink(dir / "link.txt"));
    CHECK(std::filesystem::is_symlink(dir / "link2.txt"));
    std::ifstream in(dir / "real" / "a.txt");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == "new");
    // A link to a FIFO is refused like the FIFO itself, and both stay.
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    std::filesystem::create_symlink(dir / "fifo", dir / "to_fifo");
    CHECK_THROWS_WITH_AS(write_file_atomic(dir / "to_fifo", "x"), doctest::Contains("not a regular file"),
                         IoError);
    CHECK(std::filesystem::is_symlink(dir / "to_fifo"));
    CHECK(std::filesystem::is_fifo(dir / "fifo"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("write_file_atomic through a dangling link creates the file it points to and keeps the link") {
    TempDir dir;
    fs::create_directory(dir / "sub");
    fs::create_symlink("target.txt", dir / "relative.txt");             // relative to the link's folder
    fs::create_symlink(dir / "sub" / "abs.txt", dir / "absolute.txt");  // absolute
    write_file_atomic(dir / "relative.txt", "one");
    write_file_atomic(dir / "absolute.txt", "two");
    CHECK(fs::is_symlink(dir / "relative.txt"));
    CHECK(fs::is_symlink(dir / "absolute.txt"));
    CHECK(read_bytes(dir / "target.txt") == "one");
    CHECK(read_bytes(dir / "sub" / "abs.txt") == "two");
}

TEST_CASE("AtomicFile with Symlinks::refuse never writes through a link: the link and its target stay") {
    TempDir dir;
    const fs::path real = dir / "real.txt", link = dir / "link.txt", dangling = dir / "dangling.txt";
    write_file_atomic(real, "old");
    fs::create_symlink(real, link);
    fs::create_symlink(dir / "missing.txt", dangling);
    for (const fs::path& path : {link, dangling}) {
        CHECK_THROWS_WITH_AS(write_file_atomic(path, "new", AtomicFile::Symlinks::refuse),
                             doctest::Contains("is a symbolic link; not writing through it"), IoError);
        CHECK(fs::is_symlink(path));
    }
    CHECK(read_bytes(real) == "old");
    CHECK_FALSE(fs::exists(dir / "missing.txt"));
    // A link made after the file was opened is replaced by the rename, not written through.
    {
        AtomicFile file(dir / "late.txt", "test", AtomicFile::Symlinks::refuse);
        file.write("new", 3);
        fs::create_symlink(real, dir / "late.txt");
        file.commit();
    }
    CHECK_FALSE(fs::is_symlink(dir / "late.txt"));
    CHECK(read_bytes(dir / "late.txt") == "new");
    CHECK(read_bytes(real) == "old");
    // A regular file is replaced as with Symlinks::follow.
    write_file_atomic(real, "newer", AtomicFile::Symlinks::refuse);
    CHECK(read_bytes(real) == "newer");
}

TEST_CASE("is_checksum_text accepts exactly what file_checksum writes") {
    CHECK(is_checksum_text(fmt::format("{:016x}", fnv1a64("a"))));
    CHECK(is_checksum_text("0123456789abcdef"));
    for (const std::string bad : {"", "zz", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF",
                                  "0123456789abcdeg", " 123456789abcdef", "0x23456789abcdef"}) {
        CAPTURE(bad);
        CHECK_FALSE(is_checksum_text(bad));
    }
}
