// Module: the base of every layer: registered parameters, buffers and submodules.
#pragma once

#include "core/tensor.hpp"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attograd::nn {

/// Parameter and buffer tensors by their dot-joined names (PyTorch's `state_dict` keys).
using StateDict = std::map<std::string, Tensor>;

/// Base class of layers, as in PyTorch and LibTorch's C++ frontend. A layer registers its
/// parameters, buffers and submodules under names in its constructor; `named_parameters()`
/// then yields hierarchical names (`encoder.layers.0.self_attn.in_proj_weight`) that are also
/// the checkpoint keys. Modules are not copyable; submodules are held by `std::shared_ptr`.
/// `forward` is not virtual: each layer declares the signature it needs.
class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    /// The layer's type name for printing, e.g. "Linear".
    virtual std::string type_name() const = 0;
    /// The layer's options for printing, e.g. "in_features=4, out_features=8, bias=true".
    virtual std::string extra_repr() const { return {}; }

    /// Parameters with dot-joined names, own first, then each submodule's in registration
    /// order (with `recurse`).
    std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
    /// The parameters of named_parameters(), in the same order.
    std::vector<Tensor> parameters(bool recurse = true) const;
    /// Buffers (saved state that is not trained, e.g. running statistics) with their names.
    std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
    /// Direct submodules with their names.
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
        return children_;
    }
    /// Every module of the tree, this one first (name ""), with dot-joined names.
    std::vector<std::pair<std::string, const Module*>> named_modules() const;

    /// Parameters and buffers by name. The tensors share storage with the module: detach or
    /// copy before changing them.
    StateDict state_dict() const;
    /// Copies every tensor of `state` into the parameter or buffer of the same name. With
    /// `strict`, missing and unexpected names are an error. Throws ValueError listing the
    /// missing and unexpected names, naming a key whose tensor is undefined or holds a value the layer
    /// cannot have saved (a negative count), ShapeError naming the tensor
    /// and both shapes, and DTypeError when an int64 / bool tensor meets another dtype; nothing is changed
    /// when it throws. float32 and float64 convert to the model's dtype (rounding to float32 when needed), as
    /// PyTorch's `load_state_dict` does through `copy_`, so a float64 checkpoint loads into a float32 model
    /// and back.
    void load_state_dict(const StateDict& state, bool strict = true);

    /// Switches this module and every submodule to training (dropout active, hard attention
    /// samples) or evaluation mode.
    void train(bool on = true);
    /// Same as train(false).
    void eval() { train(false); }
    /// True in training mode (the default).
    bool is_training() const { return training_; }

    /// Drops the gradients of every parameter.
    void zero_grad();
    /// Converts every parameter and buffer to `dtype` in place (handles held elsewhere see the
    /// change), e.g. float64 for gradcheck, and the layers' options follow (`options().dtype`).
    /// Gradients are dropped. Throws DTypeError unless `dtype` is a float type.
    void to(DType dtype);

protected:
    /// Called by to() on this module and on every submodule once their tensors are converted:
    /// a layer that keeps its dtype in its options updates it here, so that its checks and the
    /// masks it builds follow the parameters.
    virtual void dtype_changed(DType /*dtype*/) {}
    /// Called by load_state_dict() on this module and on every submodule before anything is
    /// copied (after the names, shapes and dtypes are checked), with the whole `state` and this
    /// module's key prefix ("" or "decoder.attention."): a layer whose buffers have a range (a
    /// count cannot be negative) throws ValueError naming the key of a value it could not have saved.
    virtual void check_loaded_state(const StateDict& /*state*/, const std::string& /*prefix*/) const {}

    /// Registers a parameter (it then requires grad). Throws ValueError on an empty, dotted
    /// or duplicate name. Returns the handle to keep as a member.
    Tensor& register_parameter(const std::string& name, Tensor tensor);
    /// Registers a buffer: saved in the state_dict, not trained.
    Tensor& register_buffer(const std::string& name, Tensor tensor);
    /// Registers a submodule; its parameters get the prefix `name.`.
    template <class M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
        check_name(name, "register_module");
        children_.emplace_back(name, module);
        return module;
    }

private:
    void check_name(const std::string& name, const char* what) const;
    void collect(const std::string& prefix, bool recurse, bool buffers,
                 std::vector<std::pair<std::string, Tensor>>& out) const;
    static void notify_dtype(Module& m, DType dtype);

    std::vector<std::pair<std::string, Tensor>> parameters_;
    std::vector<std::pair<std::string, Tensor>> buffers_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    bool training_ = true;
};

/// Checks that a layer's input has its parameters' dtype. Throws DTypeError naming the layer
/// and the input: "Attention: query is float64 [2, 3, 4] but the layer's parameters are
/// float32" (convert the input with to_dtype, or the layer with Module::to).
void check_input_dtype(const Tensor& input, DType parameters, std::string_view layer,
                       std::string_view input_name);

/// Prints a module tree as PyTorch does: `Linear(in_features=4, out_features=8, bias=true)`,
/// with submodules indented one per line.
std::string to_string(const Module& module);

}  // namespace attograd::nn

// fmt's formatter specialisations sit outside attograd's namespaces, where Doxygen cannot
// place them; the reference documents them with to_string.
/// @cond
/// `fmt::print("{}", module)` prints to_string(module). Works for every Module subclass.
template <class M>
requires std::is_base_of_v<attograd::nn::Module, M>
struct fmt::formatter<M> : fmt::formatter<std::string_view> {
    auto format(const M& m, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(attograd::nn::to_string(m), ctx);
    }
};
/// @endcond
