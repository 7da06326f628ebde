"""batch_lines_equal.py REMOTE LOCAL: two `typellm batch` outputs agree record
by record (the same ids in the same order, no error line in REMOTE, values
identical, probabilities within 1e-12): a remote run against the embedded one."""
import json
import sys

r = [json.loads(line) for line in open(sys.argv[1])]
l = [json.loads(line) for line in open(sys.argv[2])]
assert len(r) == len(l) and [x["id"] for x in r] == [x["id"] for x in l], (len(r), len(l))
assert not [x for x in r if "error" in x], [x for x in r if "error" in x][:2]
for a, b in zip(r, l):
    assert a["values"] == b["values"], a["id"]
    for k, f in a["fields"].items():
        for v, p in f["probabilities"].items():
            assert abs(b["fields"][k]["probabilities"][v] - p) <= 1e-12, (a["id"], k, v)
