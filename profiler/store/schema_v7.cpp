#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v7: predictions past the measured world. Each bandwidth sample keeps the
// ranks of the collective that measured it (a probe across hosts runs fewer
// ranks than its one-host launch), and a probe the ranks that shared the host
// while its GEMM rate was measured (0 reads as the probe's world_size) and
// that host's logical CPUs (0: unknown), so oversubscription can be costed.
const char* const kSchemaV7 = R"sql(
ALTER TABLE probe_bandwidth ADD COLUMN ranks INTEGER NOT NULL DEFAULT 0 CHECK (ranks >= 0);
ALTER TABLE probes ADD COLUMN gemm_ranks INTEGER NOT NULL DEFAULT 0 CHECK (gemm_ranks >= 0);
ALTER TABLE probes ADD COLUMN host_cpus INTEGER NOT NULL DEFAULT 0 CHECK (host_cpus >= 0);
)sql";

}  // namespace hybrid::profiler::store
