#include "dnmf/options.hpp"

#include <array>
#include <utility>

#include "dnmf/error.hpp"

namespace dnmf {
namespace {

template <class E, std::size_t N>
E parse_named(const std::array<std::pair<const char*, E>, N>& names, const std::string& text, const char* what) {
  std::string valid;
  for (const auto& [name, value] : names) {
    if (text == name) return value;
    valid += valid.empty() ? name : std::string(", ") + name;
  }
  throw UsageError(std::string(what) + " '" + text + "' is not one of: " + valid);
}

template <class E, std::size_t N>
std::string name_of(const std::array<std::pair<const char*, E>, N>& names, E value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return "?";
}

constexpr std::array<std::pair<const char*, Algorithm>, 4> algorithms{
    {{"mu", Algorithm::mu}, {"kl", Algorithm::kl}, {"hals", Algorithm::hals}, {"bpp", Algorithm::bpp}}};
constexpr std::array<std::pair<const char*, InitMethod>, 4> inits{{{"random", InitMethod::random},
                                                                   {"nndsvd", InitMethod::nndsvd},
                                                                   {"nndsvda", InitMethod::nndsvda},
                                                                   {"given", InitMethod::given}}};
constexpr std::array<std::pair<const char*, BackendKind>, 3> backends{
    {{"reference", BackendKind::reference}, {"cpu", BackendKind::cpu}, {"cuda", BackendKind::cuda}}};
constexpr std::array<std::pair<const char*, Unstored>, 2> unstored_names{
    {{"zero", Unstored::zero}, {"missing", Unstored::missing}}};

}  // namespace

Algorithm parse_algorithm(const std::string& name) { return parse_named(algorithms, name, "algorithm"); }
InitMethod parse_init(const std::string& name) { return parse_named(inits, name, "init"); }
BackendKind parse_backend(const std::string& name) { return parse_named(backends, name, "backend"); }
std::string to_string(Algorithm a) { return name_of(algorithms, a); }
std::string to_string(InitMethod i) { return name_of(inits, i); }
std::string to_string(BackendKind b) { return name_of(backends, b); }
Unstored parse_unstored(const std::string& text) { return parse_named(unstored_names, text, "--unstored"); }
std::string to_string(Unstored u) { return name_of(unstored_names, u); }

}  // namespace dnmf
