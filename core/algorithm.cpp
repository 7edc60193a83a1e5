// The names of the algorithms and collectives (core/algorithm.hpp).
#include "core/algorithm.hpp"

#include <ostream>
#include <utility>

#include "core/params.hpp"

namespace ringrt {

namespace {
constexpr std::array<std::string_view, 9> kAlgorithmNames{
    "naive", "ring", "all2all", "oneshot", "twoshot", "ring_fused", "hierarchical", "hierarchical_rs", "mpi"};
constexpr std::array<std::string_view, 6> kCollectiveNames{"allreduce", "reduce_scatter", "allgather",
                                                           "alltoall",  "broadcast",      "reduce"};
static_assert(kAlgorithmNames.size() == kAlgorithms.size() && kCollectiveNames.size() == kCollectives.size());

// The choices of allreduce.algorithm (core/params.hpp's X-macro), "auto|naive|...".
constexpr std::string_view algorithm_setting_choices() {
#define RINGRT_ALGORITHM_CHOICES(type, field, key, env, def, parser, description) \
  if (std::string_view(key) == "allreduce.algorithm") return (parser).choices;
  RINGRT_ALLREDUCE_PARAMS(RINGRT_ALGORITHM_CHOICES)
#undef RINGRT_ALGORITHM_CHOICES
  return {};
}

// Whether choices is "auto" and then exactly the forceable algorithms' names (kForcedAlgorithms), '|' between.
constexpr bool setting_lists_the_forceable_algorithms(std::string_view choices) {
  if (!choices.starts_with("auto")) return false;
  choices.remove_prefix(4);
  for (Algorithm a : kForcedAlgorithms) {
    std::string_view name = kAlgorithmNames[static_cast<size_t>(a)];
    if (!choices.starts_with("|") || choices.substr(1, name.size()) != name) return false;
    choices.remove_prefix(1 + name.size());
  }
  return choices.empty();
}
static_assert(setting_lists_the_forceable_algorithms(algorithm_setting_choices()),
              "allreduce.algorithm's one_of (core/params.hpp) must be auto and then kForcedAlgorithms' names");
}  // namespace

std::string_view algorithm_name(Algorithm a) {
  auto i = static_cast<size_t>(a);
  return i < kAlgorithmNames.size() ? kAlgorithmNames[i] : "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (Algorithm a : kAlgorithms)
    if (algorithm_name(a) == name) return a;
  return std::nullopt;
}

std::string_view collective_name(Collective c) {
  auto i = static_cast<size_t>(c);
  return i < kCollectiveNames.size() ? kCollectiveNames[i] : "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective c : kCollectives)
    if (collective_name(c) == name) return c;
  return std::nullopt;
}

std::vector<std::string> algorithm_names(const std::vector<Algorithm>& algorithms) {
  std::vector<std::string> out;
  for (Algorithm a : algorithms) out.emplace_back(algorithm_name(a));
  return out;
}

std::ostream& operator<<(std::ostream& os, Algorithm a) { return os << algorithm_name(a); }
std::ostream& operator<<(std::ostream& os, Collective c) { return os << collective_name(c); }

bool is_fused(Algorithm a) { return a == Algorithm::oneshot || a == Algorithm::twoshot || a == Algorithm::ring_fused; }

bool is_hierarchical(Algorithm a) { return a == Algorithm::hierarchical || a == Algorithm::hierarchical_rs; }

std::optional<Algorithm> forced_algorithm(const AllreduceSettings& settings) {
  return settings.algorithm == "auto" ? std::nullopt : parse_algorithm(settings.algorithm);
}

}  // namespace ringrt
