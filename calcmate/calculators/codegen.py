"""Self-contained Python programs that compute a registry calculator for given inputs.

The scripted teacher's ``run_python`` code is SFT data, so it must *compute* the result, not print
it. ``generate(calc, inputs)`` turns a calculator and its inputs into a readable program that runs
in the ``run_python`` sandbox (stdlib and numpy only, no ``calcmate``) and prints the registry's
value. The program is assembled from the registry's own source, so it cannot drift from it:

* a header with the calculator's name and formula (from its Reference);
* ``v = {...}``: the inputs, one per line, commented with the field, unit and the chosen option's
  label. An input given in another unit is converted in code from the number as given
  (``88.4 * 113.12 / 10000,  # µmol/L -> mg/dL (creatinine 113.12 g/mol)``), with the factor and
  offset read off ``calcmate.units.convert`` itself, so the model learns to convert explicitly;
* the ``compute`` function and everything it reaches through its module globals, in dependency
  order: helper functions and classes of ``calcmate.calculators`` modules (their source,
  annotations stripped, renamed on clashes), module constants (their source, or their ``repr``),
  stdlib imports, other registry calculators it runs (``registry().get(name)`` or a Calculator
  global, as a small wrapper that applies defaults and rounding), data tables read through a
  cached loader (only the entries this calculation reads, e.g. the two CDC LMS rows around the
  child's age, which the calculator's reference serves in full) and constants holding spec objects
  (projected to the attributes the calculation reads);
* the call, the details (points per criterion, intermediates) one per line, the rounded value
  with its unit, and as the last line the value as JSON (dates as ISO strings, tuples as lists).

Every program is executed here before it is returned and must reproduce ``calc(inputs).value``
exactly; anything that cannot be made self-contained raises ``CodegenError`` naming the reason.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import datetime as dt
import functools
import importlib
import json
import keyword
import math
import pprint
import sys
import textwrap
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, is_dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

__all__ = ["CodegenError", "Program", "generate", "json_value"]

_ALLOWED_TOP = set(sys.stdlib_module_names) | {"numpy"}
_FUTURE_FLAGS = __future__.annotations.compiler_flag
_MAX_FORMULA_LINES = 12


class CodegenError(ValueError):
    """The calculator (or this input) cannot be written as a self-contained program."""

    def __init__(self, calculator: str, reason: str):
        self.calculator, self.reason = calculator, reason
        super().__init__(f"{calculator}: cannot generate a self-contained program: {reason}")


@dataclass(frozen=True)
class Program:
    calculator_id: str
    code: str
    value: Any  # calc(inputs).value: the program's last line is json_value(value) as JSON
    inputs: Mapping[str, Any]  # canonical inputs written into ``v``


def json_value(value: Any) -> Any:
    """The value as the program's last line prints it, read back (dates -> ISO, tuples -> lists)."""
    return json.loads(json.dumps(value, default=str))


# -- module sources -------------------------------------------------------------------------------

@dataclass
class _Module:
    name: str
    globals: dict[str, Any]
    src: bytes
    tree: ast.Module
    line_start: list[int]
    imports: dict[str, str] = field(default_factory=dict)  # global name -> import statement (stdlib only)
    from_calcmate: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (module, attr)
    defs: dict[str, ast.AST] = field(default_factory=dict)  # top-level def/class/assign by name

    def offset(self, lineno: int, col: int) -> int:
        return self.line_start[lineno - 1] + col

    def line_end(self, lineno: int) -> int:
        return self.line_start[lineno] if lineno < len(self.line_start) else len(self.src)

    def text(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8")


@functools.lru_cache(maxsize=None)
def _module(name: str) -> _Module:
    mod = importlib.import_module(name)
    src = Path(mod.__file__).read_bytes()
    tree = ast.parse(src)
    starts, pos = [], 0
    for line in src.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    m = _Module(name, vars(mod), src, tree, starts)
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                bound = a.asname or a.name.split(".")[0]
                if _allowed(a.name):
                    m.imports[bound] = f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                bound = a.asname or a.name
                if node.module == "__future__":
                    continue
                if _allowed(node.module):
                    m.imports[bound] = f"from {node.module} import {a.name}" + (f" as {a.asname}" if a.asname else "")
                elif node.module.startswith("calcmate."):
                    m.from_calcmate[bound] = (node.module, a.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            m.defs[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            m.defs[node.targets[0].id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            m.defs[node.target.id] = node
    return m


def _allowed(module: str) -> bool:
    return module.split(".")[0] in _ALLOWED_TOP


def _is_calcmate(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "") or "").startswith("calcmate.")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bound(node: ast.AST) -> set[str]:
    """Names bound directly in the scope ``node`` opens (parameters, assignments, imports, ...)."""
    out: set[str] = set()
    declared: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        out |= {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None}
        roots = node.body if isinstance(node.body, list) else [node.body]
    elif isinstance(node, ast.ClassDef):
        roots = node.body
    else:  # comprehension: its targets
        roots = [g.target for g in node.generators]

    def walk(n: ast.AST) -> None:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            return
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            declared.update(n.names)
        elif isinstance(n, _SCOPES):
            if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                walk(n.generators[0].iter)  # the first iterable belongs to the enclosing scope
            return
        for c in ast.iter_child_nodes(n):
            walk(c)

    for r in roots:
        walk(r)
    return out - declared


def _global_loads(root: ast.AST, env: frozenset[str] = frozenset()) -> list[ast.Name]:
    """Every ``Name`` load under ``root`` that refers to a module global (or builtin).

    ``env`` holds the names bound by the enclosing function scopes; class bodies do not enclose
    the functions defined in them, as in Python.
    """
    found: list[ast.Name] = []

    def visit(n: ast.AST, env: frozenset[str], cls: frozenset[str] = frozenset()) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for d in getattr(n, "decorator_list", []):
                visit(d, env | cls)
            for d in (*n.args.defaults, *[k for k in n.args.kw_defaults if k is not None]):
                visit(d, env | cls)
            inner = env | _bound(n)
            for b in (n.body if isinstance(n.body, list) else [n.body]):
                visit(b, inner)
            return
        if isinstance(n, ast.ClassDef):
            for d in (*n.decorator_list, *n.bases, *[k.value for k in n.keywords]):
                visit(d, env | cls)
            inner_cls = cls | _bound(n)
            for b in n.body:
                visit(b, env, inner_cls)
            return
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            visit(n.generators[0].iter, env, cls)
            inner = env | cls | _bound(n)
            for i, g in enumerate(n.generators):
                if i:
                    visit(g.iter, inner)
                for c in g.ifs:
                    visit(c, inner)
            for e in ((n.key, n.value) if isinstance(n, ast.DictComp) else (n.elt,)):
                visit(e, inner)
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            if n.id not in env and n.id not in cls:
                found.append(n)
            return
        for c in ast.iter_child_nodes(n):
            visit(c, env, cls)

    visit(root, env)
    return found


def _literal_ok(obj: Any) -> bool:
    try:
        return ast.literal_eval(repr(obj)) == obj
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


# -- the dependency graph -------------------------------------------------------------------------

@dataclass
class _Dep:
    key: Any
    name: str  # preferred name; ``emitted`` after naming
    kind: str  # function | lambda | class | const | repr | loader | project | calc
    mod: _Module | None = None
    start: int = 0
    end: int = 0
    refs: list[tuple[int, int, Any]] = field(default_factory=list)  # (start, end, dep key): rename site
    edits: list[tuple[int, int, str]] = field(default_factory=list)  # static text edits
    obj: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    emitted: str = ""


class _Gen:
    def __init__(self, calc: Any):
        self.calc = calc
        self.deps: dict[Any, _Dep] = {}
        self.order: list[Any] = []
        self.imports: dict[str, str] = {"json": "import json"}  # bound name -> import statement

    def fail(self, reason: str) -> CodegenError:
        return CodegenError(self.calc.id, reason)

    # -- imports ----------------------------------------------------------------------------
    def add_import(self, name: str, stmt: str) -> None:
        if self.imports.get(name, stmt) != stmt:
            raise self.fail(f"the name {name!r} is imported two ways ({self.imports[name]!r}, {stmt!r})")
        self.imports[name] = stmt

    # -- graph ------------------------------------------------------------------------------
    def visit(self, key: Any, build) -> Any:
        if key not in self.deps:
            dep = build()
            dep.key = key
            self.deps[key] = dep
            self._analyse(dep)
            self.order.append(key)
        return key

    def _analyse(self, dep: _Dep) -> None:
        kind = dep.kind
        if kind in ("function", "class", "lambda", "const"):
            self._analyse_source(dep)
        elif kind == "calc":
            c = dep.obj
            dep.extra["compute"] = self.compute_key(c.compute, c)
            self.add_import("SimpleNamespace", "from types import SimpleNamespace")
        elif kind == "project":
            self.add_import("SimpleNamespace", "from types import SimpleNamespace")

    # -- resolving a global name of a calculator module ---------------------------------------
    def resolve(self, mod: _Module, name: str) -> Any | None:
        """The dep key a global ``name`` of ``mod`` refers to, or None (builtin or import)."""
        if name in mod.imports:
            self.add_import(name, mod.imports[name])
            return None
        if name not in mod.globals:
            if hasattr(builtins, name):
                return None
            raise self.fail(f"{mod.name} has no global {name!r}")
        obj = mod.globals[name]
        registry_mod = importlib.import_module("calcmate.calculators.registry")
        from calcmate.calculators.spec import Calculator

        if isinstance(obj, types.ModuleType):
            if not _allowed(obj.__name__):
                raise self.fail(f"it uses the module {obj.__name__}, which the sandbox does not have")
            self.add_import(name, f"import {obj.__name__}" + (f" as {name}" if name != obj.__name__ else ""))
            return None
        if isinstance(obj, Calculator):
            key = self.calc_key(obj)
            self.deps[key].extra["global_ref"] = True  # code may read .compute off it
            return key
        if obj is registry_mod.registry or obj in (registry_mod.get, registry_mod.lookup):
            raise self.fail(f"{mod.name} uses {name} other than as registry().get(<name>)")
        if isinstance(obj, functools._lru_cache_wrapper):
            if not _is_calcmate(obj):
                raise self.fail(f"{name} is a cached function from outside calcmate")
            return self.visit(("loader", id(obj)), lambda: _Dep(None, name, "loader", obj=obj))
        if isinstance(obj, (types.FunctionType, type)):
            if not _is_calcmate(obj):
                if _allowed(obj.__module__) and getattr(importlib.import_module(obj.__module__), obj.__name__, None) is obj:
                    stmt = f"from {obj.__module__} import {obj.__name__}" + (f" as {name}" if name != obj.__name__ else "")
                    self.add_import(name, stmt)
                    return None
                raise self.fail(f"{name} comes from {obj.__module__}, which the sandbox does not have")
            if isinstance(obj, type):
                return self.visit(("class", id(obj)), lambda: self._source_dep(obj, "class"))
            return self.compute_key(obj, None, name)
        if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            m = getattr(obj, "__module__", None)
            if m and _allowed(m) and getattr(importlib.import_module(m), obj.__name__, None) is obj:
                self.add_import(name, f"from {m} import {obj.__name__}" + (f" as {name}" if name != obj.__name__ else ""))
                return None
            raise self.fail(f"{name} is a builtin function of unknown origin")
        return self.const_key(mod, name, obj)

    def compute_key(self, fn: Any, calc: Any = None, name: str | None = None) -> Any:
        if not isinstance(fn, types.FunctionType) or not _is_calcmate(fn):
            raise self.fail(f"compute {fn!r} is not a function defined in calcmate")
        if "<locals>" in fn.__qualname__:
            raise self.fail(f"{fn.__qualname__} is defined inside another function")
        if fn.__name__ == "<lambda>":
            nm = name or (calc.id if calc is not None else "compute")
            return self.visit(("func", id(fn)), lambda: self._lambda_dep(fn, nm))
        return self.visit(("func", id(fn)), lambda: self._source_dep(fn, "function"))

    def calc_key(self, calc: Any) -> Any:
        return self.visit(("calc", calc.id), lambda: _Dep(None, f"{calc.id}_calculator", "calc", obj=calc))

    def const_key(self, mod: _Module, name: str, obj: Any) -> Any:
        home, hname = self._home(mod, name)
        key = ("const", home.name, hname)
        if key in self.deps:
            return key
        node = home.defs.get(hname)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and self._source_const_ok(home, node, set()):
            return self.visit(key, lambda: self._const_source_dep(home, hname, node, obj))
        if _literal_ok(obj):
            return self.visit(key, lambda: _Dep(None, hname, "repr", obj=obj))
        return self.visit(key, lambda: _Dep(None, hname, "project", obj=obj))

    def _home(self, mod: _Module, name: str) -> tuple[_Module, str]:
        seen = 0
        while name in mod.from_calcmate and seen < 10:
            mname, attr = mod.from_calcmate[name]
            mod, name, seen = _module(mname), attr, seen + 1
        return mod, name

    def _source_const_ok(self, mod: _Module, node: ast.AST, seen: set) -> bool:
        """Is the constant's own source usable: it only reads builtins, stdlib and plain constants?"""
        value = node.value
        for n in sorted({x.id for x in _global_loads(value)}):
            if n in mod.imports or (n not in mod.globals and hasattr(builtins, n)):
                continue
            obj = mod.globals.get(n)
            if isinstance(obj, types.ModuleType) and _allowed(obj.__name__):
                continue
            if obj is None or callable(obj) or isinstance(obj, types.ModuleType):
                return False
            home, hname = self._home(mod, n)
            sub = home.defs.get(hname)
            if (home.name, hname) in seen:
                return False
            if not (isinstance(sub, (ast.Assign, ast.AnnAssign)) and self._source_const_ok(home, sub, seen | {(home.name, hname)})) \
                    and not _literal_ok(obj):
                return False
        return True

    # -- building source deps -------------------------------------------------------------------
    def _source_dep(self, obj: Any, kind: str) -> _Dep:
        mod = _module(obj.__module__)
        node = mod.defs.get(obj.__name__)
        want = ast.ClassDef if kind == "class" else (ast.FunctionDef, ast.AsyncFunctionDef)
        if not isinstance(node, want):
            raise self.fail(f"cannot find the source of {obj.__module__}.{obj.__qualname__}")
        if node.decorator_list:
            raise self.fail(f"{obj.__qualname__} is decorated")
        if kind == "class" and any(isinstance(s, ast.AnnAssign) for s in node.body):
            raise self.fail(f"class {obj.__qualname__} declares annotated fields")
        start, end = mod.line_start[node.lineno - 1], mod.line_end(node.end_lineno)
        return _Dep(None, obj.__name__, kind, mod=mod, start=start, end=end, obj=obj, extra={"node": node})

    def _lambda_dep(self, fn: types.FunctionType, name: str) -> _Dep:
        mod = _module(fn.__module__)
        cands = [n for n in ast.walk(mod.tree) if isinstance(n, ast.Lambda) and n.lineno == fn.__code__.co_firstlineno]
        match = None
        for n in cands:
            code = compile(ast.Expression(n), "<lambda>", "eval", flags=_FUTURE_FLAGS, dont_inherit=True)
            inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
            if (inner.co_code, inner.co_names, inner.co_varnames) == (fn.__code__.co_code, fn.__code__.co_names, fn.__code__.co_varnames):
                match = n
                break
        if match is None:
            raise self.fail(f"cannot find the source of the lambda at {fn.__module__}:{fn.__code__.co_firstlineno}")
        body = match.body
        start, end = mod.offset(body.lineno, body.col_offset), mod.offset(body.end_lineno, body.end_col_offset)
        return _Dep(None, name, "lambda", mod=mod, start=start, end=end, obj=fn, extra={"node": match})

    def _const_source_dep(self, mod: _Module, name: str, node: ast.AST, obj: Any) -> _Dep:
        if isinstance(node, ast.Assign):
            start, end = mod.line_start[node.lineno - 1], mod.line_end(node.end_lineno)
            extra = {"node": node}
        else:  # NAME: annotation = value -> NAME = value
            v = node.value
            start, end = mod.offset(v.lineno, v.col_offset), mod.offset(v.end_lineno, v.end_col_offset)
            extra = {"node": node, "prefix": f"{name} = "}
        return _Dep(None, name, "const", mod=mod, start=start, end=end, obj=obj, extra=extra)

    def _analyse_source(self, dep: _Dep) -> None:
        """Find the unit's global references (rename sites and children) and its static edits."""
        mod, node = dep.mod, dep.extra["node"]
        if dep.kind == "lambda":
            scan = [node]
        elif dep.kind == "const":
            scan = [node.value]
            if isinstance(node, ast.Assign):
                tgt = node.targets[0]
                dep.refs.append((mod.offset(tgt.lineno, tgt.col_offset), mod.offset(tgt.end_lineno, tgt.end_col_offset), dep.key))
        else:
            scan = [node]
            # the def/class name itself: rename site for self
            line = mod.src[mod.line_start[node.lineno - 1]:mod.line_end(node.lineno)]
            kw = b"class " if dep.kind == "class" else b"def "
            i = line.find(kw + node.name.encode())
            if i < 0:
                raise self.fail(f"cannot locate the definition line of {node.name}")
            s = mod.line_start[node.lineno - 1] + i + len(kw)
            dep.refs.append((s, s + len(node.name.encode()), dep.key))
        skip: set[int] = set()
        for root in scan:
            for n in ast.walk(root):
                self._strip_annotations(dep, n, skip)
                self._local_imports(dep, n, skip)
                self._registry_calls(dep, n, skip)
        for root in scan:
            for n in _global_loads(root):
                if id(n) in skip:
                    continue
                child = self.resolve(mod, n.id)
                if child is not None:
                    dep.refs.append((mod.offset(n.lineno, n.col_offset), mod.offset(n.end_lineno, n.end_col_offset), child))

    def _strip_annotations(self, dep: _Dep, n: ast.AST, skip: set[int]) -> None:
        mod = dep.mod
        if isinstance(n, ast.arguments):
            for a in (*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg):
                if a is not None and a.annotation is not None:
                    s = mod.offset(a.lineno, a.col_offset) + len(a.arg.encode())
                    dep.edits.append((s, mod.offset(a.annotation.end_lineno, a.annotation.end_col_offset), ""))
                    skip.update(id(x) for x in ast.walk(a.annotation))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            r = n.returns
            rs = mod.offset(r.lineno, r.col_offset)
            i = mod.src.rfind(b"->", 0, rs)
            j = i
            while j > 0 and mod.src[j - 1:j] in (b" ", b"\t"):
                j -= 1
            dep.edits.append((j, mod.offset(r.end_lineno, r.end_col_offset), ""))
            skip.update(id(x) for x in ast.walk(r))
        if isinstance(n, ast.AnnAssign) and dep.kind in ("function", "lambda"):
            skip.update(id(x) for x in ast.walk(n.annotation))

    def _local_imports(self, dep: _Dep, n: ast.AST, skip: set[int]) -> None:
        if not isinstance(n, (ast.Import, ast.ImportFrom)) or dep.kind == "const":
            return
        mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
        if all(_allowed(m) for m in mods) and not (isinstance(n, ast.ImportFrom) and n.level):
            return
        if isinstance(n, ast.Import) or n.level or not (n.module or "").startswith("calcmate."):
            raise self.fail(f"{dep.name} imports {mods}, which the sandbox does not have")
        registry_mod = importlib.import_module("calcmate.calculators.registry")

        local = dep.extra.setdefault("local_imports", {})
        for a in n.names:
            obj = getattr(importlib.import_module(n.module), a.name)
            if obj is registry_mod.registry:
                local[a.asname or a.name] = "registry"
            else:
                raise self.fail(f"{dep.name} imports {n.module}.{a.name} inside a function")
        mod = dep.mod
        ls, le = mod.line_start[n.lineno - 1], mod.line_end(n.end_lineno)
        s, e = mod.offset(n.lineno, n.col_offset), mod.offset(n.end_lineno, n.end_col_offset)
        whole = mod.src[ls:s].strip() == b"" and mod.src[e:le].strip() in (b"", b";")
        dep.edits.append((ls, le, "") if whole else (s, e, "pass"))

    def _registry_calls(self, dep: _Dep, n: ast.AST, skip: set[int]) -> None:
        """``registry().get("Name")`` (registry imported locally or globally) -> that calculator's wrapper."""
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Call)):
            return
        inner = n.func.value
        if not (isinstance(inner.func, ast.Name) and not inner.args):
            return
        registry_mod = importlib.import_module("calcmate.calculators.registry")

        is_reg = dep.extra.get("local_imports", {}).get(inner.func.id) == "registry" or \
            dep.mod.globals.get(inner.func.id) is registry_mod.registry
        if not is_reg:
            return
        if n.func.attr not in ("get", "find") or len(n.args) != 1 or n.keywords or \
                not (isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)):
            raise self.fail(f"{dep.name} uses registry() other than as registry().get(<name>)")
        calc = registry_mod.registry().get(n.args[0].value)
        key = self.calc_key(calc)
        mod = dep.mod
        dep.refs.append((mod.offset(n.lineno, n.col_offset), mod.offset(n.end_lineno, n.end_col_offset), key))
        skip.update(id(x) for x in ast.walk(n))

    # -- naming and text --------------------------------------------------------------------------
    def assign_names(self, main_key: Any) -> None:
        taken = set(self.imports) | {"v", "value", "details", "json", "dt", "name", "x"}
        reserved = set(dir(builtins)) | set(keyword.kwlist)
        keys = [k for k in self.order if k != main_key] + [main_key]
        for k in keys:
            d = self.deps[k]
            base = d.name
            if k == main_key and d.kind in ("function", "lambda"):
                base = self.calc.id  # the program calls the calculator by its id
                cands = [base, f"compute_{base}"]
            else:
                cands = [base, f"{base}_{d.mod.name.rsplit('.', 1)[-1]}" if d.mod else f"{base}_2"]
            cands += [f"{base}_{i}" for i in range(2, 100)]
            for c in cands:
                if c.isidentifier() and c not in taken and c not in reserved:
                    d.emitted = c
                    taken.add(c)
                    break
            else:  # pragma: no cover - 100 clashes
                raise self.fail(f"no free name for {base}")

    def text(self, dep: _Dep) -> str:
        mod = dep.mod
        edits = list(dep.edits) + [(s, e, self.deps[k].emitted) for s, e, k in dep.refs]
        edits.sort(key=lambda x: (x[0], x[1]))
        out, pos = [], dep.start
        for s, e, rep in edits:
            if s < pos:
                continue  # nested in an edit already applied (e.g. a name inside a replaced call)
            out.append(mod.src[pos:s])
            out.append(rep.encode())
            pos = e
        out.append(mod.src[pos:dep.end])
        body = b"".join(out).decode("utf-8")
        if dep.kind == "lambda":
            node = dep.extra["node"]
            args = ast.unparse(node.args)
            lines = body.splitlines()
            if len(lines) == 1:
                return f"def {dep.emitted}({args}):\n    return {body.strip()}\n"
            rest = textwrap.dedent("\n".join(lines[1:]))
            rest = textwrap.indent(rest, "        ")
            return f"def {dep.emitted}({args}):\n    return (\n        {lines[0].strip()}\n{rest}\n    )\n"
        if dep.kind == "const" and "prefix" in dep.extra:
            return f"{dep.extra['prefix'].replace(dep.name, dep.emitted, 1)}{body}\n"
        return textwrap.dedent(body).rstrip() + "\n"


# -- program assembly -----------------------------------------------------------------------------

def _literal(x: Any, gen: _Gen) -> str:
    if isinstance(x, dt.datetime):
        raise gen.fail("datetime inputs are not supported")
    if isinstance(x, dt.date):
        gen.add_import("dt", "import datetime as dt")
        return f"dt.date({x.year}, {x.month}, {x.day})"
    if not _literal_ok(x):
        raise gen.fail(f"input value {x!r} has no literal form")
    return repr(x)


def _given(raw: Any) -> str:
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        return f"{raw[0]} {raw[1]}"
    if isinstance(raw, Mapping) and "value" in raw:
        return f"{raw['value']} {raw.get('unit') or ''}".strip()
    return str(raw)


def _first_number(raw: Any) -> float | None:
    if isinstance(raw, (list, tuple)) and raw:
        raw = raw[0]
    if isinstance(raw, Mapping):
        raw = raw.get("value")
    try:
        return float(str(raw).strip().split()[0].replace(",", ""))
    except (ValueError, IndexError):
        return None


def _input_comment(inp: Any, raw: Any, canon: Any) -> str:
    from calcmate.calculators.spec import normalize_name

    bits = [inp.label]
    if raw is None:
        return f"{inp.label}: not given" + (f", default {canon!r}" if canon is not None else "")
    if inp.type == "choice":
        label = next((c.label for c in inp.choices if c.value == canon and type(c.value) is type(canon)), None)
        if label is not None and normalize_name(label) != normalize_name(str(canon)):
            bits[0] = f"{inp.label}: {label}"
    elif inp.type in ("number", "integer"):
        if inp.unit:
            bits.append(inp.unit)
        n = _first_number(raw)
        if not isinstance(raw, (int, float)) and (n is None or abs(n - float(canon)) > 1e-12 * max(1.0, abs(n))):
            bits.append(f"from {_given(raw)}")
    elif inp.type == "date" and not isinstance(raw, dt.date):
        bits.append(f"given as {_given(raw)}")
    return ", ".join(bits)


# -- unit conversions, written as code ------------------------------------------------------------

@dataclass(frozen=True)
class _Conversion:
    expr: str  # computes the canonical value from the number as given
    comment: str  # "<from> -> <to>" and the molar mass where one is used
    exact: bool  # the expression evaluates to exactly the registry's canonical value


_UNIT_SHOWN = {"degC": "°C", "degF": "°F", "kg/m**2": "kg/m²", "m**2": "m²", "mg/m**2": "mg/m²"}
_REL = 1e-9  # an emitted expression must reproduce the registry's conversion to this relative error


def _num(x: float) -> str:
    """A number as a reader writes it: 180, 88.4, -17.7777777778."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _clean(x: float) -> float:
    """``x`` to 12 significant digits: 0.011312 for a pint 0.011311999999999999."""
    return float(f"{x:.12g}")


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL * max(abs(a), abs(b), 1e-300)


def _pow10(r: float) -> int | None:
    """e when r is 10^e (to 1e-9), else None."""
    if r <= 0:
        return None
    e = round(math.log10(r))
    return e if _close(r, 10.0 ** e) else None


def _times_pow10(e: int) -> str:
    return "" if e == 0 else f" * {10 ** e}" if e > 0 else f" / {10 ** -e}"


def _scales(k: float, molar_mass: float | None, valence: int = 1) -> list[str]:
    """Ways to write the multiplication by the conversion factor ``k``, most readable first."""
    out = []
    if molar_mass:  # k = M / z x 10^e or z x 10^e / M (mass <-> molar or equivalents): show M (and z)
        m = _num(molar_mass)
        per_z, times_z = (f" / {valence}", f" * {valence}") if valence != 1 else ("", "")
        if (e := _pow10(k / molar_mass * valence)) is not None:
            out.append(f" * {m}{_times_pow10(e)}{per_z}")
        if (e := _pow10(k * molar_mass / valence)) is not None:
            out.append(f"{_times_pow10(e)}{times_z} / {m}")
    simple = []
    fr = Fraction(k).limit_denominator(12)
    if fr and _close(float(fr), k):  # 5 / 9, * 60, / 10
        p, q = fr.numerator, fr.denominator
        simple.append(f" * {p}" if q == 1 else f" / {q}" if p == 1 else f" * {p} / {q}")
    simple += [f" * {_num(_clean(k))}", f" / {_num(_clean(1 / k))}", f" * {_num(k)}"]
    return out + sorted(dict.fromkeys(simple), key=len)


def _conversion(inp: Any, raw: Any, canon: Any, exact_only: bool = False) -> _Conversion | None:
    """The code converting an input given in another unit to the canonical one, or None.

    The factor (and offset, for temperatures) is read off the registry's own ``units.convert`` as
    an affine fit, f(x) = k x + b, so there is no second conversion table; each candidate
    expression is evaluated and must give the registry's canonical value to 1e-9 relative.
    """
    from calcmate.calculators.spec import _same_unit, _split_value_unit
    from calcmate.units import ANALYTES, UnitError, convert

    if raw is None or inp.type not in ("number", "integer") or not inp.unit:
        return None
    try:
        n, unit = _split_value_unit(raw, ValueError)
    except ValueError:
        return None
    if unit is None or _same_unit(unit, inp.unit):
        return None
    try:
        f = functools.partial(convert, from_unit=unit, to_unit=inp.unit, analyte=inp.analyte)
        b = f(0.0)
        k = f(1.0) - b
        target = f(n)
    except UnitError:
        return None
    if k == 0 or not _close(k * n + b, target) or not _close(f(-3.5), k * -3.5 + b):
        return None  # not affine
    if _close(k, 1.0) and abs(b) <= _REL * max(1.0, abs(target)):
        return None  # the same unit spelled another way: the number as given
    note = ""
    molar_mass, valence = None, 1
    a = ANALYTES.get(inp.analyte or "")
    if a is not None:
        try:
            convert(1.0, unit, inp.unit)  # converts without the analyte: no molar mass involved
        except UnitError:
            molar_mass = a.molar_mass
            valence = a.valence if "eq" in f"{unit} {inp.unit}".lower() else 1
            note = f" ({inp.analyte.replace('_', ' ')} {_num(a.molar_mass)} g/mol" + \
                (f", valence {valence}" if valence != 1 else "") + ")"
    def candidates(x: str) -> list[str]:  # most readable first
        if abs(b) <= _REL * max(1.0, abs(target)):
            return [x + sc for sc in _scales(k, molar_mass, valence)]
        c, bb = _clean(-b / k), _clean(b)
        off = f"({x} - {_num(c)})" if c >= 0 else f"({x} + {_num(-c)})"  # (100.4 - 32) / 1.8
        sub = [off[1:-1]] if _close(k, 1.0) else [off + sc for sc in _scales(k, None)]
        add = [x + sc + (f" + {_num(bb)}" if bb >= 0 else f" - {_num(-bb)}") for sc in _scales(k, None)]  # 37 * 1.8 + 32
        return sorted(sub[:1] + add[:1], key=len) + sub[1:] + add[1:]

    def value(e: str) -> Any:
        return eval(compile(e, "<conversion>", "eval", dont_inherit=True), {"__builtins__": {"round": round}})  # noqa: S307 - our own numbers

    wrap = "round({})" if inp.type == "integer" else "{}"
    as_given, as_float = candidates(_num(n)), candidates(repr(float(n)))  # 4 * 10 is an int: 4.0 * 10
    shown = f"{unit} -> {_UNIT_SHOWN.get(inp.unit, inp.unit)}{note}"
    for e, ef in zip(as_given, as_float):  # the first that reproduces the registry's value (exactly, if exact_only)
        e = wrap.format(e)
        got = value(e)
        if inp.type == "number" and not isinstance(got, float):
            e = wrap.format(ef)
            got = value(e)
        exact = got == canon and type(got) is type(canon)
        close = got == canon if inp.type == "integer" else _close(float(got), float(target))
        if exact or (close and not exact_only):
            return _Conversion(e, shown, exact)
    return None


def _header(calc: Any) -> list[str]:
    lines = [f"# {calc.name}"]
    formula = calc.reference.formula.strip()
    flines: list[str] = []
    for para in formula.splitlines():
        flines += textwrap.wrap(para, 96) or [""]
    if len(flines) > _MAX_FORMULA_LINES:
        flines = flines[:_MAX_FORMULA_LINES] + ["... (the full table is in the reference)"]
    lines += [f"# {x}".rstrip() for x in flines]
    return lines


def _wrapper_text(gen: _Gen, dep: _Dep) -> str:
    calc = dep.obj
    fn = gen.deps[dep.extra["compute"]].emitted
    defaults = ", ".join(f"{i.key!r}: {_literal(i.default, gen)}" for i in calc.inputs if i.optional)
    lines = [
        f"def {dep.emitted}(values=None, /, **kw):",
        f'    """{calc.name}: the registry calculator, with its defaults and rounding."""',
        f"    v = {{{defaults + ', ' if defaults else ''}**(values or {{}}), **kw}}",
        f"    value = {fn}(v)",
        "    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):",
        "        value = value[0]  # (value, details)",
        *_rounding(calc, "    "),
        "    return SimpleNamespace(value=value)",
    ]
    if dep.extra.get("global_ref"):
        lines += ["", "", f"{dep.emitted}.compute = {fn}"]
    return "\n".join(lines) + "\n"


def _rounding(calc: Any, indent: str, value: Any = 0.0) -> list[str]:
    out = calc.output
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    if out.type == "integer":
        return [f"{indent}value = int(round(value))"]
    if out.type == "decimal" and out.decimals is not None:
        return [f"{indent}value = round(float(value), {out.decimals})"]
    return []


def _project_text(gen: _Gen, dep: _Dep) -> str:
    attrs: set[str] = dep.extra.get("attrs", set())

    def emit(x: Any) -> str:
        if isinstance(x, tuple):
            inner = [emit(e) for e in x]
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        if isinstance(x, list):
            return "[" + ", ".join(emit(e) for e in x) + "]"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k!r}: {emit(e)}" for k, e in x.items()) + "}"
        if is_dataclass(x) and not isinstance(x, type):
            keep = [a for a in sorted(attrs) if hasattr(x, a)]
            if "label" not in keep and isinstance(getattr(x, "label", None), str):
                keep.append("label")
            for a in keep:
                if not _literal_ok(getattr(x, a)):
                    raise gen.fail(f"{dep.name}.{a} has no literal form")
            return "SimpleNamespace(" + ", ".join(f"{a}={getattr(x, a)!r}" for a in keep) + ")"
        if _literal_ok(x):
            return repr(x)
        raise gen.fail(f"{dep.name} holds {type(x).__name__}, which has no literal form")

    body = emit(dep.obj)
    items = body
    if len(body) > 96 and body[:1] in "([{" and isinstance(dep.obj, (tuple, list, dict)):
        parts = [emit(e) if not isinstance(dep.obj, dict) else f"{k!r}: {emit(e)}"
                 for k, e in (dep.obj.items() if isinstance(dep.obj, dict) else enumerate(dep.obj))]
        items = body[0] + "\n" + "".join(f"    {p},\n" for p in parts) + body[-1]
    return f"# only the attributes this calculation reads\n{dep.emitted} = {items}\n"


def _loader_text(gen: _Gen, dep: _Dep) -> str:
    calls: dict[Any, Any] = dep.extra.get("calls", {})
    fn = dep.obj.__wrapped__
    params = list(__import__("inspect").signature(fn).parameters)
    if not calls:
        return f"def {dep.emitted}(*args):\n    raise KeyError(args)  # not read by this calculation\n"
    if any(len(k) != len(params) for k in calls):
        raise gen.fail(f"the data loader {dep.name} is called without all of its arguments {params}")
    table = f"{dep.emitted.strip('_').upper()}_DATA"
    if table in gen.imports or any(d.emitted == table for d in gen.deps.values()):
        table += "_"
    one = len(params) == 1  # keyed by the argument itself, else by the tuple of arguments
    data = {(k[0] if one else k): (v.used() if isinstance(v, _KeyLog) else v) for k, v in calls.items()}
    if not _literal_ok(data):
        raise gen.fail(f"the data of {dep.name} has no literal form")
    lit = _data_literal(data)
    doc = (fn.__doc__ or "").strip().splitlines()
    note = f"# {dep.name}: {doc[0]}" if doc else f"# data read by {dep.name}"
    args = ", ".join(params)
    return (f"{note} (only the entries used here)\n{table} = {lit}\n\n\n"
            f"def {dep.emitted}({args}):\n    return {table}[{args}]\n")


def _data_literal(data: dict) -> str:
    """A loader's data as a literal: one line if short, else one entry (and one row) per line."""
    flat = repr(data)
    if len(flat) <= 80:
        return flat
    lines = ["{"]
    for k, x in data.items():
        item = f"    {k!r}: {x!r},"
        if len(item) <= 100:
            lines.append(item)
        elif isinstance(x, (tuple, list)) and x:
            o, c = ("(", ")") if isinstance(x, tuple) else ("[", "]")
            lines.append(f"    {k!r}: {o}")
            lines += [textwrap.indent(pprint.pformat(e, width=92, compact=True, sort_dicts=False), " " * 8) + ","
                      for e in x]
            lines.append(f"    {c},")
        else:
            body = pprint.pformat(x, width=92, compact=True, sort_dicts=False)
            lines.append(f"    {k!r}: " + textwrap.indent(body, " " * 8).lstrip() + ",")
    return "\n".join(lines + ["}"])


class _KeyLog(dict):
    """A loader's dict result while tracing: remembers which keys the calculation reads."""

    def __init__(self, data: dict):
        super().__init__(data)
        self.keys_read: set | None = set()  # None: read whole (iterated)

    def __getitem__(self, k: Any) -> Any:
        if self.keys_read is not None:
            self.keys_read.add(k)
        return super().__getitem__(k)

    def get(self, k: Any, default: Any = None) -> Any:
        if self.keys_read is not None:
            self.keys_read.add(k)
        return super().get(k, default)

    def _all(self, name: str):
        self.keys_read = None
        return getattr(super(), name)()

    def __iter__(self):
        return iter(self._all("keys"))

    def keys(self):
        return self._all("keys")

    def values(self):
        return self._all("values")

    def items(self):
        return self._all("items")

    def used(self) -> dict:
        read = self.keys_read
        return {k: x for k, x in dict.items(self) if read is None or k in read}


class _Recorder:
    """Stands in for a spec object inside a constant while tracing: records the attributes read."""

    __slots__ = ("_obj", "_log")

    def __init__(self, obj: Any, log: set[str]):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_log", log)

    def __getattr__(self, a: str) -> Any:
        self._log.add(a)
        return getattr(self._obj, a)


def _wrap_recording(x: Any, log: set[str]) -> Any:
    if isinstance(x, tuple):
        return tuple(_wrap_recording(e, log) for e in x)
    if isinstance(x, list):
        return [_wrap_recording(e, log) for e in x]
    if isinstance(x, dict):
        return {k: _wrap_recording(e, log) for k, e in x.items()}
    if is_dataclass(x) and not isinstance(x, type):
        return _Recorder(x, log)
    return x


def _definitions(gen: _Gen, traced: bool) -> list[str]:
    out = []
    for k in gen.order:
        d = gen.deps[k]
        if d.kind in ("function", "lambda", "class", "const"):
            out.append(gen.text(d))
        elif d.kind == "repr":
            lit = pprint.pformat(d.obj, width=100, compact=True, sort_dicts=False)
            out.append(f"{d.emitted} = {lit}\n")
        elif d.kind == "calc":
            out.append(_wrapper_text(gen, d))
        elif d.kind == "loader":
            out.append("" if traced else _loader_text(gen, d))
        elif d.kind == "project":
            out.append("" if traced else _project_text(gen, d))
    return [x for x in out if x]


def generate(calc: Any, values: Mapping[str, Any]) -> Program:
    """A self-contained program computing ``calc`` on ``values`` (raw inputs, as ``calc()`` takes them).

    An input given in another unit is converted in code, from the number as given. Should such a
    program miss the registry's value by a float's last digit at a rounding edge, the conversions
    are written exactly (or, failing that, as the converted numbers).

    Raises ``CalculatorInputError`` for invalid inputs and ``CodegenError`` when the calculator
    cannot be written without calcmate.
    """
    canon = calc.validate(values)
    expected = calc(values)
    for mode in ("readable", "exact"):
        try:
            return _generate(calc, values, canon, expected, mode)
        except _ConversionMiss:
            continue
    return _generate(calc, values, canon, expected, "literal")


class _ConversionMiss(Exception):
    """The program with conversion expressions does not reproduce the registry's value exactly."""


def _generate(calc: Any, values: Mapping[str, Any], canon: dict[str, Any], expected: Any, mode: str) -> Program:
    gen = _Gen(calc)
    main = gen.compute_key(calc.compute, calc)
    gen.assign_names(main)
    fn = gen.deps[main].emitted
    raw = calc.compute(dict(canon))
    has_details = isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[1], Mapping)
    value_raw = raw[0] if has_details else raw

    v_lines = ["v = {"]
    converted = False
    for inp in calc.inputs:
        given = values.get(inp.key)
        conv = None if mode == "literal" else _conversion(inp, given, canon[inp.key], exact_only=mode == "exact")
        if conv is not None:
            converted = True
            v_lines.append(f"    {inp.key!r}: {conv.expr},  # {inp.label}, {conv.comment}")
            continue
        lit = _literal(canon[inp.key], gen)
        v_lines.append(f"    {inp.key!r}: {lit},  # {_input_comment(inp, given, canon[inp.key])}")
    v_lines.append("}")

    call = [f"value, details = {fn}(v)" if has_details else f"value = {fn}(v)"]
    call += _rounding(calc, "", value_raw)

    # trace: run the definitions with the real data loaders / spec objects, recording what is read
    tracers = {k: d for k, d in gen.deps.items() if d.kind in ("loader", "project")}
    if tracers:
        ns: dict[str, Any] = {"__name__": "calcmate_codegen_trace"}
        for d in tracers.values():
            if d.kind == "loader":
                calls = d.extra.setdefault("calls", {})

                def rec(*a, _f=d.obj, _calls=calls, **kw):
                    if kw:
                        raise CodegenError(calc.id, "a data loader is called with keyword arguments")
                    res = _f(*a)
                    if not isinstance(res, dict):
                        _calls[a] = res
                        return res
                    seen = _calls.setdefault(a, _KeyLog(res))
                    return seen

                ns[d.emitted] = rec
            else:
                ns[d.emitted] = _wrap_recording(d.obj, d.extra.setdefault("attrs", set()))
        _exec(gen, "\n".join([*(gen.imports[n] for n in sorted(gen.imports)), *_definitions(gen, True),
                              *v_lines, *call]), ns)

    imports = [gen.imports[n] for n in sorted(gen.imports, key=lambda n: (gen.imports[n].startswith("from"), gen.imports[n]))]
    prelude = "\n".join([*_header(calc), *imports, "", *v_lines, "", "", ""])
    defs = "\n\n".join(_definitions(gen, False))
    body = prelude + defs + "\n\n" + "\n".join(call) + "\n"

    ns = {"__name__": "calcmate_codegen_check"}
    _exec(gen, body, ns)
    got = ns["value"]
    if json_value(got) != json_value(expected.value) or type(got) is not type(expected.value):
        if converted:
            raise _ConversionMiss()
        raise gen.fail(f"the program computes {got!r}, the registry {expected.value!r}")
    for d in gen.deps.values():
        if d.kind in ("const", "repr") and ns.get(d.emitted) != d.obj:
            raise gen.fail(f"the constant {d.name} does not evaluate to the registry's value")
    tree = ast.parse(body)
    for n in ast.walk(tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
            if not all(_allowed(m) for m in mods):
                raise gen.fail(f"the program imports {mods}")

    out = []
    if has_details:
        out += ["for name, x in details.items():", '    print(f"{name}: {x}")']
    unit = f" {calc.output.unit}" if calc.output.unit else ""
    safe = not any(ch in calc.output.label + unit for ch in '{}"\\')
    out.append(f'print(f"{calc.output.label}: {{value}}{unit}")' if safe
               else f"print({calc.output.label + ': '!r} + str(value) + {unit!r})")
    out.append("print(json.dumps(value, default=str))  # the result, as JSON")
    code = body + "\n".join(out) + "\n"
    return Program(calc.id, code, expected.value, canon)


def _exec(gen: _Gen, text: str, ns: dict[str, Any]) -> None:
    try:
        exec(compile(text, f"<codegen {gen.calc.id}>", "exec", dont_inherit=True), ns)  # noqa: S102 - our own code
    except CodegenError:
        raise
    except Exception as e:  # the generated program is wrong: say where
        raise gen.fail(f"the program fails: {type(e).__name__}: {e}") from e
