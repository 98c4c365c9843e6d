#!/usr/bin/env python3
"""The fortune cookies of a folder as JSONL: one {"text": ...} line a cookie.

    fortunes_to_jsonl.py [FOLDER] > fortunes.jsonl   (default /usr/share/games/fortunes)

A fortune file holds its cookies between lines that are only "%"; the files are
the folder's regular files (not its subfolders, links or .dat indexes), in name
order, as engine/data/fortune_corpus.h reads them. Empty cookies are dropped.
"""
import json
import os
import sys


def cookies(text):
    cookie = []
    for line in text.splitlines(keepends=True):
        if line.rstrip("\r\n") == "%":
            yield "".join(cookie)
            cookie = []
        else:
            cookie.append(line)
    yield "".join(cookie)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/games/fortunes"
    names = sorted(
        n for n in os.listdir(folder)
        if not n.endswith(".dat")
        and not os.path.islink(os.path.join(folder, n))
        and os.path.isfile(os.path.join(folder, n)))
    if not names:
        sys.exit(f"fortunes_to_jsonl: no fortune files in {folder} (scripts/setup.sh installs them)")
    written = 0
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for cookie in cookies(f.read()):
                if cookie.strip():
                    print(json.dumps({"text": cookie}, ensure_ascii=False))
                    written += 1
    print(f"fortunes_to_jsonl: {written} cookies from {len(names)} files of {folder}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
