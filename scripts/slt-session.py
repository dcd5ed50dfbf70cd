#!/usr/bin/env python3
"""Makes an .slt file from a session script (one statement a line, run in order in ONE PostgreSQL 15
session), for records that need the statements before them (PREPARE then EXECUTE).
Usage: slt-session.py SCRIPT.sql OUT.slt "# header comment"  (PostgreSQL on 127.0.0.1, port $SLT_PG_PORT or 55462)."""
import os, subprocess, re, sys
port = os.environ.get("SLT_PG_PORT", "55462")
stmts = [l.rstrip(';\n') for l in open(sys.argv[1]) if l.strip()]
script = ""
for i, s in enumerate(stmts):
    script += f"\\echo ===D{i}\n{s} \\gdesc\n\\echo ===R{i}\n{s};\n"
script += "\\echo ===END\n"
# Run once with stderr interleaved
p = subprocess.run(f"psql -h 127.0.0.1 -p {port} -U postgres -X -q -A -t -F '\t' -P null=NULL -f - 2>&1", shell=True, input=script, capture_output=True, text=True)
text = p.stdout
parts = re.split(r"===([DR])(\d+)\n|===END\n", text)
# parts: [pre, kind, idx, body, kind, idx, body, ...]
desc, res = {}, {}
i = 1
while i + 2 < len(parts):
    kind, idx, body = parts[i], parts[i+1], parts[i+2]
    if kind is None: break
    (desc if kind == "D" else res)[int(idx)] = body or ""
    i += 3
integer = ("smallint", "integer", "bigint", "oid")
real = ("real", "double precision")
out = []
for i, s in enumerate(stmts):
    body = res[i]
    err = [l for l in body.split("\n") if "ERROR:" in l]
    if err:
        msg = err[0].split("ERROR:  ",1)[1]
        msg = re.sub(r"([][(){}.*+?^$|\\])", r"\\\1", msg)
        out.append(f"statement error {msg}\n{s}")
        continue
    d = desc[i]
    cols = [l.split("\t") for l in d.strip().split("\n") if "\t" in l and "ERROR" not in l]
    if not cols or "no result" in d:
        out.append(f"statement ok\n{s}")
        continue
    types = "".join("I" if t in integer else "R" if t in real or t.startswith("numeric") else "T" for _, t in cols)
    rows = [l for l in body.rstrip("\n").split("\n") if l != ""] if body.strip() else []
    rows = [l for l in rows if not l.startswith(("psql:", "DETAIL", "HINT", "LINE", "NOTICE"))]
    vals = "\n".join("\t".join("(empty)" if v == "" else v for v in row.split("\t")) for row in rows)
    out.append(f"query {types}\n{s}\n----\n{vals}".rstrip("\n"))
head = sys.argv[3]
open(sys.argv[2], "w").write(head + "\n\n" + "\n\n".join(out) + "\n")
