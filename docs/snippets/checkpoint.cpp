// Checkpoints are safetensors files keyed by PyTorch's state_dict names, so they load into
// torch.nn.MultiheadAttention with `load_state_dict(safetensors.torch.load_file(path))`.
#include <attograd/attograd.hpp>
#include <filesystem>
using namespace attograd;

int main() {
    const auto dir = std::filesystem::temp_directory_path() / "attograd-snippet-checkpoint";
    std::filesystem::create_directories(dir);
    Generator gen(0);
    nn::MultiHeadAttention attention({.embed_dim = 16, .num_heads = 4}, gen);
    for (const auto& [name, tensor] : attention.named_parameters())
        fmt::print("{} {}\n", name, tensor.shape());  // in_proj_weight [48, 16], out_proj.weight ...
    nn::save(attention, dir / "attention.safetensors", {{"note", "written by attograd"}});

    Generator other(1);
    nn::MultiHeadAttention restored({.embed_dim = 16, .num_heads = 4}, other);
    nn::load(restored, dir / "attention.safetensors");  // strict: every name, shape and dtype must match
    const Tensor x = randn({2, 5, 16}, gen);
    const double diff = max(abs(attention.forward(x).output - restored.forward(x).output)).item();
    const bool same = diff == 0.0;
    fmt::print("restored output equal: {}\n", same);

    // Any tensors, by name: the same format, readable by Python's safetensors and numpy.
    save_safetensors(dir / "tensors.safetensors", {{"x", x}});
    fmt::print("read back {}\n", load_safetensors(dir / "tensors.safetensors").at("x").shape());
    std::filesystem::remove_all(dir);
    return same ? 0 : 1;
}
