// The algorithms and collectives as types (core/algorithm.hpp): their names, parsing and printing, and the
// lists that the settings and the tuning file spell as words.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "core/params.hpp"

BOOST_AUTO_TEST_SUITE(test_algorithm)

using namespace ringrt;

BOOST_AUTO_TEST_CASE(algorithm_names_parse_back_and_print) {
  const std::vector<std::string> want{"naive",      "ring",         "all2all",         "oneshot", "twoshot",
                                      "ring_fused", "hierarchical", "hierarchical_rs", "mpi"};
  BOOST_TEST_REQUIRE(kAlgorithms.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    Algorithm a = kAlgorithms[i];
    BOOST_TEST(static_cast<size_t>(a) == i);
    BOOST_TEST(algorithm_name(a) == want[i]);
    BOOST_TEST((parse_algorithm(want[i]) == a));
    std::ostringstream os;
    os << a;
    BOOST_TEST(os.str() == want[i]);
  }
  for (const char* bad : {"", "auto", "RING", "ring ", "tree", "fused", "allreduce"})
    BOOST_TEST(!parse_algorithm(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(collective_names_parse_back_and_print) {
  const std::vector<std::string> want{"allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"};
  BOOST_TEST_REQUIRE(kCollectives.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    Collective c = kCollectives[i];
    BOOST_TEST(static_cast<size_t>(c) == i);
    BOOST_TEST(collective_name(c) == want[i]);
    BOOST_TEST((parse_collective(want[i]) == c));
    std::ostringstream os;
    os << c;
    BOOST_TEST(os.str() == want[i]);
  }
  for (const char* bad : {"", "gather", "Allreduce", "reduce-scatter", "ring"})
    BOOST_TEST(!parse_collective(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(fused_and_hierarchical_forms) {
  const std::set<Algorithm> fused(kFusedAlgorithms.begin(), kFusedAlgorithms.end());
  for (Algorithm a : kAlgorithms) {
    BOOST_TEST(is_fused(a) == (fused.count(a) == 1), a);
    BOOST_TEST(is_hierarchical(a) == algorithm_name(a).starts_with("hierarchical"), a);
  }
  BOOST_TEST(fused.size() == 3u);
  BOOST_TEST(is_fused(Algorithm::ring_fused));
  BOOST_TEST(!is_fused(Algorithm::ring));
}

// allreduce.algorithm's words (core/params.hpp one_of) are auto and the forceable algorithms' names, in
// order; core/algorithm.cpp static_asserts the same at build time. forced_algorithm reads the setting.
BOOST_AUTO_TEST_CASE(settings_choices_are_the_forceable_algorithms) {
  const Tunable* t = find_tunable("allreduce.algorithm");
  BOOST_TEST_REQUIRE(t != nullptr);
  std::string want = "auto";
  for (Algorithm a : kForcedAlgorithms) want += "|" + std::string(algorithm_name(a));
  BOOST_TEST(t->parser.choices == want);
  BOOST_TEST(t->parser.choices.ends_with("|ring_fused|mpi"));  // the tuned and modelled ones, then mpi
  AllreduceSettings s;
  BOOST_TEST(!forced_algorithm(s).has_value());
  for (Algorithm a : kForcedAlgorithms) {
    s.algorithm = std::string(algorithm_name(a));
    BOOST_TEST((forced_algorithm(s) == a));
  }
}

BOOST_AUTO_TEST_CASE(name_order_is_the_order_of_the_words) {
  std::vector<Algorithm> sorted(kAllreduceAlgorithms.begin(), kAllreduceAlgorithms.end());
  std::sort(sorted.begin(), sorted.end(), AlgorithmNameLess{});
  std::vector<std::string> names;
  for (Algorithm a : sorted) names.emplace_back(algorithm_name(a));
  BOOST_TEST(names == (std::vector<std::string>{"all2all", "naive", "oneshot", "ring", "ring_fused", "twoshot"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
