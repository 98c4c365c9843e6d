// One description per memory layout (engine/memory/layout.h): the layout
// itself, its allocation (LayoutBuffers) and the module activation bytes read
// from it. That the engine allocates exactly its layouts, and the memory model
// predicts exactly, is tests/engine/memory_test.cpp's MemoryModel.
#include <gtest/gtest.h>

#include <stdexcept>

#include "engine/engine.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::MemCategory;
using engine::MemoryLayout;
using engine::Residency;

TEST(MemoryLayout, SumsResidentEntriesPerCategory) {
  MemoryLayout l;
  EXPECT_EQ(l.add("a", 10, 4, MemCategory::grads), 0u);
  EXPECT_EQ(l.add("b", 3, 2, MemCategory::grads, true), 1u);
  l.add("c", 7, 1, MemCategory::comm);
  l.add("d", 100, 2, MemCategory::params, false, Residency::on_demand);
  const auto b = l.resident_bytes();
  EXPECT_EQ(b[size_t(MemCategory::grads)], 46u);
  EXPECT_EQ(b[size_t(MemCategory::comm)], 7u);
  EXPECT_EQ(b[size_t(MemCategory::params)], 0u) << "on-demand entries are not resident";
  EXPECT_EQ(l.resident_total(), 53u);
  EXPECT_EQ(l.index_of("c"), 2u);
  EXPECT_FALSE(l.find("e"));
  try {
    (void)l.index_of("e");
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("e"), std::string::npos) << e.what();
  }
}

TEST(MemoryLayout, BuffersAllocateExactlyTheResidentEntries) {
  auto backend = kernels::make_cpu_backend();
  engine::TrackingAllocator alloc(*backend, 0);
  MemoryLayout l;
  l.add("zeroed", 8, 4, MemCategory::grads, true);
  l.add("empty", 0, 4, MemCategory::grads);
  l.add("bucket", 5, 2, MemCategory::comm);
  const size_t gathered = l.add("gathered", 6, 2, MemCategory::params, false, Residency::on_demand);
  {
    engine::LayoutBuffers bufs(alloc, l);
    auto s = alloc.stats();
    for (int c = 0; c < engine::kMemCategoryCount; ++c)
      EXPECT_EQ(s.current[size_t(c)], l.resident_bytes()[size_t(c)])
          << engine::mem_category_name(MemCategory(c));
    const auto z = bufs.view("zeroed");
    ASSERT_EQ(z.bytes(), 32u);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(z.as<float>()[i], 0.0f);
    EXPECT_TRUE(bufs.view("empty").empty());
    EXPECT_TRUE(bufs.view_if_present("absent").empty());
    EXPECT_THROW((void)bufs.view("absent"), std::out_of_range);
    EXPECT_THROW((void)bufs.view(gathered), std::logic_error) << "on-demand memory is the caller's";
    EXPECT_THROW((void)bufs.allocate(0), std::logic_error) << "resident memory is allocated once";
    {
      const auto g = bufs.allocate(gathered);
      EXPECT_EQ(g.bytes(), 12u);
      EXPECT_EQ(alloc.stats().current[size_t(MemCategory::params)], 12u);
    }
    EXPECT_EQ(alloc.stats().current[size_t(MemCategory::params)], 0u);
  }
  EXPECT_EQ(alloc.stats().total_current, 0u);
}

// Module::activation_bytes comes from the same activation layout: the model's
// total is what its modules keep for backward, i.e. the owned entries.
TEST(MemoryLayout, ModuleActivationBytesAreTheOwnedEntries) {
  const auto cfg = test::tiny_config({{"bf16", {{"enabled", true}}}});
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  const auto layout = e->model().activation_layout(
      cfg.train_micro_batch_size_per_gpu, cfg.model.seq_len, cfg.param_dtype(),
      e->backend().attention_saved_bytes(cfg.param_dtype(), cfg.train_micro_batch_size_per_gpu,
                                         cfg.model.seq_len, cfg.model.n_embd, cfg.model.n_head),
      {}, {}, 1);
  uint64_t owned = 0, block0 = 0;
  for (const auto& entry : layout.entries()) {
    if (!entry.owner.empty()) owned += entry.bytes();
    if (entry.owner.rfind("h.0", 0) == 0 && (entry.owner.size() == 3 || entry.owner[3] == '.'))
      block0 += entry.bytes();
  }
  EXPECT_EQ(e->model().activation_bytes(), owned);
  EXPECT_EQ(test::gpt2_of(*e).blocks[0]->activation_bytes(), block0);
  EXPECT_EQ(test::gpt2_of(*e).blocks[0]->attn_proj->activation_bytes(), 0u)
      << "writes the shared branch buffer";
}

}  // namespace
}  // namespace hybrid
