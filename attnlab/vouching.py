"""Claims vouch for the library: the rule, the call tracer and the fault injector that test it.

The rule (docs/claims.md, "What a verdict vouches for"): a theory claim's check calls the library
function it vouches for -- the one a user gets, under ``attnlab.numerics``,
``attnlab.experiments.models``, an experiment's data code ``attnlab.experiments.<name>`` (or, for a
tool, ``attnlab``) -- on inputs that reach its edges, and
holds it against an *independent* oracle (sympy, mpmath, cvxpy, a plain transcription of the equation
as printed) under an honest tolerance.  A private re-implementation is welcome as the oracle, never as
the thing under test.  Every claim is one of three scopes (:attr:`attnlab.catalog.Claim.scope`):

``library``    it names the functions it vouches for (``vouches_for=``);
``algebra``    it is about the paper's algebra alone, no library code involved (``algebra=`` says why);
``empirical``  it reads committed training records (method ``results``).

Three tools test the rule:

* :func:`resolve` turns a dotted name (``"numerics.fenchel_attention.fenchel_attention"``, relative to
  ``attnlab``; a method as ``module.Class.method``) into the function object;
* :func:`library_calls` runs a claim and returns every library function it called (a profile hook
  sees each Python call, however the function was imported), so a test can hold ``vouches_for``
  against what the check really reached;
* :func:`inject_fault` replaces one library function, everywhere it is referenced in loaded modules
  and classes, by a copy whose floating-point outputs are perturbed; a check that vouches for that
  function must then change its verdict (tests/test_vouching.py, slow tier).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import os
import sys
from fractions import Fraction
from typing import Callable, Iterator

def _module_file_prefixes() -> dict[str, str]:
    """Folder on disk -> dotted prefix below attnlab, for the folders that hold library code."""
    import attnlab
    import attnlab.experiments
    import attnlab.experiments.models
    import attnlab.numerics

    prefixes = {
        os.path.dirname(os.path.abspath(attnlab.numerics.__file__)): "numerics",
        os.path.dirname(os.path.abspath(attnlab.experiments.models.__file__)): "experiments.models",
        os.path.dirname(os.path.abspath(attnlab.__file__)): "",
    }
    # an experiment's data code (attnlab.experiments.<name>: corpora, generators, targets) is library
    # code too: the experiments compute with it and claims may vouch for it
    root = os.path.dirname(os.path.abspath(attnlab.experiments.__file__))
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            prefixes.setdefault(folder, f"experiments.{name}")
    return prefixes


def resolve(name: str):
    """The function object that dotted `name` (below ``attnlab``) names; ValueError if none."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = "attnlab." + ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module_name)
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            raise ValueError(f"vouches_for: {name!r}: {module_name} has no {'.'.join(parts[cut:])}") from None
        obj = getattr(obj, "__func__", obj)
        if isinstance(obj, property):
            obj = obj.fget
        if not callable(obj):
            raise ValueError(f"vouches_for: {name!r} is not a function")
        return obj
    raise ValueError(f"vouches_for: {name!r} names no module below attnlab")


def qualified_name(fn) -> str:
    """The dotted name (below ``attnlab``) of library function `fn`, as :func:`resolve` reads it."""
    code = fn.__code__
    return _code_name(code, _module_file_prefixes()) or f"{fn.__module__}.{fn.__qualname__}"


def _code_name(code, prefixes: dict[str, str]) -> str | None:
    path = os.path.abspath(code.co_filename)
    folder, base = os.path.split(path)
    prefix = prefixes.get(folder)
    if prefix is None or not base.endswith(".py"):
        return None
    module = base[:-3]
    qual = getattr(code, "co_qualname", code.co_name)
    if "<locals>" in qual or qual.startswith("<"):
        return None                               # nested helpers and comprehensions are not API
    dotted = f"{prefix}.{module}" if prefix else module
    return f"{dotted}.{qual}"


def library_calls(check: Callable[[], object]) -> tuple[object, set[str]]:
    """Run `check()` under a profile hook; return its result and the library functions it called."""
    prefixes = _module_file_prefixes()
    seen: set[str] = set()
    cache: dict[object, str | None] = {}

    def hook(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        name = cache.get(code, 0)
        if name == 0:
            name = cache[code] = _code_name(code, prefixes)
        if name is not None:
            seen.add(name)

    old = sys.getprofile()
    sys.setprofile(hook)
    try:
        result = check()
    finally:
        sys.setprofile(old)
    return result, seen


def _perturb(value, rel: float, top: bool = True):
    """`value` with every floating-point number scaled by (1 + rel) (tensors, arrays, floats, containers);
    an integer (a count, an index) or an integer tensor or array (indices, buckets) returned as such, where a
    relative fault rounds away, is off by one instead (a tensor or array in its first entry); integers inside
    containers and dataclasses (sizes, settings) are left alone."""
    try:
        import torch
    except ImportError:                               # pragma: no cover
        torch = None
    import numpy as np

    if torch is not None and isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            return value * (1 + rel)
        if top and value.dtype != torch.bool and value.numel():
            value = value.clone()
            value.view(-1)[0] += 1
        return value
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.inexact):
        return value * (1 + rel)
    if top and isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.integer) and value.size:
        value = value.copy()
        value.flat[0] += 1
        return value
    if isinstance(value, float):
        return value * (1 + rel)
    if top and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return value + 1                              # a count or an index: off by one
    if isinstance(value, Fraction):                   # exact rationals stay exact: times 1 + rel as a Fraction
        return value * (1 + Fraction(rel))
    if type(value).__module__.startswith("mpmath") and type(value).__name__ in ("mpf", "mpc"):
        return value * (1 + rel)                      # an mpmath number (the library's mp_* references)
    if torch is not None and isinstance(value, torch.nn.Module):
        value = copy.deepcopy(value)                  # a model a function builds: its parameters and buffers
        with torch.no_grad():
            for t in [*value.parameters(), *value.buffers()]:
                if t.is_floating_point():
                    t.mul_(1 + rel)
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _perturb(getattr(value, f.name), rel, False)
                                             for f in dataclasses.fields(value) if f.init})
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_perturb(v, rel, False) for v in value)
    if isinstance(value, list):
        return [_perturb(v, rel, False) for v in value]
    if isinstance(value, dict):
        return {k: _perturb(v, rel, False) for k, v in value.items()}
    return value


@contextlib.contextmanager
def inject_fault(name: str, rel: float = 1e-3) -> Iterator[int]:
    """Within the block, library function `name` returns its floating-point outputs times (1 + `rel`).

    The replacement is put wherever the original is referenced: module globals (``from m import f``
    included) and class dictionaries of loaded attnlab modules.  Yields how many references were
    replaced (0 means the fault cannot reach any caller).
    """
    import functools

    original = resolve(name)

    @functools.wraps(original)
    def faulty(*args, **kwargs):
        return _perturb(original(*args, **kwargs), rel)

    replaced = []
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not mod_name.startswith("attnlab"):
            continue
        for key, val in list(vars(mod).items()):
            if val is original:
                replaced.append((vars(mod), key, val))
            elif isinstance(val, type) and val.__module__.startswith("attnlab"):
                for k2, v2 in list(vars(val).items()):
                    f2 = v2.fget if isinstance(v2, property) else getattr(v2, "__func__", v2)
                    if f2 is original:
                        replaced.append((val, k2, v2))
    seen_ids = set()
    try:
        for holder, key, val in replaced:
            if (id(holder), key) in seen_ids:
                continue
            seen_ids.add((id(holder), key))
            new = staticmethod(faulty) if isinstance(val, staticmethod) else (
                classmethod(faulty) if isinstance(val, classmethod) else (
                    property(faulty, val.fset, val.fdel, val.__doc__) if isinstance(val, property) else faulty))
            if isinstance(holder, dict):
                holder[key] = new
            else:
                setattr(holder, key, new)
        yield len(seen_ids)
    finally:
        for holder, key, val in replaced:
            if isinstance(holder, dict):
                holder[key] = val
            else:
                setattr(holder, key, val)
