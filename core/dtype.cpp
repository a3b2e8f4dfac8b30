// Names and sizes of the element types.
#include "core/dtype.hpp"

namespace attograd {

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::Float32:
            return "float32";
        case DType::Float64:
            return "float64";
        case DType::Int64:
            return "int64";
        case DType::Bool:
            return "bool";
    }
    return "unknown";
}

std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::Float32:
            return 4;
        case DType::Float64:
            return 8;
        case DType::Int64:
            return 8;
        case DType::Bool:
            return 1;
    }
    return 0;
}

}  // namespace attograd
