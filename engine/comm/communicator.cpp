#include "engine/comm/communicator.h"

#include <fmt/format.h>

#include <stdexcept>

namespace hybrid::engine::comm {

std::unique_ptr<Communicator> Communicator::split(int, int) {
  throw std::logic_error(fmt::format("{}: split into groups is not implemented", name()));
}

}  // namespace hybrid::engine::comm
