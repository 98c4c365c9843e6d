// The group label a communicator stamps into its records: "world" by default,
// the label given otherwise, on a split group's records as well as on its own;
// an empty label is refused naming what is wrong.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {
namespace {

TEST(CommGroupLabel, RecordsCarryTheIssuingCommunicatorsLabel) {
  auto world = make_single_communicator();
  std::vector<std::string> seen;
  auto keep = [&](const CommRecord& r) { seen.emplace_back(r.group); };
  world->set_observer(keep);
  EXPECT_EQ(world->group_label(), "world");
  float x = 1.0f;
  world->all_reduce(&x, 1, DType::f32, ReduceOp::sum);
  auto pp = world->split(0, 0);
  pp->set_group_label("pp");
  pp->set_observer(keep);
  pp->broadcast(&x, sizeof x, 0);
  world->barrier();
  EXPECT_EQ(seen, (std::vector<std::string>{"world", "pp", "world"}));
  EXPECT_THROW(pp->set_group_label(""), std::invalid_argument);
  EXPECT_EQ(pp->group_label(), "pp");  // unchanged by the refused label
}

}  // namespace
}  // namespace hybrid::engine::comm
