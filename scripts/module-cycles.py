#!/usr/bin/env python3
"""Finds import cycles between the modules of a Rust crate.

    scripts/module-cycles.py crates/sql [crates/engine ...]

A module is a file (`src/bind/expr.rs`) or a folder module (`src/bind/mod.rs` with its files).
Every path that starts with `crate::`, `super::` or `self::` in a file is resolved against the
module tree read from the file system; a path from module A to module B adds an edge between
the two siblings, children of A's and B's lowest common ancestor, that contain them (a path
from `bind::expr` to `plan::node` is the edge bind -> plan). References between a module and
its own ancestors (a child using its parent's items, a parent re-exporting a child) are not
edges: they are how Rust folders are built. Each strongly connected group of siblings with
more than one member is a cycle; it is printed with one path that closes it, and the exit
status is 1. No cycle: prints one line per crate and exits 0.

Why a script: cargo has no module-level dependency view, and `cargo modules` is not in
the project's toolchain; this reads source text only, so it runs anywhere Python does.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_START = re.compile(r"\b(crate|super|self)((?:::" + IDENT + r")*)(::\{)?")


def module_tree(src):
    """Maps each module path (tuple of names) to the files that make it up."""
    files = {}
    for directory, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs"):
                continue
            relative = os.path.relpath(os.path.join(directory, name), src)
            parts = relative[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            files.setdefault(tuple(parts), []).append(os.path.join(directory, name))
    return files


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text


def brace_group(text, start):
    """The text inside the brace that opens at `start`, and the index after its close."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : index], index + 1
    return text[start + 1 :], len(text)


def split_top_level(group):
    items, depth, current = [], 0, ""
    for character in group:
        if character == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += character == "{"
        depth -= character == "}"
        current += character
    items.append(current)
    return [item.strip() for item in items if item.strip()]


def expand(prefix, tail):
    """Every full path named by `prefix::tail`, where tail may hold nested groups."""
    match = re.match(r"((?:" + IDENT + r"::)*)\{", tail)
    if match:
        inner, _ = brace_group(tail, len(match.group(1)))
        base = prefix + [part for part in match.group(1).split("::") if part]
        paths = []
        for item in split_top_level(inner):
            paths.extend(expand(base, item))
        return paths
    names = re.match(r"(?:" + IDENT + r")(?:::" + IDENT + r")*", tail)
    return [prefix + (names.group(0).split("::") if names else [])]


def referenced_paths(text):
    for match in PATH_START.finditer(text):
        root = [match.group(1)] + [part for part in match.group(2).split("::") if part]
        if match.group(3):
            inner, _ = brace_group(text, match.end() - 1)
            for item in split_top_level(inner):
                yield from expand(root, item)
        else:
            yield root


def resolve(module, path, modules):
    """The deepest module named by `path` written inside `module`, or None."""
    if path[0] == "crate":
        base, rest = (), path[1:]
    else:
        base, rest = module, path
        while rest and rest[0] in ("self", "super"):
            if rest[0] == "super":
                if not base:
                    return None
                base = base[:-1]
            rest = rest[1:]
    target = tuple(base)
    for name in rest:
        if target + (name,) in modules:
            target = target + (name,)
        else:
            break
    return target


def sibling_edge(source, target):
    common = 0
    while common < min(len(source), len(target)) and source[common] == target[common]:
        common += 1
    if common == len(source) or common == len(target):
        return None  # one is the other's ancestor
    return source[: common + 1], target[: common + 1]


def strongly_connected(graph):
    index, low, stack, on_stack, groups, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            groups.append(group)

    sys.setrecursionlimit(10000)
    for node in list(graph):
        if node not in index:
            visit(node)
    return groups


def check(crate):
    src = os.path.join(crate, "src")
    modules = module_tree(src)
    graph, witness = {}, {}
    for module, paths in modules.items():
        for file in paths:
            with open(file, encoding="utf-8") as handle:
                text = strip_comments_and_strings(handle.read())
            for path in referenced_paths(text):
                target = resolve(module, path, modules)
                if target is None:
                    continue
                edge = sibling_edge(module, target)
                if edge is None:
                    continue
                graph.setdefault(edge[0], set()).add(edge[1])
                witness.setdefault(edge, f"{file}: {'::'.join(path)}")
    cycles = [group for group in strongly_connected(graph) if len(group) > 1]
    for group in cycles:
        names = sorted("::".join(member) for member in group)
        print(f"{crate}: cycle between {', '.join(names)}")
        members = set(group)
        for (source, target), where in sorted(witness.items()):
            if source in members and target in members:
                print(f"    {'::'.join(source)} -> {'::'.join(target)}  ({where})")
    if not cycles:
        print(f"{crate}: no module cycle ({len(modules)} modules)")
    return not cycles


def main():
    crates = sys.argv[1:]
    if not crates:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    results = [check(crate) for crate in crates]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
