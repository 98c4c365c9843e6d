#include "engine/config/devices.h"

namespace hybrid::engine {

namespace {

template <class E, size_t N>
std::optional<E> parse_among(std::string_view s, const std::array<E, N>& values) {
  for (E e : values)
    if (to_string(e) == s) return e;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Device d) {
  switch (d) {
    case Device::automatic:
      return "auto";
    case Device::cpu:
      return "cpu";
    case Device::cuda:
      return "cuda";
  }
  return "auto";
}

std::string_view to_string(OffloadDevice d) {
  switch (d) {
    case OffloadDevice::none:
      return "none";
    case OffloadDevice::cpu:
      return "cpu";
    case OffloadDevice::nvme:
      return "nvme";
  }
  return "none";
}

std::optional<Device> parse_device(std::string_view s) { return parse_among(s, kDevices); }

std::optional<OffloadDevice> parse_offload_device(std::string_view s) {
  return parse_among(s, kOffloadDevices);
}

}  // namespace hybrid::engine
