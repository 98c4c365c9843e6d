#include "profiler/comm_record.h"

#include <stdexcept>
#include <string>

namespace hybrid::profiler {

// The names DeepSpeed's comms logger prints, so summaries read the same.
std::string_view collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::barrier:
      return "barrier";
    case CollectiveKind::send:
      return "send";
    case CollectiveKind::recv:
      return "recv";
    case CollectiveKind::all_to_all:
      return "all_to_all";
  }
  return "?";
}

std::string_view link_name(LinkClass l) {
  return l == LinkClass::inter_host ? "inter_host" : "intra_host";
}

LinkClass parse_link(std::string_view name) {
  if (name == "intra_host") return LinkClass::intra_host;
  if (name == "inter_host") return LinkClass::inter_host;
  throw std::invalid_argument("link class must be intra_host or inter_host, got '" +
                              std::string(name) + "'");
}

std::string_view io_name(IoKind k) {
  switch (k) {
    case IoKind::nvme_read:
      return "nvme_read";
    case IoKind::nvme_write:
      return "nvme_write";
  }
  return "?";
}

}  // namespace hybrid::profiler
