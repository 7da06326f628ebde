#!/usr/bin/env python3
"""random_schemas.py N SEED: prints N random decision schemas, one JSON per
line, covering every keyword typellm decides: nested objects (inline and
through $defs/$ref, allOf-wrapped refs, Optional[Model] as anyOf with null),
multi-label arrays (enum / boolean / const items, minItems, maxItems,
uniqueItems), arrays of objects, numbers, strings and nullable generated
values (minItems, maxItems, x-length "open", long ranges that are
open-ended), null on generated values, objects and arrays (anyOf with null,
type lists, x-optional "ask" on every kind), string / integer / number enums, booleans, scores, const,
unions of consts, enums, booleans and null, type lists with "null",
nullable, generated integers and numbers (bounds, exclusive bounds,
multipleOf, x-decimals), generated strings (minLength, maxLength, pattern,
format), open enums, x-optional ask / skip, required, depends_on (also on
nested paths), title / description / question / default annotations.
Deterministic per SEED."""
import json
import random
import sys

WORDS = ["red", "green", "blue", "low", "high", "cat", "dog", "north", "south", "yes", "maybe", "alpha", "beta",
         "gamma", "delta", "\u00e9t\u00e9", "x y", "q\"uote", "a/b", "7"]
PATTERNS = ["^[A-Z]{2}[0-9]{2,3}$", "^[a-z]+(-[a-z]+)?$", "^\\d{3}$", "^(yes|no)$", "ab", "^[^a-c]{1,4}$",
            "^\\w+@\\w+\\.(com|org)$", "^[0-9a-f]{4}(:[0-9a-f]{4}){0,2}$", "^v\\d+\\.\\d+$", "x|^y"]
FORMATS = ["date", "time", "date-time", "email", "uuid", "uri", "ipv4"]


class Gen:
    def __init__(self, rnd):
        self.r = rnd
        self.defs = {}
        self.keys = []  # decidable paths so far (for depends_on)

    def words(self, n):
        return self.r.sample(WORDS, n)

    def annotate(self, s):
        r = self.r.random()
        if r < 0.2:
            s["title"] = "T " + self.r.choice(WORDS)
        elif r < 0.35:
            s["description"] = "Which " + self.r.choice(WORDS) + "?"
        elif r < 0.45:
            s["question"] = "Q " + self.r.choice(WORDS) + "?"
        if self.r.random() < 0.1:
            s["default"] = None
        return s

    def enum_field(self):
        k = self.r.randint(1, 6)
        t = self.r.random()
        if t < 0.5:
            s = {"type": "string", "enum": self.words(k)}
            if self.r.random() < 0.15:
                s["open"] = True
                s["enum"] = [w for w in s["enum"] if w != "other"] or ["x"]
                s["maxLength"] = max([self.r.randint(3, 20)] + [len(w) for w in s["enum"]])
        elif t < 0.7:
            s = {"type": "integer", "enum": self.r.sample(range(-5, 50), k)}
        elif t < 0.8:
            s = {"type": "number", "enum": sorted(set(round(self.r.uniform(-2, 2), 2) for _ in range(k)))}
        elif t < 0.9:
            s = {"enum": self.words(k - 1 or 1) + [None]}
        else:
            s = {"type": "number", "format": "score"}
        return s

    def number_field(self):
        integer = self.r.random() < 0.6
        s = {"type": "integer" if integer else "number"}
        lo = self.r.randint(-100, 100)
        if self.r.random() < 0.8:
            s["minimum"] = lo
        if self.r.random() < 0.8:
            s["maximum"] = lo + self.r.randint(0, 500)
        if self.r.random() < 0.2:
            s.pop("minimum", None)
            s["exclusiveMinimum"] = lo
            s["maximum"] = lo + self.r.randint(2, 50)
        if integer and self.r.random() < 0.2:
            s.pop("exclusiveMinimum", None)
            s["multipleOf"] = self.r.choice([2, 3, 5])
            s["minimum"] = 0
            s["maximum"] = 60
        if not integer and self.r.random() < 0.5:
            s["x-decimals"] = self.r.randint(0, 3)
        return s

    def string_field(self):
        s = {"type": "string"}
        r = self.r.random()
        if r < 0.4:
            s["pattern"] = self.r.choice(PATTERNS)
            s["maxLength"] = self.r.randint(12, 30)
        elif r < 0.7:
            s["format"] = self.r.choice(FORMATS)
        else:
            s["minLength"] = self.r.randint(0, 3)
            s["maxLength"] = self.r.randint(s["minLength"] + 1, 24)
        return s

    def union_field(self):
        members = []
        for _ in range(self.r.randint(1, 3)):
            r = self.r.random()
            if r < 0.5:
                members.append({"const": self.r.choice(WORDS + [1, 2.5, True]), "description": "d"})
            elif r < 0.8:
                members.append({"type": "string", "enum": self.words(2)})
            else:
                members.append({"type": "boolean"})
        if self.r.random() < 0.6:
            members.append({"type": "null"})
        # the union's values must read differently ("1" vs 1 is refused)
        seen, out = set(), []
        for m in members:
            vals = [m["const"]] if "const" in m else m.get("enum", [True, False] if m.get("type") == "boolean" else [None])
            txt = {json.dumps(v) if not isinstance(v, str) else v for v in vals}
            txt = {("true" if v is True else "false" if v is False else "null" if v is None else
                    (json.dumps(v) if not isinstance(v, str) else v)) for v in vals}
            if txt & seen:
                continue
            seen |= txt
            out.append(m)
        return {self.r.choice(["anyOf", "oneOf"]) if len(out) > 1 else "anyOf": out}

    def nullable_generated(self):
        inner = self.number_field() if self.r.random() < 0.5 else self.string_field()
        if self.r.random() < 0.5:
            return {"anyOf": [inner, {"type": "null"}], "default": None}
        inner["type"] = [inner["type"], "null"]
        return inner

    def array_field(self):
        r = self.r.random()
        if r < 0.6:
            items = {"type": "string", "enum": self.words(self.r.randint(1, 5))}
        elif r < 0.8:
            items = {"type": "boolean"}
        else:
            items = {"anyOf": [{"const": w} for w in self.words(self.r.randint(1, 4))]}
        n = len(items.get("enum", items.get("anyOf", [1, 2])))
        s = {"type": "array", "items": items}
        if self.r.random() < 0.6:
            s["minItems"] = self.r.randint(0, n)
        if self.r.random() < 0.6:
            s["maxItems"] = self.r.randint(s.get("minItems", 0), n)
        if self.r.random() < 0.5:
            s["uniqueItems"] = True
        if self.r.random() < 0.3:
            name = "Item%d" % len(self.defs)
            self.defs[name] = items
            s["items"] = {"$ref": "#/$defs/" + name}
        return s

    def item_array(self, depth, path):
        """An array of objects, numbers or strings: decided length, then each item."""
        r = self.r.random()
        if r < 0.35:
            # leaves only (depth 2), so that a few items stay within a 4k context
            items = self.obj(2, path + ["0"], track=False)
        elif r < 0.6:
            items = self.number_field()
        elif r < 0.85:
            items = self.string_field()
        else:
            items = self.nullable_generated()
        lo = self.r.randint(0, 2)
        hi = lo + self.r.randint(0 if lo else 1, 3)
        s = {"type": "array", "items": items, "maxItems": hi}
        if lo or self.r.random() < 0.5:
            s["minItems"] = lo
        r = self.r.random()
        if r < 0.25:
            s["x-length"] = "open"
        elif r < 0.3:
            s["x-length"] = "count"
        elif r < 0.34 and depth == 0:
            # more lengths than one decision takes: open-ended (small items, so
            # 17 of them stay within a 4k context)
            s = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 0,
                 "maxItems": 17}
        if self.r.random() < 0.2:
            name = "Items%d" % len(self.defs)
            self.defs[name] = s["items"]
            s["items"] = {"$ref": "#/$defs/" + name}
        r = self.r.random()
        if r < 0.15:
            s = {"anyOf": [s, {"type": "null"}]}
        elif r < 0.25:
            s["type"] = ["array", "null"]
        return s

    def leaf(self):
        r = self.r.random()
        if r < 0.3:
            s = self.enum_field()
        elif r < 0.4:
            s = {"type": "boolean"}
        elif r < 0.47:
            s = {"const": self.r.choice(WORDS + [3, True, None])}
        elif r < 0.57:
            s = self.union_field()
        elif r < 0.65:
            s = self.nullable_generated()
        elif r < 0.73:
            s = self.number_field()
        elif r < 0.85:
            s = self.string_field()
        else:
            s = self.array_field()
        if self.r.random() < 0.25 and "enum" in s and "open" not in s:
            name = "E%d" % len(self.defs)
            self.defs[name] = s
            s = {"$ref": "#/$defs/" + name} if self.r.random() < 0.5 else {"allOf": [{"$ref": "#/$defs/" + name}]}
        return self.annotate(s)

    def obj(self, depth, prefix, track=True):
        """track: its fields may be named by a later depends_on (not inside an
        array's items, whose paths exist only up to the decided length)."""
        props, required = {}, []
        for i in range(self.r.randint(1, 4 if depth else 6)):
            key = "f%d" % i if self.r.random() < 0.8 else "k-%d %s" % (i, self.r.choice(WORDS).replace("/", ""))
            path = prefix + [key]
            r = self.r.random()
            if depth < 2 and r < 0.2:
                sub = self.obj(depth + 1, path, track)
                r = self.r.random()
                if r < 0.3:
                    name = "M%d" % len(self.defs)
                    self.defs[name] = sub
                    sub = {"$ref": "#/$defs/" + name}
                elif r < 0.45:
                    sub = {"anyOf": [sub, {"type": "null"}], "default": None}
                elif r < 0.55:
                    sub["type"] = ["object", "null"]
                props[key] = sub
            elif depth < 2 and r < 0.32:
                props[key] = self.item_array(depth, path)
            else:
                s = self.leaf()
                if self.keys and self.r.random() < 0.15:
                    s["depends_on"] = [self.r.choice(self.keys)]
                props[key] = s
                if track:
                    self.keys.append("/".join(path))
            if self.r.random() < 0.6:
                required.append(key)
            elif self.r.random() < 0.3:
                # "ask": a declared absent choice (categorical values) or a presence decision first (the rest)
                props[key]["x-optional"] = self.r.choice(["ask", "skip"])
        o = {"type": "object", "properties": props}
        if required:
            o["required"] = required
        return o


def main():
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    rnd = random.Random(seed)
    for i in range(n):
        g = Gen(rnd)
        s = g.obj(0, [])
        if g.defs:
            s["$defs"] = g.defs
        if rnd.random() < 0.3:
            s["title"] = "Schema %d" % i
        print(json.dumps(s))


if __name__ == "__main__":
    main()
