// runtime/cli/config_ranks.hpp: the devices, groups and reduce leaders of an mpirun job's config.
#include "runtime/cli/config_ranks.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "runtime/api/devices.hpp"

namespace ringrt {

void config_fail(const std::string& where, const std::string& key, const std::string& expected,
                 const std::string& got) {
  throw ConfigError(fmt::format("{}: key {}: expected {}, got {}", where, quote_value(key), expected, got));
}

std::vector<std::string> job_devices(const std::vector<std::string>& list, const std::vector<std::string>& where,
                                     const std::string& prefix, bool cpu, int64_t available) {
  const RankInfo& me = rank_info();
  auto rank_of = [](const std::string& e) { return split_rank(e) ? split_rank(e)->rank : -1; };
  std::vector<std::string> mine;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string& d = list[i];
    auto r = split_rank(d);
    auto local = r ? parse_device_name(r->local) : std::nullopt;
    int64_t of_rank =
        r ? std::count_if(list.begin(), list.end(), [&](const std::string& e) { return rank_of(e) == r->rank; }) : 0;
    if (!r || r->rank < 0 || r->rank >= me.ranks || !local || local->first + ":" != prefix ||
        local->second >= (cpu ? of_rank : available))
      config_fail(where[i], "devices.count",
                  fmt::format("devices of the job, rank<R>/{}i with R < {} (the ranks) and i < {}, every entry so",
                              prefix, me.ranks, cpu ? "that rank's number of entries" : "the GPUs present"),
                  "'" + d + "'");
    if (std::count(list.begin(), list.end(), d) > 1)
      config_fail(where[i], "devices.count", "each device once", "'" + d + "' twice");
    if (r->rank == me.rank) mine.emplace_back(r->local);
  }
  return mine;
}

std::vector<int> host_groups(const std::vector<std::string>& devices) {
  const RankInfo& me = rank_info();
  std::vector<int> groups;
  if (me.hosts < 2) return groups;
  for (const std::string& d : devices) {
    auto ranked = split_rank(d);
    groups.push_back(me.host_of_rank.at(static_cast<size_t>(ranked && ranked->rank >= 0 ? ranked->rank : 0)));
  }
  return groups;
}

std::vector<int> groups_in_every_rank(const std::vector<int>& groups, size_t ndevices) {
  int ranks = rank_info().ranks;
  if (ranks < 2 || groups.empty() || groups.size() * static_cast<size_t>(ranks) != ndevices) return groups;
  int stride = *std::max_element(groups.begin(), groups.end()) + 1;
  std::vector<int> out;
  for (int r = 0; r < ranks; ++r)
    for (int g : groups) out.push_back(r * stride + g);
  return out;
}

std::vector<std::string> leaders_on_every_rank(const std::vector<std::string>& leaders) {
  int ranks = rank_info().ranks;
  if (ranks < 2) return leaders;
  std::vector<std::string> out;
  for (const std::string& l : leaders) {
    if (l.find('/') != std::string::npos) {
      out.push_back(l);
      continue;
    }
    for (int r = 0; r < ranks; ++r) out.push_back(fmt::format("rank{}/{}", r, l));
  }
  return out;
}

}  // namespace ringrt
