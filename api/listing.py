#!/usr/bin/env python3
"""Renders the crate's public API from rustdoc's JSON, one item per line, sorted.

    python3 api/listing.py target/doc/smthrs_mcp.json > api/public-api.txt

`api/check.sh` builds the JSON and compares the listing with the committed
`api/public-api.txt`. Every public item is listed at every path a user can name
it by (its module path and each `pub use`): modules, structs with their public
fields, enums with their variants, traits with their items, functions with their
signatures, constants, type aliases, inherent methods, and the trait impls
written in this crate (auto and blanket impls are left out). Attributes that
change what a user may do (`#[non_exhaustive]`) are shown.
"""

import json
import sys


def main(path):
    doc = json.load(open(path))
    index = doc["index"]
    paths = doc["paths"]
    lines = set()

    def item(i):
        return index.get(str(i))

    def path_of(i, fallback):
        p = paths.get(str(i))
        return "::".join(p["path"]) if p else fallback

    def generic_args(args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            a = args["angle_bracketed"]
            parts = []
            for arg in a["args"]:
                if "type" in arg:
                    parts.append(ty(arg["type"]))
                elif "lifetime" in arg:
                    parts.append(arg["lifetime"])
                elif "const" in arg:
                    parts.append(arg["const"].get("expr", "_"))
                else:
                    parts.append("_")
            for c in a.get("constraints", []):
                binding = c["binding"]
                if "equality" in binding:
                    eq = binding["equality"]
                    value = ty(eq["type"]) if "type" in eq else eq.get("constant", {}).get("expr", "_")
                    parts.append(f"{c['name']} = {value}")
                else:
                    parts.append(f"{c['name']}: {bounds(binding.get('constraint', []))}")
            return "<" + ", ".join(parts) + ">" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = "(" + ", ".join(ty(t) for t in p["inputs"]) + ")"
            if p.get("output"):
                out += " -> " + ty(p["output"])
            return out
        return ""

    def trait_path(t):
        return path_of(t.get("id"), t["path"]) + generic_args(t.get("args"))

    def bounds(bs):
        out = []
        for b in bs:
            if "trait_bound" in b:
                tb = b["trait_bound"]
                modifier = "?" if tb.get("modifier") == "maybe" else ""
                hrtb = ""
                if tb.get("generic_params"):
                    hrtb = "for<" + ", ".join(p["name"] for p in tb["generic_params"]) + "> "
                out.append(hrtb + modifier + trait_path(tb["trait"]))
            elif "outlives" in b:
                out.append(b["outlives"])
            else:
                out.append("use<..>")
        return " + ".join(out)

    def ty(t):
        if t is None:
            return "()"
        (kind, v), = t.items()
        if kind == "primitive":
            return v
        if kind == "generic":
            return v
        if kind == "resolved_path":
            return path_of(v.get("id"), v["path"]) + generic_args(v.get("args"))
        if kind == "borrowed_ref":
            life = (v["lifetime"] + " ") if v.get("lifetime") else ""
            return "&" + life + ("mut " if v["is_mutable"] else "") + ty(v["type"])
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + ty(v["type"])
        if kind == "tuple":
            return "(" + ", ".join(ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if kind == "slice":
            return "[" + ty(v) + "]"
        if kind == "array":
            return "[" + ty(v["type"]) + "; " + v["len"] + "]"
        if kind == "impl_trait":
            return "impl " + bounds(v)
        if kind == "dyn_trait":
            parts = []
            for tr in v["traits"]:
                hrtb = ""
                if tr.get("generic_params"):
                    hrtb = "for<" + ", ".join(p["name"] for p in tr["generic_params"]) + "> "
                parts.append(hrtb + trait_path(tr["trait"]))
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind == "qualified_path":
            trait = trait_path(v["trait"]) if v.get("trait") else ""
            self_ty = ty(v["self_type"])
            base = f"<{self_ty} as {trait}>" if trait else self_ty
            return base + "::" + v["name"] + generic_args(v.get("args"))
        if kind == "function_pointer":
            sig = v["sig"]
            out = "fn(" + ", ".join(ty(x[1]) for x in sig["inputs"]) + ")"
            if sig.get("output"):
                out += " -> " + ty(sig["output"])
            return out
        if kind == "infer":
            return "_"
        return kind

    def generics(g):
        params = []
        for p in g.get("params", []):
            kind = p["kind"]
            if "lifetime" in kind:
                outlives = kind["lifetime"].get("outlives", [])
                params.append(p["name"] + (": " + " + ".join(outlives) if outlives else ""))
            elif "type" in kind:
                if kind["type"].get("is_synthetic"):
                    continue
                b = bounds(kind["type"].get("bounds", []))
                params.append(p["name"] + (": " + b if b else ""))
            elif "const" in kind:
                params.append("const " + p["name"] + ": " + ty(kind["const"]["type"]))
        head = "<" + ", ".join(params) + ">" if params else ""
        preds = []
        for w in g.get("where_predicates", []):
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                preds.append(ty(bp["type"]) + ": " + bounds(bp["bounds"]))
            elif "lifetime_predicate" in w:
                lp = w["lifetime_predicate"]
                preds.append(lp["lifetime"] + ": " + " + ".join(lp["outlives"]))
        where = " where " + ", ".join(preds) if preds else ""
        return head, where

    def signature(name, f):
        """`fn name<..>(..) -> ..`, with `name` the item's whole path."""
        sig = f["sig"]
        header = f["header"]
        quals = ("const " if header["is_const"] else "") + ("async " if header["is_async"] else "") + (
            "unsafe " if header["is_unsafe"] else "")
        inputs = []
        for arg_name, arg_ty in sig["inputs"]:
            if arg_name == "self":
                rendered = ty(arg_ty)
                inputs.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}.get(
                    rendered, "self: " + rendered))
            else:
                inputs.append(f"{arg_name}: {ty(arg_ty)}")
        head, where = generics(f["generics"])
        out = f"{quals}fn {name}{head}({', '.join(inputs)})"
        if sig.get("output"):
            out += " -> " + ty(sig["output"])
        return out + where

    def attrs(it):
        shown = [a for a in it.get("attrs", []) if isinstance(a, str) and "non_exhaustive" in a]
        shown += [a["other"] for a in it.get("attrs", []) if isinstance(a, dict) and "non_exhaustive" in str(a)]
        return ("#[non_exhaustive] " if shown else "")

    def assoc(owner, it):
        name = f"{owner}::{it['name']}"
        inner = it["inner"]
        if "function" in inner:
            lines.add(f"pub {signature(name, inner['function'])}")
        elif "assoc_const" in inner:
            lines.add(f"pub const {name}: {ty(inner['assoc_const']['type'])}")
        elif "assoc_type" in inner:
            at = inner["assoc_type"]
            value = " = " + ty(at["type"]) if at.get("type") else ""
            b = bounds(at.get("bounds", []))
            lines.add(f"pub type {name}{': ' + b if b else ''}{value}")

    def impls(owner, impl_ids):
        for i in impl_ids:
            it = item(i)
            if not it:
                continue
            im = it["inner"]["impl"]
            if im.get("is_synthetic") or im.get("blanket_impl"):
                continue
            head, where = generics(im["generics"])
            if im.get("trait"):
                neg = "!" if im.get("is_negative") else ""
                lines.add(f"impl{head} {neg}{trait_path(im['trait'])} for {ty(im['for'])}{where}")
                continue
            for member in im["items"]:
                m = item(member)
                if m and m["visibility"] == "public":
                    assoc(owner, m)

    seen = set()

    def walk(i, at):
        it = item(i)
        if it is None:
            return
        inner = it["inner"]
        (kind, v), = inner.items()
        key = (i, at)
        if key in seen:
            return
        seen.add(key)
        a = attrs(it)
        if kind == "module":
            lines.add(f"pub mod {at}")
            for child in v["items"]:
                c = item(child)
                if c is None or c["visibility"] != "public":
                    continue
                if "use" in c["inner"]:
                    u = c["inner"]["use"]
                    if u["is_glob"]:
                        target = item(u["id"]) if u.get("id") is not None else None
                        if target and "module" in target["inner"]:
                            for grand in target["inner"]["module"]["items"]:
                                g = item(grand)
                                if g and g["visibility"] == "public" and g.get("name"):
                                    walk(grand, f"{at}::{g['name']}")
                        else:
                            lines.add(f"pub use {at}::{u['source']}::*")
                        continue
                    if u.get("id") is not None and item(u["id"]) is not None:
                        walk(u["id"], f"{at}::{u['name']}")
                    else:
                        lines.add(f"pub use {at}::{u['name']} (= {u['source']})")
                    continue
                if c.get("name"):
                    walk(child, f"{at}::{c['name']}")
        elif kind == "struct":
            head, where = generics(v["generics"])
            lines.add(f"{a}pub struct {at}{head}{where}")
            k = v["kind"]
            if "plain" in k:
                for f in k["plain"]["fields"]:
                    fi = item(f)
                    if fi and fi["visibility"] == "public":
                        lines.add(f"pub {at}::{fi['name']}: {ty(fi['inner']['struct_field'])}")
            elif "tuple" in k:
                for n, f in enumerate(k["tuple"]):
                    fi = item(f) if f is not None else None
                    if fi and fi["visibility"] == "public":
                        lines.add(f"pub {at}::{n}: {ty(fi['inner']['struct_field'])}")
            impls(at, v["impls"])
        elif kind == "enum":
            head, where = generics(v["generics"])
            lines.add(f"{a}pub enum {at}{head}{where}")
            for var in v["variants"]:
                vi = item(var)
                vk = vi["inner"]["variant"]["kind"]
                va = attrs(vi)
                if vk == "plain":
                    lines.add(f"{va}pub {at}::{vi['name']}")
                elif "tuple" in vk:
                    fields = [ty(item(f)["inner"]["struct_field"]) for f in vk["tuple"] if f is not None]
                    lines.add(f"{va}pub {at}::{vi['name']}({', '.join(fields)})")
                elif "struct" in vk:
                    lines.add(f"{va}pub {at}::{vi['name']} {{ .. }}")
                    for f in vk["struct"]["fields"]:
                        fi = item(f)
                        lines.add(f"pub {at}::{vi['name']}::{fi['name']}: {ty(fi['inner']['struct_field'])}")
            impls(at, v["impls"])
        elif kind == "trait":
            head, where = generics(v["generics"])
            b = bounds(v.get("bounds", []))
            lines.add(f"pub trait {at}{head}{': ' + b if b else ''}{where}")
            for member in v["items"]:
                m = item(member)
                if m:
                    assoc(at, m)
        elif kind == "function":
            lines.add(f"pub {signature(at, v)}")
        elif kind == "constant":
            lines.add(f"pub const {at}: {ty(v['type'])}")
        elif kind == "static":
            lines.add(f"pub static {at}: {ty(v['type'])}")
        elif kind == "type_alias":
            head, where = generics(v["generics"])
            lines.add(f"pub type {at}{head} = {ty(v['type'])}{where}")
        elif kind == "macro":
            lines.add(f"pub macro {at}!")
        else:
            lines.add(f"pub {kind} {at}")

    root = doc["root"]
    walk(root, item(root)["name"])
    print("\n".join(sorted(lines)))


if __name__ == "__main__":
    main(sys.argv[1])
