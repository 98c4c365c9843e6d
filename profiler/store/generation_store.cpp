// RunStore: generation runs (table `generations`, profiler/generation_data.h).
#include <fmt/format.h>

#include <stdexcept>

#include "profiler/store/connection.h"
#include "profiler/store/row_sql.h"
#include "profiler/store/run_store.h"

namespace hybrid::profiler {

int64_t RunStore::add_generation(int64_t run_id, const GenerationRow& row) {
  // Checked before the transaction: a refused row writes nothing, not even a heartbeat.
  if (std::string why = generation_row_error(row); !why.empty())
    throw std::invalid_argument(fmt::format("add_generation: run {}: {}", run_id, why));
  int64_t id = 0;
  write_to_run(run_id, [&](store::Connection& c) {
    auto st = c.prepare(store::insert_sql<GenerationRow>("INSERT", {"run_id"}));
    st.bind(run_id);
    store::bind_row(st, 2, row);
    st.run();
    id = c.last_insert_rowid();
  });
  return id;
}

std::vector<GenerationRow> RunStore::generations(std::optional<int64_t> run_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(store::select_sql<GenerationRow>(
      {"id", "run_id"}, "WHERE ?1 IS NULL OR run_id = ?1 ORDER BY run_id, id"));
  st.bind(run_id);
  std::vector<GenerationRow> out;
  while (st.step()) {
    GenerationRow r;
    r.id = st.i64(0);
    r.run_id = st.i64(1);
    read_stored(path(), fmt::format("generation {}", r.id), [&] { store::read_row(st, 2, r); });
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hybrid::profiler
