// The config's device choices as types: hybrid.device and the ZeRO offload
// targets. Spelled in ds_config.json exactly as to_string() writes them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hybrid::engine {

// hybrid.device: "auto" | "cpu" | "cuda".
enum class Device : uint8_t { automatic, cpu, cuda };
inline constexpr std::array kDevices = {Device::automatic, Device::cpu, Device::cuda};

// zero_optimization.offload_optimizer.device / offload_param.device: "none" | "cpu" | "nvme".
enum class OffloadDevice : uint8_t { none, cpu, nvme };
inline constexpr std::array kOffloadDevices = {OffloadDevice::none, OffloadDevice::cpu,
                                               OffloadDevice::nvme};

std::string_view to_string(Device d);
std::string_view to_string(OffloadDevice d);

// nullopt for any other spelling (the config reader names the key in its error).
std::optional<Device> parse_device(std::string_view s);
std::optional<OffloadDevice> parse_offload_device(std::string_view s);

}  // namespace hybrid::engine
