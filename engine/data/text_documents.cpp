#include "engine/data/text_documents.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/json_read.h"
#include "base/text.h"
#include "engine/data/data_file_error.h"

namespace hybrid::engine {

namespace {

namespace fs = std::filesystem;

void check_readable_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw DataFileError(fmt::format("{}: cannot read: no such file", path));
  if (fs::is_directory(st))
    throw DataFileError(fmt::format("{}: is a directory, not a file", path));
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

TextDocumentReader::TextDocumentReader(std::vector<std::string> files) : files_(std::move(files)) {}

bool TextDocumentReader::next(std::string& text) {
  for (;;) {
    if (!current_.empty()) {
      if (next_jsonl_document(text)) return true;
      current_.clear();
      jsonl_ = std::ifstream();
    }
    if (next_file_ == files_.size()) return false;
    const std::string& path = files_[next_file_++];
    if (!is_jsonl_file(path)) {
      text = read_whole_file(path);
      ++documents_;
      return true;
    }
    check_readable_file(path);
    jsonl_.open(path, std::ios::binary);
    if (!jsonl_)
      throw DataFileError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    current_ = path;
    line_number_ = 0;
  }
}

bool TextDocumentReader::next_jsonl_document(std::string& text) {
  std::string line;
  while (std::getline(jsonl_, line)) {
    ++line_number_;
    if (base::trim(line).empty()) continue;
    const std::string where = fmt::format("{}:{}", current_, line_number_);
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
    text = field->get<std::string>();
    ++documents_;
    return true;
  }
  if (jsonl_.bad()) throw DataFileError(fmt::format("{}: read failed", current_));
  return false;
}

}  // namespace hybrid::engine
