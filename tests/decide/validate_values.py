#!/usr/bin/env python3
"""validate_values.py: checks typellm decide results against their JSON Schema
with an independent validator (python3-jsonschema, Draft 2020-12, formats
checked where the installed checker knows them: date, date-time, time, email,
uuid, ipv4 with Debian's python3-jsonschema and rfc3339-validator).

Input: JSON lines on stdin or in the files given, each
    {"schema": {...}, "values": {...}, "name": "..."}
Prints one line per invalid result and a summary; exit 1 when any is invalid."""
import json
import sys

import jsonschema


def open_fields_as_strings(node):
    """typellm's open enums ("open": true / "x-open") let the model write a
    value outside the enum, of at most maxLength characters (default 256):
    validate them as that string, everything else as written."""
    if isinstance(node, list):
        return [open_fields_as_strings(x) for x in node]
    if not isinstance(node, dict):
        return node
    if node.get("open") is True or "x-open" in node:
        return {"anyOf": [{k: v for k, v in node.items() if k not in ("maxLength",)},
                          {"type": "string", "maxLength": node.get("maxLength", 256)}]}
    return {k: open_fields_as_strings(v) for k, v in node.items()}


def main() -> int:
    streams = [open(p, encoding="utf-8") for p in sys.argv[1:]] or [sys.stdin]
    total = bad = 0
    fmt = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for f in streams:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            total += 1
            v = jsonschema.Draft202012Validator(open_fields_as_strings(rec["schema"]), format_checker=fmt)
            errs = sorted(v.iter_errors(rec["values"]), key=lambda e: list(e.absolute_path))
            if errs:
                bad += 1
                for e in errs[:3]:
                    print(f"INVALID {rec.get('name', '?')}: /{'/'.join(map(str, e.absolute_path))}: {e.message}")
    print(f"validate_values: {total} results, {bad} invalid")
    return 1 if bad or not total else 0


if __name__ == "__main__":
    sys.exit(main())
