#include "engine/data/text_documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/json_read.h"
#include "base/text.h"
#include "engine/data/data_file_error.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

namespace {

void check_readable_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw DataFileError(fmt::format("{}: cannot read: no such file or folder", path));
  if (fs::is_directory(st))
    throw DataFileError(fmt::format("{}: is a directory, not a file", path));
}

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

void add_input(const std::string& input, std::vector<std::string>& files) {
  std::error_code ec;
  if (!fs::is_directory(input, ec)) {
    check_readable_file(input);
    files.push_back(input);
    return;
  }
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

// The "text" of one JSONL line; DataFileError naming `where` (file:line) otherwise.
std::string text_of_line(const std::string& line, const std::string& where) {
  nlohmann::json record;
  try {
    record = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw DataFileError(fmt::format("{}: not JSON: {}", where, base::json_error_text(e)));
  }
  if (!record.is_object())
    throw DataFileError(
        fmt::format("{}: a JSONL document must be an object with a \"text\" field, got {}", where,
                    base::describe_json(record)));
  const auto field = record.find("text");
  if (field == record.end())
    throw DataFileError(
        fmt::format("{}: no \"text\" field in {}", where, base::describe_json(record)));
  if (!field->is_string())
    throw DataFileError(
        fmt::format("{}: \"text\" must be a string, got {}", where, base::describe_json(*field)));
  return field->get<std::string>();
}

}  // namespace

std::string read_whole_file(const std::string& path) {
  check_readable_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataFileError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw DataFileError(fmt::format("{}: read failed", path));
  return std::move(content).str();
}

bool is_jsonl_file(const std::string& path) { return fs::path(path).extension() == ".jsonl"; }

TextDocuments::TextDocuments(const std::vector<std::string>& inputs) {
  for (const auto& input : inputs) add_input(input, files_);
  if (files_.empty()) throw DataFileError("the corpus holds no file (empty folders only)");
  std::error_code ec;
  for (const auto& f : files_) total_bytes_ += std::max<uintmax_t>(fs::file_size(f, ec), 0);
}

bool TextDocuments::next_jsonl_document(std::string& doc) {
  std::string line;
  while (std::getline(jsonl_, line)) {
    ++line_;
    bytes_read_ += line.size() + 1;
    if (base::trim(line).empty()) continue;
    doc = text_of_line(line, fmt::format("{}:{}", jsonl_path_, line_));
    return true;
  }
  if (jsonl_.bad()) throw DataFileError(fmt::format("{}: read failed", jsonl_path_));
  return false;
}

bool TextDocuments::next(std::string& doc) {
  for (;;) {
    if (jsonl_.is_open()) {
      if (next_jsonl_document(doc)) break;
      jsonl_.close();
    }
    if (next_file_ == files_.size()) return false;
    const std::string& path = files_[next_file_++];
    if (!is_jsonl_file(path)) {
      doc = read_whole_file(path);
      bytes_read_ += doc.size();
      break;
    }
    check_readable_file(path);
    jsonl_.open(path, std::ios::binary);
    if (!jsonl_)
      throw DataFileError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    jsonl_path_ = path;
    line_ = 0;
  }
  ++documents_;
  return true;
}

bool TextDocuments::next_batch(std::vector<std::string>& out, uint64_t max_bytes) {
  uint64_t bytes = 0;
  bool any = false;
  std::string doc;
  while (bytes < max_bytes && next(doc)) {
    bytes += doc.size();
    out.push_back(std::move(doc));
    any = true;
  }
  return any;
}

}  // namespace hybrid::engine
