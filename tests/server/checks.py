"""checks.py: the counting check() the server's Python checkers share
(imported from the script's own folder). check(cond, what) records a check
and prints what failed; finish(name) prints the tally and exits non-zero on
any failure."""
import sys

_tally = {"checks": 0, "failures": 0}


def check(cond, what):
    _tally["checks"] += 1
    if not cond:
        _tally["failures"] += 1
        print("FAIL:", what, file=sys.stderr)


def finish(name, stream=sys.stdout):
    print(f"{name}: {_tally['checks']} checks, {_tally['failures']} failures", file=stream)
    sys.exit(1 if _tally["failures"] else 0)
