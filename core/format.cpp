// Printing tensors: PyTorch's layout (torch/_tensor_str.py's rules) and print options.
#include "core/format.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <ostream>
#include <vector>

namespace attograd {
namespace {

std::mutex options_mutex;
PrintOptions global_options;

// Visits the elements that are shown (all, or the edge items of each dimension when
// summarising) in print order; `fn(flat_offset)`.
void visit_shown(const Shape& shape, const Shape& strides, std::size_t dim, std::int64_t offset,
                 bool summarize, std::int64_t edge, const std::function<void(std::int64_t)>& fn) {
    if (dim == shape.size()) return fn(offset);
    const std::int64_t n = shape[dim];
    for (std::int64_t i = 0; i < n; ++i) {
        if (summarize && n > 2 * edge && i == edge) i = n - edge;
        visit_shown(shape, strides, dim + 1, offset + i * strides[dim], summarize, edge, fn);
    }
}

// PyTorch's _Formatter: one mode and width for every shown element.
struct Formatter {
    bool floating = false;
    bool int_mode = true;
    bool sci_mode = false;
    std::size_t width = 1;
    int precision = 4;

    std::string raw(double v) const {
        if (sci_mode) return fmt::format("{:.{}e}", v, precision);
        if (int_mode) return std::isfinite(v) ? fmt::format("{:.0f}.", v) : fmt::format("{:.0f}", v);
        return fmt::format("{:.{}f}", v, precision);
    }
    std::string pad(std::string s) const {
        return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
    }
};

Formatter make_formatter(const std::vector<double>& shown, DType dtype, const PrintOptions& o) {
    Formatter f;
    f.floating = is_floating(dtype);
    f.precision = o.precision;
    if (!f.floating) {
        for (double v : shown) {
            const std::string s = dtype == DType::Bool ? (v != 0 ? "True" : "False")
                                                       : fmt::format("{}", static_cast<std::int64_t>(v));
            f.width = std::max(f.width, s.size());
        }
        return f;
    }
    std::vector<double> nonzero_finite;
    for (double v : shown)
        if (std::isfinite(v) && v != 0) nonzero_finite.push_back(v);
    if (!nonzero_finite.empty()) {
        double lo = std::abs(nonzero_finite[0]), hi = lo;
        for (double v : nonzero_finite) {
            lo = std::min(lo, std::abs(v));
            hi = std::max(hi, std::abs(v));
            if (v != std::ceil(v)) f.int_mode = false;
        }
        f.sci_mode = hi / lo > 1000.0 || hi > 1e8 || (!f.int_mode && lo < 1e-4);
        for (double v : nonzero_finite) f.width = std::max(f.width, f.raw(v).size());
    }
    if (o.sci_mode) f.sci_mode = *o.sci_mode;
    return f;
}

struct Printer {
    const Tensor& t;
    const Shape& strides;
    const Formatter& f;
    const PrintOptions& o;
    bool summarize;

    std::string element(std::int64_t offset) const {
        return dispatch_all(t.dtype(), [&]<class T>(T) -> std::string {
            const T v = static_cast<const T*>(t.raw_data())[offset];
            if constexpr (std::is_same_v<T, bool>)
                return f.pad(v ? "True" : "False");
            else if constexpr (std::is_integral_v<T>)
                return f.pad(fmt::format("{}", v));
            else
                return f.pad(f.raw(static_cast<double>(v)));
        });
    }

    // torch/_tensor_str.py: _tensor_str_with_formatter and _vector_str.
    std::string render(std::size_t dim, std::int64_t offset, std::size_t indent) const {
        const Shape& shape = t.shape();
        if (dim == shape.size()) return element(offset);
        const std::int64_t n = shape[dim];
        const bool cut = summarize && n > 2 * o.edgeitems;
        std::vector<std::string> items;
        for (std::int64_t i = 0; i < n; ++i) {
            if (cut && i == o.edgeitems) {
                items.push_back(dim + 1 == shape.size() ? " ..." : "...");
                i = n - o.edgeitems;
            }
            items.push_back(render(dim + 1, offset + i * strides[dim], indent + 1));
        }
        if (dim + 1 == shape.size()) {
            const auto per_line =
                std::max<std::int64_t>(1, (o.linewidth - static_cast<std::int64_t>(indent)) /
                                              static_cast<std::int64_t>(f.width + 2));
            std::string out = "[";
            for (std::size_t i = 0; i < items.size(); ++i) {
                if (i > 0)
                    out += i % static_cast<std::size_t>(per_line) == 0 ? ",\n" + std::string(indent + 1, ' ')
                                                                       : ", ";
                out += items[i];
            }
            return out + "]";
        }
        const std::string sep =
            "," + std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
        std::string out = "[";
        for (std::size_t i = 0; i < items.size(); ++i) out += (i > 0 ? sep : "") + items[i];
        return out + "]";
    }
};

}  // namespace

void set_print_options(const PrintOptions& options) {
    AG_CHECK(options.precision >= 0 && options.precision <= 30, ValueError,
             "set_print_options: precision must be in [0, 30], got {}", options.precision);
    AG_CHECK(options.threshold >= 0 && options.edgeitems >= 0 && options.linewidth >= 0, ValueError,
             "set_print_options: threshold, edgeitems and linewidth must be >= 0, got {}, {}, {}",
             options.threshold, options.edgeitems, options.linewidth);
    const std::lock_guard lock(options_mutex);
    global_options = options;
}

PrintOptions get_print_options() {
    const std::lock_guard lock(options_mutex);
    return global_options;
}

std::string to_string(const Tensor& t) { return to_string(t, get_print_options()); }

std::string to_string(const Tensor& t, const PrintOptions& options) {
    if (!t.defined()) return "tensor(undefined)";
    const std::string suffix = fmt::format(", shape={}, dtype={}{})", t.shape(), t.dtype(),
                                           t.requires_grad() ? ", requires_grad=true" : "");
    if (t.numel() == 0) return "tensor([]" + suffix;
    const Shape strides = contiguous_strides(t.shape());
    const bool summarize = t.numel() > options.threshold;
    std::vector<double> shown;
    dispatch_all(t.dtype(), [&]<class T>(T) {
        const T* p = static_cast<const T*>(t.raw_data());
        visit_shown(t.shape(), strides, 0, 0, summarize, options.edgeitems,
                    [&](std::int64_t i) { shown.push_back(static_cast<double>(p[i])); });
    });
    const Formatter f = make_formatter(shown, t.dtype(), options);
    const Printer printer{t, strides, f, options, summarize};
    return "tensor(" + printer.render(0, 0, 7) + suffix;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace attograd
