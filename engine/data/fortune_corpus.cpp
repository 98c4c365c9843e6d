#include "engine/data/fortune_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/data/data_file_error.h"

namespace hybrid::engine {

std::vector<std::string> fortune_documents(const std::string& text) {
  std::vector<std::string> docs;
  std::string current;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    if (line == "%") {
      if (!current.empty()) docs.push_back(std::move(current));
      current.clear();
    } else {
      current.append(line);
      if (!last) current += '\n';
    }
    at = end + 1;
  }
  if (!current.empty()) docs.push_back(std::move(current));
  return docs;
}

std::vector<FortuneFile> read_fortune_files(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (it->is_symlink() || !it->is_regular_file() || p.extension() == ".dat") continue;
      paths.push_back(p.string());
    }
    if (ec) throw DataFileError(dir + ": cannot list the fortune files: " + ec.message());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<FortuneFile> files;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataFileError(path + ": cannot read");
    std::ostringstream text;
    text << in.rdbuf();
    FortuneFile f{path, text.str(), {}};
    f.documents = fortune_documents(f.text);
    files.push_back(std::move(f));
  }
  return files;
}

}  // namespace hybrid::engine
