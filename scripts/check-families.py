#!/usr/bin/env python3
"""The model interface's rule, checked: outside engine/model/ and kernels/, no
product source (base, engine, autotune, profiler, gui) names a model family's
type or function. They hold an engine::CausalLM (engine/model/causal_lm.h) and
build one with make_model; a family's name as data (a config value, a log
line) is not a name of its code, so comments and string literals are left out.
Exits 1 naming each offender."""
import re
import subprocess
import sys

sys.path.insert(0, __file__.rsplit('/', 1)[0])
from importlib import import_module  # noqa: E402

blank = import_module('check-sizes').blank_comments_and_strings

PRODUCT = ('base/', 'engine/', 'autotune/', 'profiler/', 'gui/')
ALLOWED = ('engine/model/', 'kernels/')
# A family's classes and functions: GPT2, Gpt2Weights, gpt2_from_llmc,
# LlamaBlock, llama_hf_config, ...
FAMILY = re.compile(r'\b(GPT2\w*|Gpt2\w*|gpt2_\w+|\w+_gpt2\w*|Llama\w*|llama_\w+|\w+_llama\w*)\b')


def main():
    files = subprocess.run(['git', 'ls-files', '*.h', '*.cpp', '*.cu'], capture_output=True,
                           text=True, check=True).stdout.split()
    bad = []
    for path in files:
        if not path.startswith(PRODUCT) or path.startswith(ALLOWED):
            continue
        code = blank(open(path, encoding='utf-8').read())
        for n, line in enumerate(code.split('\n'), 1):
            for m in FAMILY.finditer(line):
                bad.append(f'{path}:{n}: names {m.group(1)}')
    for b in bad:
        print(b)
    if bad:
        print('check-families: use engine::CausalLM and make_model outside engine/model/ '
              '(docs/models.md)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
