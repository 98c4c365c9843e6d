// Prompts for generation from the command line: "1,2,3" (--prompt-tokens), text
// (--prompt), and a JSON-lines file of {"tokens": [...]} or {"text": "..."}
// objects (--prompts). Text is encoded by the model's tokenizer, after its
// beginning-of-sequence token where it has one (as Hugging Face's tokenizers
// prepare Llama's prompts; GPT-2's has none). Every refusal names the file and line.
#pragma once

#include <string>
#include <vector>

#include "engine/data/tokenizer/tokenizer.h"

namespace hybrid::engine {

// "1,2,3" → {1, 2, 3}; std::invalid_argument naming the item that is not an integer.
std::vector<int> parse_token_list(const std::string& text);

// A text prompt's ids: the beginning-of-sequence token, if any, then the text's.
std::vector<int> encode_prompt(const Tokenizer& tokenizer, const std::string& text);

// One prompt a non-blank line; DataFileError "PATH:LINE: why" for a line that is
// not an object with a "tokens" array of integers or a "text" string, a "text"
// line without a tokenizer (nullptr), or a file that cannot be read.
std::vector<std::vector<int>> read_prompts_file(const std::string& path,
                                                const Tokenizer* tokenizer = nullptr);

}  // namespace hybrid::engine
