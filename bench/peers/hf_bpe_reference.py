"""Reference data of tests/engine/byte_level_bpe_test.cpp: two byte-level BPE
tokenizers trained by Hugging Face tokenizers on the fortune cookies (Debian's
`fortunes` and `fortunes-de`), and their encodings of that corpus and of the
hand-written hard cases (hard_cases.json).

  /work/peers-venv/bin/python bench/peers/hf_bpe_reference.py tests/engine/data/tokenizer

Writes, into the folder given:
  gpt2_style.json    GPT-2's kind: ByteLevel pre-tokenizer (GPT-2's split pattern),
                     <|endoftext|>, plus added tokens with lstrip / rstrip /
                     single_word / normalized set and overlapping ones, to
                     exercise the added-token matcher;
  llama3_style.json  Llama 3's kind: Sequence[Split(Llama 3's pattern, Isolated),
                     ByteLevel(use_regex=false)], <|begin_of_text|>, <|end_of_text|>;
  bpe_reference.json for each corpus file its size and FNV-1a 64 hash, and per
                     tokenizer its documents' token count and the FNV-1a 64 hash
                     of their ids; full ids for the hard cases.
With --dump FILE (a corpus file's path), prints that file's documents' ids
instead (to find the document a failing test points at). With --fuzz-seeds,
writes two small tokenizers (300 tokens) into the folder given instead: the
seeds of fuzz/fuzz_tokenizer_json.cpp (fuzz/corpus/tokenizer_json).

Peers only (never run by the suite): tokenizers 0.15.2, the version that
transformers 4.36.2 brings. The corpus is read exactly as
engine/data/fortune_corpus.cpp reads it: regular files (no links, no .dat) in
/usr/share/games/fortunes and its de/ folder, sorted by path; documents are the
text between lines that hold only "%".
"""
import json
import os
import random
import struct
import sys

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS_DIRS = ["/usr/share/games/fortunes", "/usr/share/games/fortunes/de"]
VOCAB = 8000
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
RANDOM_PIECES = [" ", "  ", "\t", "\n", "\r\n", "\r", "a", "Z", "word", "é", "ß", "日本", "😀", "\u200d",
                 "\u0301", "1", "234", "'s", "'S", "'ll", "'", "!", "?!", "...", "-", "_", "\u00a0",
                 "\u0085", "\u3000", "\u2028", "٣", "½", "<|endoftext|>", "<mask>", "<sep>", "<sep>x",
                 "<rs>", "xyzzy", "Ωμ", "<|begin_of_text|>", "<|end_of_text|>", "<", "|"]
FNV_OFFSET, FNV_PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a64(data, h=FNV_OFFSET):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def corpus_files():
    files = []
    for d in CORPUS_DIRS:
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if os.path.islink(p) or not os.path.isfile(p) or name.endswith(".dat"):
                continue
            files.append(p)
    return sorted(files)


def documents(path):
    text = open(path, "rb").read().decode("utf-8")
    docs, cur = [], []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == "%":
            docs.append("".join(cur))
            cur = []
        else:
            cur.append(line if i == len(lines) - 1 else line + "\n")
    docs.append("".join(cur))
    return [d for d in docs if d]


def train(pre_tokenizer, specials, docs):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(docs, trainer)
    return tok


def ids_hash(encodings):
    h = FNV_OFFSET
    for ids in encodings:
        h = fnv1a64(struct.pack("<i", len(ids)), h)
        h = fnv1a64(struct.pack(f"<{len(ids)}i", *ids), h)
    return h


def write_fuzz_seeds(out):
    """fuzz/corpus/tokenizer_json/: the two kinds again, 300 tokens, on 50 documents."""
    docs = documents(corpus_files()[0])[:50]

    def small(pre, specials):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer, tok.decoder = pre, decoders.ByteLevel()
        tok.train_from_iterator(docs, trainers.BpeTrainer(
            vocab_size=300, special_tokens=specials, show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        return tok
    gpt2 = small(pre_tokenizers.ByteLevel(add_prefix_space=False), ["<|endoftext|>"])
    gpt2.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    gpt2.add_tokens([AddedToken("<sep>"), AddedToken("xyzzy", single_word=True)])
    gpt2.save(os.path.join(out, "gpt2_style.json"), pretty=False)
    llama3 = small(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        ["<|begin_of_text|>", "<|end_of_text|>"])
    llama3.save(os.path.join(out, "llama3_style.json"), pretty=False)


def main():
    out = sys.argv[1]
    if "--fuzz-seeds" in sys.argv:
        return write_fuzz_seeds(out)
    files = corpus_files()
    per_file = {p: documents(p) for p in files}
    all_docs = [d for p in files for d in per_file[p]]
    if "--dump" in sys.argv:
        path = sys.argv[sys.argv.index("--dump") + 1]
        for name in ("gpt2_style", "llama3_style"):
            tok = Tokenizer.from_file(os.path.join(out, name + ".json"))
            for i, d in enumerate(per_file[path]):
                print(name, i, json.dumps(d), tok.encode(d, add_special_tokens=False).ids)
        return

    gpt2 = train(pre_tokenizers.ByteLevel(add_prefix_space=False), ["<|endoftext|>"], all_docs)
    # RoBERTa's <mask> (lstrip), a non-special token (normalized) and a whole-word one.
    gpt2.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    gpt2.add_tokens([AddedToken("<sep>"), AddedToken("xyzzy", single_word=True)])
    # rstrip; leftmost-longest among overlapping tokens; a token of multi-byte characters.
    gpt2.add_special_tokens([AddedToken("<rs>", rstrip=True, special=True)])
    gpt2.add_tokens([AddedToken("<sep>x"), AddedToken("Ωμ", lstrip=True, rstrip=True)])
    llama3 = train(
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"], all_docs)
    # GPT-2's tokenizer with add_prefix_space (RoBERTa's setting), for the hard cases.
    spec = json.loads(gpt2.to_str())
    spec["pre_tokenizer"]["add_prefix_space"] = True
    gpt2_prefix = Tokenizer.from_str(json.dumps(spec))
    tokenizers_by_name = {"gpt2_style": gpt2, "llama3_style": llama3}
    for name, tok in tokenizers_by_name.items():
        tok.save(os.path.join(out, name + ".json"))

    ref = {"peer": f"tokenizers {tokenizers.__version__}",
           "packages": "fortunes 1:1.99.1-7.3, fortunes-de 0.35-1", "files": []}
    for p in files:
        data = open(p, "rb").read()
        entry = {"path": p, "bytes": len(data), "fnv1a64": f"{fnv1a64(data):016x}",
                 "documents": len(per_file[p])}
        for name, tok in tokenizers_by_name.items():
            enc = [e.ids for e in tok.encode_batch(per_file[p], add_special_tokens=False)]
            entry[name] = {"tokens": sum(map(len, enc)), "ids_fnv1a64": f"{ids_hash(enc):016x}"}
        ref["files"].append(entry)

    cases = json.load(open(os.path.join(out, "hard_cases.json"), encoding="utf-8"))
    # Long runs, too long to write by hand: PCRE2's JIT stack on whitespace, words
    # longer than the word cache keeps.
    cases["texts"] += [" " * 3000 + "end", "\n" * 1000 + "x  \t\n" * 100 + "   ",
                       "1234567890" * 100, "abc" * 300 + " " + "Größe" * 50]
    everyone = dict(tokenizers_by_name, gpt2_prefix_space=gpt2_prefix)
    ref["hard_cases"] = []
    for text in cases["texts"]:
        entry = {"text": text}
        for name, tok in everyone.items():
            ids = tok.encode(text, add_special_tokens=False).ids
            entry[name] = ids
            if len(text) >= 500:
                continue  # the long runs: their ids only
            entry[name + "_decoded"] = tok.decode(ids, skip_special_tokens=False)
            # Each id on its own: partial UTF-8 sequences decode to U+FFFD.
            entry[name + "_pieces"] = [tok.decode([i], skip_special_tokens=False) for i in ids]
        ref["hard_cases"].append(entry)
    # Random strings of the pieces where the two sides could differ, seeded.
    rng = random.Random(1234)
    ref["random"] = []
    for _ in range(300):
        text = "".join(rng.choice(RANDOM_PIECES) for _ in range(rng.randint(1, 24)))
        ref["random"].append({"text": text, **{name: tok.encode(text, add_special_tokens=False).ids
                                               for name, tok in tokenizers_by_name.items()}})
    ref["invalid_utf8"] = []
    for hexes in cases["invalid_utf8"]:
        text = bytes.fromhex(hexes).decode("utf-8", errors="replace")
        entry = {"hex": hexes, "replaced": text}
        for name, tok in tokenizers_by_name.items():
            entry[name] = tok.encode(text, add_special_tokens=False).ids
        ref["invalid_utf8"].append(entry)
    # One line per file and per case: small, and a regeneration diffs line by line.
    with open(os.path.join(out, "bpe_reference.json"), "w", encoding="utf-8") as f:
        f.write("{\n")
        for i, (key, value) in enumerate(ref.items()):
            f.write(f" {json.dumps(key)}: ")
            if isinstance(value, list):
                rows = [json.dumps(v, ensure_ascii=False) for v in value]
                f.write("[\n  " + ",\n  ".join(rows) + "\n ]")
            else:
                f.write(json.dumps(value, ensure_ascii=False))
            f.write(",\n" if i + 1 < len(ref) else "\n")
        f.write("}\n")
    total = sum(e["bytes"] for e in ref["files"])
    print(f"{len(files)} files, {len(all_docs)} documents, {total / 1e6:.2f} MB; "
          f"tokenizers {tokenizers.__version__}")


if __name__ == "__main__":
    main()
