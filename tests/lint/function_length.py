#!/usr/bin/env python3
"""The function-length target: no function in the library's sources is longer than LIMIT lines,
except those recorded in tests/lint/function_length.txt, each at most as long as recorded there (a
ratchet: an entry may only shrink, and goes once its function is under the limit or gone).
A brace scanner, not a parser: comments, strings and preprocessor lines are skipped; a function is
a top-level (or namespace/extern "C"-level) brace block whose header holds a parenthesis and is not
a struct, class, union, enum, namespace or initializer.
usage: function_length.py SOURCE_DIR      exit 0 pass, 1 fail"""
import os
import re
import sys

LIMIT = 120
DIRS = ["common", "backends"]
EXTS = (".c", ".h", ".cu", ".cuh", ".hip", ".cpp")


def strip(text):
    """The source with comments, string and char literals blanked and preprocessor lines emptied,
    line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    res, cont = [], False
    for ln in lines:
        is_pp = cont or ln.lstrip().startswith("#")
        cont = is_pp and ln.rstrip().endswith("\\")
        res.append("" if is_pp else ln)
    return res


NOT_FN = re.compile(r"^\s*(template\s*<.*>\s*)?(typedef\s+)?(struct|class|union|enum|namespace)\b|=\s*$|extern\s*$")


def functions(path):
    """(name, first line, length) of each function in the file."""
    lines = strip(open(path, encoding="utf-8", errors="replace").read())
    found, depth, header, start, name, fn_depth = [], 0, "", 0, None, None
    for no, ln in enumerate(lines, 1):
        for ch in ln:
            if ch == "{":
                if fn_depth is None:
                    h = " ".join(header.split())
                    if "(" in h and not NOT_FN.search(h):
                        m = re.search(r"([A-Za-z_]\w*)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*(const\s*)?$", h)
                        m = m or re.search(r"([A-Za-z_]\w*)\s*\(", h)
                        name, start, fn_depth = (m.group(1) if m else "?"), header_line, depth
                depth += 1
                header = ""
            elif ch == "}":
                depth -= 1
                if fn_depth is not None and depth == fn_depth:
                    found.append((name, start, no - start + 1))
                    fn_depth = None
                header = ""
            elif ch == ";":
                header = ""
            else:
                if fn_depth is None:
                    if not header.strip() and not ch.isspace():
                        header_line = no
                    header += ch
        if fn_depth is None:
            header += " "
    return found


def main():
    src = sys.argv[1]
    recorded = {}
    listing = os.path.join(src, "tests", "lint", "function_length.txt")
    for ln in open(listing):
        ln = ln.split("#", 1)[0].split()
        if len(ln) == 3:
            recorded[(ln[0], ln[1])] = int(ln[2])
    seen, fail = {}, 0
    for d in DIRS:
        for root, _, files in os.walk(os.path.join(src, d)):
            for f in sorted(files):
                if not f.endswith(EXTS):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, src)
                for name, start, length in functions(path):
                    key = (rel, name)
                    seen[key] = max(seen.get(key, 0), length)
    for key, length in sorted(seen.items()):
        cap = recorded.get(key)
        if length > LIMIT and cap is None:
            print(f"FAIL {key[0]}: {key[1]} is {length} lines (limit {LIMIT}): split it into phases")
            fail = 1
        elif cap is not None and length > cap:
            print(f"FAIL {key[0]}: {key[1]} grew to {length} lines (recorded {cap})")
            fail = 1
    for key, cap in sorted(recorded.items()):
        length = seen.get(key)
        if length is None or length <= LIMIT:
            print(f"FAIL tests/lint/function_length.txt: {key[0]} {key[1]} is {'gone' if length is None else f'{length} lines'}: drop its entry")
            fail = 1
        elif length < cap:
            print(f"FAIL tests/lint/function_length.txt: {key[0]} {key[1]} shrank to {length} lines: record {length}")
            fail = 1
    over = sum(1 for k, v in seen.items() if v > LIMIT)
    print(f"{len(seen)} functions, {over} over {LIMIT} lines (all recorded)" if not fail else "function length: FAIL")
    return fail


if __name__ == "__main__":
    sys.exit(main())
