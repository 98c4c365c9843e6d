#include "bench/tool_runs.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace hybrid::bench {

namespace fs = std::filesystem;

std::string build_tree_tool(const std::string& relative) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / ".." / relative).lexically_normal().string();
}

fs::path working_dir(const std::string& prefix, const std::string& keep) {
  const fs::path dir = keep.empty()
                           ? fs::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()))
                           : fs::path(keep);
  fs::create_directories(dir);
  return dir;
}

int run_logged(const std::string& cmd, const std::string& log) {
  const int status = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace hybrid::bench
