#!/usr/bin/env python3
"""Reference encodings for tests/engine/sentencepiece_test.cpp.

Run once with the peers venv (pip's sentencepiece wheel, its own build of the
library, independent of Debian's libsentencepiece that hybrid links):

    /work/peers-venv/bin/python tests/engine/data/sentencepiece/make_reference.py \
        [--hybrid-data build/engine/hybrid-data]

With --hybrid-data, the two models (fortunes_unigram_1000.model,
fortunes_bpe_1000.model) are first trained again by `hybrid-data train-tokenizer`
on the fortune files below (Debian packages fortunes and fortunes-de), and a
third (PLAIN_MODEL) by sentencepiece's own trainer with its default settings
but no <s>, </s>, a smaller vocabulary and identity normalization (NFKC's
table would make the file 240 KB).
Then every document of those files (fortune's format: documents end at a line
"%") and a few crafted strings are encoded with sentencepiece, and
reference.json gets, per model: the token count of each document and a 64-bit
FNV-1a hash of each file's ids (each id as 4 little-endian bytes, documents in
order), plus the full ids of the crafted strings.
"""
import argparse
import json
import os
import subprocess
import sys

import sentencepiece

HERE = os.path.dirname(os.path.abspath(__file__))
FORTUNES = "/usr/share/games/fortunes"
CORPUS = ["science", "wisdom", "de/witze"]  # English, English, German (UTF-8)
MODELS = {"unigram": "fortunes_unigram_1000.model", "bpe": "fortunes_bpe_1000.model"}
# A model of the library's own trainer (not ours): no <s> and </s>, no byte fallback.
PLAIN_MODEL = "wisdom_unigram_400_no_bos_eos.model"

# Runs of whitespace, digits, emoji, CJK, special-token text, invalid UTF-8.
EXTRAS = [
    b"Hello </s> world",
    b"<s>text</s>",
    b"  two leading, three   inner,\ttab\t\tand\n\nnewlines  ",
    b" 1234567890 3.14159 2026-12-05 0x1F",
    "emoji 😀👍🏽 and CJK 日本語の文章, 中文".encode(),
    "Grüße aus Köln – „Anführungszeichen“ « » ß".encode(),
    b"",
    b" ",
    b"\n",
    b"a\xffb\xc3(c\xe2\x82",  # invalid UTF-8: a stray byte, a broken pair, a truncated triple
]


def fortune_documents(path):
    data = open(path, "rb").read()
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    docs, doc = [], b""
    for i, line in enumerate(lines):
        ended = i + 1 < len(lines) or data.endswith(b"\n")
        if line == b"%":
            if doc:
                docs.append(doc)
            doc = b""
        else:
            doc += line + (b"\n" if ended else b"")
    if doc:
        docs.append(doc)
    return docs


def fnv1a64(ids, h=0xCBF29CE484222325):
    for i in ids:
        for b in (i & 0xFFFFFFFF).to_bytes(4, "little"):
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def train(hybrid_data):
    files = [os.path.join(FORTUNES, f) for f in CORPUS]
    for kind, name in MODELS.items():
        subprocess.run([hybrid_data, "train-tokenizer", "--type", kind, "--vocab", "1000",
                        "--threads", "2", "--out", os.path.join(HERE, name)] + files, check=True)
        os.remove(os.path.join(HERE, name.replace(".model", ".vocab")))
    prefix = os.path.join(HERE, PLAIN_MODEL[: -len(".model")])
    sentencepiece.SentencePieceTrainer.train(
        input=os.path.join(FORTUNES, "wisdom"), model_prefix=prefix, model_type="unigram",
        vocab_size=400, bos_id=-1, eos_id=-1, normalization_rule_name="identity", num_threads=2, minloglevel=2)
    os.remove(prefix + ".vocab")


def llama_tokenizer_reference(model):
    """Hugging Face's (slow) LlamaTokenizer on special-token text, for docs/text.md."""
    try:
        import transformers
        from transformers import LlamaTokenizer
    except ImportError:
        return None
    tok = LlamaTokenizer(vocab_file=model, legacy=True)
    text = "Hello </s> world"
    return {"transformers": transformers.__version__, "text": text,
            "ids": tok.encode(text, add_special_tokens=False)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hybrid-data", help="retrain the models with this hybrid-data binary")
    args = ap.parse_args()
    if args.hybrid_data:
        train(args.hybrid_data)
    out = {"sentencepiece": sentencepiece.__version__, "corpus": CORPUS, "models": {}}
    for name in list(MODELS.values()) + [PLAIN_MODEL]:
        sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(HERE, name))
        files = []
        for f in CORPUS:
            docs = fortune_documents(os.path.join(FORTUNES, f))
            counts, h = [], 0xCBF29CE484222325
            for d in docs:
                ids = sp.encode(d.decode("utf-8"))
                counts.append(len(ids))
                h = fnv1a64(ids, h)
            files.append({"file": f, "counts": counts, "fnv1a64": f"{h:016x}"})
        extras = [{"hex": e.hex(), "ids": sp.encode(e)} for e in EXTRAS]
        out["models"][name] = {"vocab_size": sp.get_piece_size(), "files": files, "extras": extras}
    out["llama_tokenizer"] = llama_tokenizer_reference(os.path.join(HERE, MODELS["unigram"]))
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"sentencepiece {sentencepiece.__version__}: wrote reference.json", file=sys.stderr)


if __name__ == "__main__":
    main()
