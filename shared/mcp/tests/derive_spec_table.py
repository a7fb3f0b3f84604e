#!/usr/bin/env python3
"""Derives spec_tools.json from ../shared/spec/mcp-server-tools.md: for every
tool (### heading) the rows of its Parameters table, as JSON types with their
required flag. Run from the repo root:

    python3 shared/mcp/tests/derive_spec_table.py ../shared/spec/mcp-server-tools.md > shared/mcp/tests/spec_tools.json

The Rust test `spec_table` holds every tool's inputSchema to this file."""
import json
import re
import sys


def json_type(spec_type: str) -> dict:
    t = spec_type.strip().strip("`").strip()
    if t.endswith("[]"):
        return {"type": "array", "items": json_type(t[:-2])["type"]}
    if t.startswith("Record<"):
        return {"type": "object"}
    if '"' in t:  # a union of string literals: "manual" | "production"
        return {"type": "string", "enum": re.findall(r'"([^"]+)"', t)}
    return {"type": {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
                     "array": "array", "object": "object"}[t]}


def main(path: str) -> None:
    tools, tool, section = {}, None, None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("### "):
            tool = line[4:].strip()
            tools[tool] = {}
            section = None
        elif line.startswith("#### "):
            section = line[5:].strip()
        elif tool and section == "Parameters" and not line.startswith("|") and tools[tool]:
            section = "after-parameters"  # the parameter table ended; sub-tables follow
        elif tool and section == "Parameters" and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            # a `|` inside a type (`"a" | "b"`) splits the cell: join it back
            while len(cells) > 4 and not cells[2].lower().startswith(("yes", "no")):
                cells[1:3] = [cells[1] + " | " + cells[2]]
            name = cells[0].strip("`")
            entry = json_type(cells[1])
            entry["required"] = cells[2].lower().startswith("yes")
            tools[tool][name] = entry
    json.dump(tools, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
