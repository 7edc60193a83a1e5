// The out-edge list of UOpGraph's Boost.Graph (internal to rewrite/uop.cpp): a vector holding up to 4
// edges in the vertex itself, so a node of up to 4 sources (nearly all) costs one allocation, not two.
// Boost.Graph's documented way of customizing adjacency_list storage: a selector with container_gen and
// parallel_edge_traits, and the container's category and iterator stability for boost::graph_detail.
#pragma once

#include <boost/container/small_vector.hpp>
#include <boost/graph/adjacency_list.hpp>

namespace ringrt::detail {
struct small_edgesS {};
}  // namespace ringrt::detail

namespace boost {
template <class T>
struct container_gen<ringrt::detail::small_edgesS, T> {
  using type = boost::container::small_vector<T, 4>;
};
template <>
struct parallel_edge_traits<ringrt::detail::small_edgesS> {
  using type = allow_parallel_edge_tag;
};
namespace graph_detail {
template <class T>
struct container_traits<boost::container::small_vector<T, 4>> {
  using category = vector_tag;
  using iterator_stability = unstable_tag;
};
}  // namespace graph_detail
// Found by argument-dependent look-up from Boost.Graph's container_traits.hpp, which is included first.
namespace container {
template <class T>
graph_detail::vector_tag container_category(const small_vector<T, 4>&) {
  return graph_detail::vector_tag();
}
template <class T>
graph_detail::unstable_tag iterator_stability(const small_vector<T, 4>&) {
  return graph_detail::unstable_tag();
}
}  // namespace container
}  // namespace boost
