#include "engine/data/text_documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/data/data_file_error.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

namespace {

bool is_jsonl(const std::string& path) { return fs::path(path).extension() == ".jsonl"; }

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

void add_input(const std::string& input, std::vector<std::string>& files) {
  std::error_code ec;
  const auto status = fs::status(input, ec);
  if (ec || !fs::exists(status))
    throw DataFileError(fmt::format("{}: no such file or folder", input));
  if (fs::is_regular_file(status)) {
    files.push_back(input);
    return;
  }
  if (!fs::is_directory(status))
    throw DataFileError(fmt::format("{}: neither a file nor a folder", input));
  std::vector<std::string> found;
  for (auto it = fs::recursive_directory_iterator(input, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (hidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) found.push_back(it->path().string());
  }
  if (ec) throw DataFileError(fmt::format("{}: cannot list the folder: {}", input, ec.message()));
  std::sort(found.begin(), found.end());  // byte order, whatever the locale
  files.insert(files.end(), found.begin(), found.end());
}

std::string text_of_line(const std::string& line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("not a JSON object");
  const auto it = j.find("text");
  if (it == j.end()) throw std::invalid_argument("no \"text\" field");
  if (!it->is_string()) throw std::invalid_argument("\"text\" is not a string");
  return it->get<std::string>();
}

}  // namespace

TextDocuments::TextDocuments(const std::vector<std::string>& inputs) {
  for (const auto& input : inputs) add_input(input, files_);
  if (files_.empty()) throw DataFileError("the corpus holds no file (empty folders only)");
  for (const auto& f : files_) total_bytes_ += fs::file_size(f);
}

void TextDocuments::open_next_file() {
  file_.close();
  path_ = files_[next_file_++];
  line_ = 0;
  file_.open(path_, std::ios::binary);
  if (!file_) throw DataFileError(fmt::format("{}: cannot read the file", path_));
}

bool TextDocuments::next_document(std::string& doc) {
  for (;;) {
    if (file_.is_open() && is_jsonl(path_)) {
      std::string line;
      while (std::getline(file_, line)) {
        ++line_;
        bytes_read_ += line.size() + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
          doc = text_of_line(line);
        } catch (const std::invalid_argument& e) {
          throw DataFileError(fmt::format("{}:{}: {}", path_, line_, e.what()));
        }
        return true;
      }
      if (file_.bad()) throw DataFileError(fmt::format("{}: read error", path_));
      file_.close();
    }
    if (next_file_ == files_.size()) return false;
    open_next_file();
    if (!is_jsonl(path_)) {  // a plain text file: the whole file is one document
      doc.assign(std::istreambuf_iterator<char>(file_), std::istreambuf_iterator<char>());
      if (file_.bad()) throw DataFileError(fmt::format("{}: read error", path_));
      bytes_read_ += doc.size();
      file_.close();
      return true;
    }
  }
}

bool TextDocuments::next_batch(std::vector<std::string>& out, uint64_t max_bytes) {
  uint64_t bytes = 0;
  bool any = false;
  std::string doc;
  while (bytes < max_bytes && next_document(doc)) {
    bytes += doc.size();
    out.push_back(std::move(doc));
    any = true;
  }
  return any;
}

}  // namespace hybrid::engine
