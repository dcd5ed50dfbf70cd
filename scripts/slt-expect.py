#!/usr/bin/env python3
"""Makes an .slt file from records, with PostgreSQL 15's results as the expectations (tests/slt/README.md).
Input: a file of records separated by blank lines; each starts with 'statement ok',
'statement error', 'query rowsort' / 'query' (columns typed from PostgreSQL), or '#' comments."""
import os, re, subprocess, sys, psycopg

PORT = sys.argv[3] if len(sys.argv) > 3 else "55433"
conn = psycopg.connect(f"host=127.0.0.1 port={PORT} user=postgres dbname=postgres", autocommit=True)

session = []

def psql(sql):
    sql = "".join(s + ";\n" for s in session) + sql
    out = subprocess.run([os.environ.get("PSQL", "psql"), "-h", "127.0.0.1", "-p", PORT, "-U", "postgres", "-X", "-q", "-A", "-t",
                          "-F", "\t", "-P", "null=NULL", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         capture_output=True, text=True)
    return out

def letters(desc):
    s = ""
    for col in desc:
        oid = col.type_code
        s += "I" if oid in (20, 21, 23, 26) else "R" if oid in (700, 701, 1700) else "T"
    return s

def described_types(sql):
    script = "".join(s + ";\n" for s in session) + sql + " \\gdesc\n"
    r = subprocess.run([os.environ.get("PSQL", "psql"), "-h", "127.0.0.1", "-p", PORT, "-U", "postgres", "-X", "-q", "-A", "-t",
                        "-F", "\t", "-v", "ON_ERROR_STOP=1", "-f", "-"], input=script, capture_output=True, text=True)
    assert r.returncode == 0, (sql, r.stderr)
    names = [line.split("\t")[1] for line in r.stdout.strip().split("\n") if "\t" in line]
    integer = ("smallint", "integer", "bigint", "oid")
    real = ("real", "double precision")
    return "".join("I" if t in integer else "R" if t in real or t.startswith("numeric") else "T" for t in names)

blocks = open(sys.argv[1]).read().split("\n\n")
out = []
for block in blocks:
    block = block.strip("\n")
    if not block:
        continue
    lines = block.split("\n")
    # Comment lines, then `onlyif tierdb` (kept as written: PostgreSQL cannot answer it) or
    # `skipif tierdb` (PostgreSQL's answer is recorded under it), lead the record they mark.
    prefix = []
    while lines and lines[0].startswith("#"):
        prefix.append(lines.pop(0))
    if lines and lines[0].startswith("onlyif"):
        out.append(block)
        continue
    if lines and lines[0].startswith("skipif"):
        prefix.append(lines.pop(0))
    if not lines:
        out.append(block)
        continue
    block = "\n".join(lines)
    head, sql = lines[0], "\n".join(lines[1:])
    if prefix:
        out.append("\n".join(prefix) + "\x00PREFIX")
    if head.startswith("statement ok"):
        r = psql(sql)
        assert r.returncode == 0, (sql, r.stderr)
        if sql.upper().startswith(("SET ", "RESET ")):
            session.append(sql)
        out.append(block)
    elif head.startswith("statement error") or head.startswith("query error"):
        r = psql(sql)
        assert r.returncode != 0, sql
        msg = r.stderr.strip().split("\n")[0].replace("ERROR:  ", "")
        # The message is a regex in the .slt file: brackets and parentheses match literally.
        msg = re.sub(r"([][(){}.*+?^$|\\])", r"\\\1", msg)
        kind = head.split()[0]
        out.append(f"{kind} error {msg}\n{sql}" if head.strip() in ("statement error", "query error") else block)
    else:
        with conn.cursor() as cur:
            for setting in session:
                cur.execute(setting)
            # A WITH holding INSERT / UPDATE / DELETE changes data: run once only, below.
            changes_data = re.search(r"\b(INSERT|UPDATE|DELETE)\b", sql.upper()) is not None
            if sql.lstrip().upper().startswith(("SELECT", "VALUES", "WITH", "TABLE", "SHOW")) and not changes_data:
                cur.execute(sql)
                types = letters(cur.description)
            else:
                # A query with side effects (INSERT ... RETURNING) runs once only, by psql
                # below: its column types come from a description (psql's \gdesc), since
                # even a rolled-back run would consume sequence values.
                types = described_types(sql)
        r = psql(sql)
        assert r.returncode == 0, (sql, r.stderr)
        rows = [line.split("\t") for line in r.stdout.rstrip("\n").split("\n")] if r.stdout.strip() else []
        mode = "rowsort" if "rowsort" in head.split() else ""
        if mode == "rowsort":
            rows.sort()
        vals = "\n".join("\t".join("(empty)" if v == "" else v for v in row) for row in rows)
        out.append(f"query {types}{' ' + mode if mode else ''}\n{sql}\n----\n{vals}".rstrip("\n"))
text = "\n\n".join(out) + "\n"
open(sys.argv[2], "w").write(text.replace("\x00PREFIX\n\n", "\n"))
