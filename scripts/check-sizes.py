#!/usr/bin/env python3
"""The size rules of STYLE.md, checked: outside tests/, no source file over 400
lines and no function body over 60. Functions are found by brace depth after
comments and string literals are blanked: a '{' at code depth 0 that does not
open a namespace, class, struct, enum or union opens a function (or a lambda or
initializer at file scope, which the rule covers too). Exits 1 naming each
offender."""
import re
import subprocess
import sys

MAX_FILE, MAX_FUNCTION = 400, 60
SCOPE = re.compile(r'\b(namespace|class|struct|enum|union)\b|extern\s*""')


def blank_comments_and_strings(src):
    keep_lines = lambda m: '""' + '\n' * m.group(0).count('\n')
    src = re.sub(r'R"(\w*)\((.*?)\)\1"', keep_lines, src, flags=re.S)
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src, flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", src)


def long_functions(path, src):
    stack, line, head = [], 1, ''  # stack: (kind, first line)
    for ch in blank_comments_and_strings(src):
        if ch == '\n':
            line += 1
            head += ' '
            continue
        head += ch
        if ch == '{':
            in_function = any(kind == 'function' for kind, _ in stack)
            kind = 'scope' if SCOPE.search(head) else ('inner' if in_function else 'function')
            stack.append((kind, line))
            head = ''
        elif ch == '}' and stack:
            kind, first = stack.pop()
            if kind == 'function' and line - first + 1 > MAX_FUNCTION:
                yield f'{path}:{first}: function of {line - first + 1} lines (at most {MAX_FUNCTION})'
            head = ''
        elif ch == ';':
            head = ''


def main():
    files = subprocess.check_output(['git', 'ls-files', '*.cpp', '*.h', '*.cu', '*.cuh'],
                                    text=True).split()
    problems = []
    for path in files:
        if path.startswith('tests/'):
            continue
        src = open(path, encoding='utf-8').read()
        lines = src.count('\n')
        if lines > MAX_FILE:
            problems.append(f'{path}: {lines} lines (at most {MAX_FILE})')
        problems.extend(long_functions(path, src))
    for p in problems:
        print(f'check-sizes: {p}')
    if problems:
        return 1
    print(f'check-sizes: {len(files)} files, none over {MAX_FILE} lines, no function over {MAX_FUNCTION}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
