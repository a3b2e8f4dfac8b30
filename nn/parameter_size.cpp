// check_parameter_size: the element count and bytes of a parameter a module would allocate.
#include "nn/parameter_size.hpp"

#include "core/error.hpp"
#include "core/format.hpp"

#include <unistd.h>

#include <cstdint>
#include <limits>

namespace attograd::nn {
namespace {

// Physical memory in bytes, or the largest int64 when the system does not say.
double physical_memory() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return static_cast<double>(std::numeric_limits<std::int64_t>::max());
    return static_cast<double>(pages) * static_cast<double>(page);
}

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 6) bytes /= 1024.0, ++u;
    return fmt::format("{:.3g} {}", bytes, units[u]);
}

}  // namespace

void check_parameter_size(std::string_view op, std::string_view option, std::string_view name,
                          const Shape& shape, DType dtype) {
    const auto element = static_cast<std::int64_t>(dtype_size(dtype));
    std::int64_t bytes = element;
    bool overflow = false;
    for (auto s : shape) {
        if (s < 0) return;  // a negative size is the option check's or core's to report
        if (s == 0) return;
        overflow = overflow || __builtin_mul_overflow(bytes, s, &bytes);
    }
    AG_CHECK(!overflow, ResourceError, "{}: {} makes {} {}, which has too many elements", op, option, name,
             shape);
    const double memory = physical_memory();
    AG_CHECK(static_cast<double>(bytes) <= memory, ResourceError,
             "{}: {} makes {} {} ({}), which needs {}, more than this machine's {} of memory", op, option,
             name, shape, dtype, human_bytes(static_cast<double>(bytes)), human_bytes(memory));
}

std::int64_t gate_rows(std::string_view op, std::int64_t gates, std::int64_t hidden, std::string_view name) {
    std::int64_t rows = 0;
    AG_CHECK(!__builtin_mul_overflow(gates, hidden, &rows), ResourceError,
             "{}: hidden_size {} makes {} [{} * {}, ...], which has too many elements", op, hidden, name,
             gates, hidden);
    return rows;
}

void check_total_parameter_size(std::string_view op, std::string_view option, double elements, DType dtype) {
    const double bytes = elements * static_cast<double>(dtype_size(dtype));
    const double memory = physical_memory();
    AG_CHECK(bytes <= memory, ResourceError,
             "{}: {} makes {:.3g} parameter elements ({}) in all, more than this machine's {} of memory", op,
             option, elements, human_bytes(bytes), human_bytes(memory));
}

void check_transformer_sizes(std::string_view op, std::int64_t d_model, std::int64_t dim_feedforward,
                             DType dtype) {
    AG_CHECK(d_model <= std::numeric_limits<std::int64_t>::max() / 3, ResourceError,
             "{}: d_model {} makes self_attn.in_proj_weight [3 * {}, {}], which has too many elements", op,
             d_model, d_model, d_model);
    check_parameter_size(op, fmt::format("d_model {}", d_model), "self_attn.in_proj_weight",
                         {3 * d_model, d_model}, dtype);
    check_parameter_size(op, fmt::format("d_model {} and dim_feedforward {}", d_model, dim_feedforward),
                         "linear1.weight", {dim_feedforward, d_model}, dtype);
}

}  // namespace attograd::nn
