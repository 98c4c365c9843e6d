#include "engine/comm/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace hybrid::engine::comm {

namespace {

void check_rank(const Placement& p, int rank) {
  if (rank < 0 || size_t(rank) >= p.host_of_rank.size())
    throw std::out_of_range(
        fmt::format("placement: rank {} of {} named ranks", rank, p.host_of_rank.size()));
}

// "0-3", "0,2", "0-1,4": consecutive ranks as ranges.
std::string ranges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

bool Placement::same_machine(int a, int b) const {
  if (machine_of_rank.empty()) return true;
  if (a < 0 || b < 0 || size_t(a) >= machine_of_rank.size() || size_t(b) >= machine_of_rank.size())
    throw std::out_of_range(fmt::format("placement: ranks {} and {} of {} with a machine", a, b,
                                        machine_of_rank.size()));
  return machine_of_rank[size_t(a)] == machine_of_rank[size_t(b)];
}

bool Placement::same_host(int a, int b) const {
  if (host_of_rank.empty()) return true;
  check_rank(*this, a);
  check_rank(*this, b);
  return host_of_rank[size_t(a)] == host_of_rank[size_t(b)];
}

int Placement::hosts() const {
  const std::set<std::string> distinct(host_of_rank.begin(), host_of_rank.end());
  return std::max<int>(1, int(distinct.size()));
}

int Placement::local_rank(int rank) const {
  if (host_of_rank.empty()) return 0;
  check_rank(*this, rank);
  const auto& host = host_of_rank[size_t(rank)];
  return int(std::count(host_of_rank.begin(), host_of_rank.begin() + rank, host));
}

int Placement::local_size(int rank) const {
  if (host_of_rank.empty()) return 1;
  check_rank(*this, rank);
  return int(std::count(host_of_rank.begin(), host_of_rank.end(), host_of_rank[size_t(rank)]));
}

Placement Placement::of_ranks(const std::vector<int>& ranks) const {
  Placement p;
  for (int r : ranks) {
    if (!host_of_rank.empty()) {
      check_rank(*this, r);
      p.host_of_rank.push_back(host_of_rank[size_t(r)]);
    }
    if (machine_of_rank.empty()) continue;
    if (r < 0 || size_t(r) >= machine_of_rank.size())
      throw std::out_of_range(
          fmt::format("placement: rank {} of {} with a machine", r, machine_of_rank.size()));
    p.machine_of_rank.push_back(machine_of_rank[size_t(r)]);
  }
  return p;
}

std::string Placement::describe() const {
  std::vector<std::string> order;
  for (const auto& h : host_of_rank)
    if (std::find(order.begin(), order.end(), h) == order.end()) order.push_back(h);
  std::string out = fmt::format("{} host{}:", order.size(), order.size() == 1 ? "" : "s");
  for (size_t k = 0; k < order.size(); ++k) {
    std::vector<int> ranks;
    for (size_t r = 0; r < host_of_rank.size(); ++r)
      if (host_of_rank[r] == order[k]) ranks.push_back(int(r));
    out += fmt::format("{} {} rank{} {}", k ? "," : "", order[k], ranks.size() == 1 ? "" : "s",
                       ranges(ranks));
  }
  return out;
}

}  // namespace hybrid::engine::comm
