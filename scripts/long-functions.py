#!/usr/bin/env python3
"""Lists Rust functions longer than a threshold, and files longer than another.

    scripts/long-functions.py [--max-lines 120] [--max-file-lines 1200] crates/sql/src ...

For every `fn` item in the .rs files under the given paths, counts the lines of its body
from the line of `fn` to the line of the brace that closes the body (found by matching
braces, skipping strings, character literals and comments), and prints
`file:line name length` for each one over `--max-lines`; likewise `file lines` for each file
over `--max-file-lines`. Exits 1 if one of them is not in ALLOWED below (each entry says why
it is kept), else 0. ARCHITECTURE.md ("Size limits") points here.

Why a script: neither rustc nor clippy (its too_many_lines lint counts code lines only and
is off by default) gives a workspace-wide list with reasons kept beside it, and this reads
source text only, so it runs anywhere Python does.
"""

import argparse
import os
import re
import sys

# (path suffix, function name) -> why it stays longer than the limit.
ALLOWED = {}

# path suffix -> why the file stays longer than the limit.
ALLOWED_FILES = {}

FN_START = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def strip_code(text):
    """The text with comments, strings and character literals blanked (newlines kept), so
    that braces in them do not count."""
    out = []
    i = 0
    length = len(text)
    while i < length:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = length if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            depth = 0
            start = i
            while i < length:
                if text.startswith("/*", i):
                    depth += 1
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    i += 2
                    if depth == 0:
                        break
                else:
                    i += 1
            out.append(re.sub(r"[^\n]", " ", text[start:i]))
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not _ident_before(text, i):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            close = '"' + hashes
            end = text.find(close, i + 2 + len(hashes))
            end = length if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == '"':
            start = i
            i += 1
            while i < length and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append(re.sub(r"[^\n]", " ", text[start:i]))
        elif c == "'":
            # A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            literal = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if literal:
                out.append(" " * len(literal.group(0)))
                i += len(literal.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ident_before(text, i):
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def functions(path):
    """Yields (line, name, length in lines) of each fn with a body in the file."""
    with open(path, encoding="utf-8") as handle:
        code = strip_code(handle.read())
    for match in FN_START.finditer(code):
        # The body starts at the first `{` after the signature, unless a `;` comes first
        # (a declaration without a body, in a trait or an extern block).
        position = match.end()
        depth_parens = 0
        while position < len(code):
            c = code[position]
            if c in "(<[":
                depth_parens += 1
            elif c in ")>]":
                depth_parens -= 1
            elif c == ";" and depth_parens <= 0:
                position = -1
                break
            elif c == "{" and depth_parens <= 0:
                break
            position += 1
        if position < 0 or position >= len(code):
            continue
        depth = 0
        end = position
        while end < len(code):
            if code[end] == "{":
                depth += 1
            elif code[end] == "}":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        first = code.count("\n", 0, match.start()) + 1
        last = code.count("\n", 0, end) + 1
        yield first, match.group(1), last - first + 1


def rust_files(paths):
    for root in paths:
        if os.path.isfile(root):
            yield root
            continue
        for directory, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith(".rs"):
                    yield os.path.join(directory, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-lines", type=int, default=120)
    parser.add_argument("--max-file-lines", type=int, default=1200)
    parser.add_argument("paths", nargs="+")
    arguments = parser.parse_args()
    failed = False
    for path in sorted(rust_files(arguments.paths)):
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().count("\n")
        if lines > arguments.max_file_lines:
            kept = any(path.endswith(suffix) for suffix in ALLOWED_FILES)
            print(f"{path} {lines}{' (allowed)' if kept else ''}")
            failed |= not kept
        for line, name, length in functions(path):
            if length > arguments.max_lines:
                kept = any(path.endswith(suffix) and name == fn for (suffix, fn) in ALLOWED)
                print(f"{path}:{line} {name} {length}{' (allowed)' if kept else ''}")
                failed |= not kept
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
