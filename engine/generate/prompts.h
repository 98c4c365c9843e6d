// Prompts for generation from the command line: "1,2,3" (--prompt-tokens) and
// a JSON-lines file of {"tokens": [...]} objects (--prompts). A {"text": ...}
// line needs a tokenizer, which hybrid does not have yet: it is refused by
// name. Every refusal names the file and line.
#pragma once

#include <string>
#include <vector>

namespace hybrid::engine {

// "1,2,3" → {1, 2, 3}; std::invalid_argument naming the item that is not an integer.
std::vector<int> parse_token_list(const std::string& text);

// One prompt a non-blank line; DataFileError "PATH:LINE: why" for a line that
// is not an object with a "tokens" array of integers, or a file that cannot be read.
std::vector<std::vector<int>> read_prompts_file(const std::string& path);

}  // namespace hybrid::engine
