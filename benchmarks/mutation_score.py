"""Mutation score of the claim catalog with cosmic-ray: does `attnlab verify` notice a fault anywhere?

cosmic-ray rewrites one operator, number, comparison or keyword at a time in a module of numerics/ or
experiments/models/ and runs a test command; here the test command is the fast claims of `attnlab
verify` that reach that module (a profile hook saw them call into it on the unmutated code), stopping at
the first claim whose verdict differs from the unmutated run.  A mutant is *killed* when some verdict
changes (an error, a skip or a timeout counts), *survives* otherwise.  The mutants are applied in a
scratch worktree of HEAD, never in the working tree, and imported from there.

    python benchmarks/mutation_score.py run numerics/tsallis.py [more modules] [--work DIR] [--timeout S]
    python benchmarks/mutation_score.py report            # docs/claims_mutations.md from the stored results
    python benchmarks/mutation_score.py unreached MAP      # public functions no fast claim calls (MAP from a run)

`run` writes one JSON per module under benchmarks/mutation_results/ (the score, and every surviving
mutant with its line and operator) as it finishes, so a sweep can be chunked across sessions; `report`
regenerates the per-module table and the survivor list of docs/claims_mutations.md; it reads each stored
run's module at the run's commit with `git show`, and refuses (one line, exit 2, the file left as it was) where
that history is not here (a copy without .git, a shallow clone).  Needs the
`mutation` extra (cosmic-ray).  Slow (seconds per mutant, thousands of mutants): run it with `nice`.
Exit status 0 whatever the score (it measures, it does not gate); `benchmarks/mutations.py` remains the
named regression set.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "mutation_results"
DOC = REPO / "docs" / "claims_mutations.md"
#: package -> folder below the repository root (as pyproject's package-dir maps them)
PACKAGES = {"attnlab": "attnlab", "attnlab.numerics": "numerics", "attnlab.experiments": "experiments",
            "attnlab.theory": "theory", "attnlab.paper_figures": "paper_figures", "attnlab.records": "results"}
MUTABLE = ("numerics/", "experiments/models/")


def use_root(root: Path) -> None:
    """Import attnlab from the tree at `root` (a scratch worktree), ahead of any installed copy."""
    import importlib.abc
    import importlib.util

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            folder = PACKAGES.get(fullname)
            if folder is None:
                return None
            d = root / folder
            return importlib.util.spec_from_file_location(fullname, d / "__init__.py",
                                                          submodule_search_locations=[str(d)])

    for name in list(sys.modules):
        if name == "attnlab" or name.startswith("attnlab."):
            del sys.modules[name]
    sys.meta_path.insert(0, Finder())


# --------------------------------------------------------------------------------------------
# in the scratch tree: the claim map (unmutated) and the per-mutant check
# --------------------------------------------------------------------------------------------

def build_map(out: Path) -> None:
    """Run every fast claim once under the call tracer: module file -> claims that reach it, verdicts."""
    from attnlab import catalog, vouching

    catalog.discover()
    reach: dict[str, list[str]] = {}
    functions: dict[str, list[str]] = {}
    verdicts, seconds, off = {}, {}, []
    claims = [c for c in catalog.all_claims(tier="fast") if c.method != "results"]
    for i, c in enumerate(claims, 1):
        t0 = time.perf_counter()
        rec, seen = vouching.library_calls(lambda: catalog.run_claim(c))
        seconds[c.id] = round(time.perf_counter() - t0, 3)
        verdicts[c.id] = rec.evidence.verdict
        if not rec.ok:                            # as `attnlab verify` judges it (a theory claim may skip)
            off.append(c.id)
        for name in seen:
            functions.setdefault(name, []).append(c.id)
            head = name.split(".")
            for cut in range(len(head), 0, -1):
                rel = "/".join(head[:cut]) + ".py"
                if (Path.cwd() / rel).is_file() or (Path.cwd() / "attnlab" / rel).is_file():
                    reach.setdefault(rel if (Path.cwd() / rel).is_file() else "attnlab/" + rel, []).append(c.id)
                    break
        print(f"\r  map {i}/{len(claims)} {c.id[:50]:50s}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    off = sorted(off)
    if off:           # a claim already off its expected verdict cannot see a mutant that breaks it again
        raise SystemExit(f"mutation_score: at {commit[:7]} {len(off)} fast claim(s) are not as expected "
                         f"({', '.join(off[:5])}): fix them before measuring the mutation score")
    out.write_text(json.dumps({"commit": commit, "reach": {k: sorted(set(v)) for k, v in reach.items()}, "verdicts": verdicts,
                               "seconds": seconds, "functions": {k: sorted(set(v)) for k, v in functions.items()}},
                              indent=1))


def public_functions(root: Path = REPO) -> dict[str, list[str]]:
    """module file -> the public functions and methods it defines (names as attnlab.vouching writes them:
    numerics.exact.softplus, experiments.models.efa.EFA.forward), read with ast: top-level functions and
    the methods of top-level classes whose names do not start with '_' (forward and __call__ count)."""
    import ast

    out: dict[str, list[str]] = {}
    for folder in MUTABLE:
        for f in sorted((root / folder).glob("*.py")):
            dotted = str(f.relative_to(root))[:-3].replace("/", ".")
            names = []
            for node in ast.parse(f.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                    names.append(f"{dotted}.{node.name}")
                elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    for m in node.body:
                        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                                not m.name.startswith("_") or m.name == "__call__"):
                            names.append(f"{dotted}.{node.name}.{m.name}")
            if names:
                out[str(f.relative_to(root))] = names
    return out


def unreached(map_file: Path) -> dict[str, list[str]]:
    """module file -> its public functions that no fast claim called when `map_file` was traced (UsageError
    when MAP cannot be read or is not a JSON object; SystemExit for a map traced before it recorded functions)."""
    from attnlab.atomic_io import read_json
    from attnlab.errors import UsageError

    try:
        data = read_json(map_file)
    except ValueError as exc:                   # (a missing file was a FileNotFoundError traceback)
        raise UsageError(f"MAP: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"MAP {map_file}: not a claim map (a JSON object written by "
                         "python benchmarks/mutation_score.py map FILE)")
    if "functions" not in data:
        raise SystemExit(f"mutation_score: {map_file} was traced before the map recorded functions: trace it "
                         "again (python benchmarks/mutation_score.py map FILE)")
    called = set(data["functions"])
    return {mod: [n for n in names if n not in called]
            for mod, names in public_functions().items() if any(n not in called for n in names)}


def check(module: str, map_file: Path) -> int:
    """Exit 1 (killed) at the first claim reaching `module` whose verdict differs from the map's; else 0."""
    from attnlab import catalog

    data = json.loads(map_file.read_text())
    ids = sorted(data["reach"].get(module, []), key=lambda i: data["seconds"].get(i, 0))
    try:
        catalog.discover()
    except SyntaxError:
        raise                       # not a valid program: no verdict (the harness reports it; nothing is stored)
    except Exception as exc:                                           # noqa: BLE001
        # the unmutated tree loaded (the map was traced on it): under this mutant the catalog itself does not
        # import, so `attnlab verify` fails outright -- a kill, not a harness failure
        print(f"killed: the catalog does not load ({type(exc).__name__}: {exc})")
        return 1
    for cid in ids:
        rec = catalog.run_claim(catalog.get_claim(cid))
        if rec.evidence.verdict != data["verdicts"][cid]:
            print(f"killed by {cid}: {data['verdicts'][cid]} -> {rec.evidence.verdict}")
            return 1
    print(f"survived {len(ids)} claims")
    return 0


# --------------------------------------------------------------------------------------------
# a warm fork server: the third-party imports (torch, scipy, sympy, mpmath) once, a fork per mutant
# --------------------------------------------------------------------------------------------

def serve(sock_path: Path) -> None:
    """Answer `check` requests on a UNIX socket, each in a forked child that imports attnlab afresh."""
    import socket

    import mpmath  # noqa: F401
    import numpy  # noqa: F401
    import scipy.special  # noqa: F401
    import sympy  # noqa: F401
    import torch

    torch.set_num_threads(1)
    sock_path.unlink(missing_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock_path))
    srv.listen(1)
    while True:
        conn, _ = srv.accept()
        with conn:
            req = json.loads(conn.makefile().readline())
            if req.get("stop"):
                return
            pid = os.fork()
            if pid == 0:                                     # the child: the mutated tree, then the claims
                code = 3
                try:
                    os.chdir(req["root"])
                    use_root(Path(req["root"]))
                    code = check(req["module"], Path(req["map"]))
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            try:
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:                                  # the asker was stopped (cosmic-ray's timeout)
                pass


def ask(sock_path: Path, root: Path, module: str, map_file: Path) -> int:
    """The test command cosmic-ray runs: one request to the fork server; its exit code is the verdict.
    A failure of the harness itself (no server, no answer, the check's own machinery raising: exit 3) is
    not a verdict: it is written to the failure marker beside the socket, and the driver discards the
    module's result instead of counting the mutant as killed."""
    import socket

    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(str(sock_path))
        c.sendall((json.dumps({"root": str(root), "module": module, "map": str(map_file)}) + "\n").encode())
        code = int(c.makefile().readline().strip() or 3)
    except (OSError, ValueError) as exc:
        code, why = 3, f"{type(exc).__name__}: {exc}"
    else:
        why = "the check's machinery raised (exit 3)"
    if code == 3:
        with open(failure_marker(sock_path), "a") as f:
            f.write(f"{module}: {why}\n")
    return 0 if code == 0 else 1


def failure_marker(sock_path: Path) -> Path:
    return Path(sock_path).with_name("harness-failures.txt")


# --------------------------------------------------------------------------------------------
# the driver (in the working tree)
# --------------------------------------------------------------------------------------------

def _head(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def _scratch(work: Path, commit: str) -> Path:
    tree = work / "tree"
    if tree.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)   # a scratch folder deleted by hand
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), commit], check=True,
                   stdout=subprocess.DEVNULL)
    return tree


def run(modules: list[str], work: Path, timeout: float, reuse_map: Path | None = None,
        commit: str | None = None, sample: int | None = None, survivors: bool = False, round_: int = 1) -> None:
    for m in modules:
        if not m.startswith(MUTABLE) or not (REPO / m).is_file():
            raise SystemExit(f"mutation_score: module {m!r}: give a file under {' or '.join(MUTABLE)}")
    work.mkdir(parents=True, exist_ok=True)
    shared = REPO.parent / "shared"                 # the data sets, seen from the scratch tree as from ours
    if shared.is_dir() and not (work / "shared").exists():
        (work / "shared").symlink_to(shared)
    tree = _scratch(work, commit or "HEAD")
    me = [sys.executable, str(Path(__file__).resolve()), "--root", str(tree)]   # this driver, not the tree's copy
    map_file = work / "map.json"
    if reuse_map is not None:
        if json.loads(reuse_map.read_text()).get("commit") != _head(tree):
            raise SystemExit(f"mutation_score: --map {reuse_map} was traced on another commit than --commit")
        if reuse_map.resolve() != map_file.resolve():
            map_file.write_text(reuse_map.read_text())
    else:
        print("tracing the fast claims on the unmutated tree ...", file=sys.stderr)
        subprocess.run(me + ["map", str(map_file)], cwd=tree, check=True)
    commit = _head(tree)
    RESULTS.mkdir(exist_ok=True)
    sock = work / "server.sock"
    sock.unlink(missing_ok=True)
    server = subprocess.Popen(me + ["serve", str(sock)], cwd=tree)
    while not sock.exists():
        if server.poll() is not None:
            raise SystemExit("mutation_score: the fork server did not start")
        time.sleep(0.5)
    try:
        _run_modules(modules, work, tree, me, map_file, sock, commit, timeout, sample, survivors, round_)
    finally:
        import socket

        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(str(sock))
        c.sendall(b'{"stop": true}\n')
        server.wait()


def _run_modules(modules, work, tree, me, map_file, sock, commit, timeout, sample=None, survivors=False,
                 round_: int = 1) -> None:
    for m in modules:
        session = work / (m.replace("/", "_") + ".sqlite")
        session.unlink(missing_ok=True)
        cfg = work / (m.replace("/", "_") + ".toml")
        cmd = " ".join([sys.executable, str(Path(__file__).resolve()), "ask", str(sock), str(tree), m, str(map_file)])
        cfg.write_text(f'[cosmic-ray]\nmodule-path = "{m}"\ntimeout = {timeout}\nexcluded-modules = []\n'
                       f'test-command = "{cmd}"\n\n[cosmic-ray.distributor]\nname = "local"\n')
        cr = str(Path(sys.executable).with_name("cosmic-ray"))
        subprocess.run([cr, "init", str(cfg), str(session)], cwd=tree, check=True)
        stored = _stored_for_recheck(m, commit) if survivors else None
        if stored is not None:
            _keep_survivors(session, stored["survivors"])
        population = _keep_sample(session, m, sample, round_) if sample else None
        invalid = _drop_invalid(session, tree / m)
        marker = failure_marker(sock)
        marker.unlink(missing_ok=True)
        t0 = time.time()
        subprocess.run([cr, "exec", str(cfg), str(session)], cwd=tree, check=True)
        if marker.exists():           # a harness failure is no verdict: store nothing for this module
            raise SystemExit(f"mutation_score: {m}: the harness failed during the run, result not stored "
                             f"(first: {marker.read_text().splitlines()[0]})")
        if stored is not None:
            _store_recheck(m, session, commit, stored)
        else:
            _store(m, session, commit, time.time() - t0, json.loads(map_file.read_text())["reach"].get(m, []),
                   population, round_, invalid)
        subprocess.run(["git", "-C", str(tree), "checkout", "--", "."], check=True)


def _stored_for_recheck(module: str, commit: str) -> dict:
    """The stored result of `module`, for re-running its survivors against the claims of `commit`: refused
    unless the module's source is the same at both commits (then the mutants are the same)."""
    path = RESULTS / (module.replace("/", "_") + ".json")
    if not path.is_file():
        raise SystemExit(f"mutation_score: --survivors: no stored result for {module}")
    stored = json.loads(path.read_text())
    same = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", stored["commit"], commit, "--", module])
    if same.returncode != 0:
        raise SystemExit(f"mutation_score: --survivors: {module} changed between {stored['commit'][:7]} and "
                         f"{commit[:7]}: run the whole module again")
    return stored


def _keep_survivors(session: Path, survivors: list[dict]) -> None:
    """Keep only the session's mutants that survived the stored run (the same operator and occurrence)."""
    from cosmic_ray.work_db import use_db

    wanted = {(sv["operator"], sv["occurrence"]) for sv in survivors}
    with use_db(str(session)) as db:
        keep = [w for w in db.work_items if (w.mutations[0].operator_name, w.mutations[0].occurrence) in wanted]
        db.clear()
        db.add_work_items(keep)


def _store_recheck(module: str, session: Path, commit: str, stored: dict) -> None:
    """The stored result with its survivors re-run against the claims of `commit`: those killed now are
    added to the killed count; the record says when and how many survivors were re-run."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import TestOutcome

    still = []
    with use_db(str(session)) as db:
        outcome = {(item.mutations[0].operator_name, item.mutations[0].occurrence): result.test_outcome
                   for item, result in db.completed_work_items}
    for sv in stored["survivors"]:
        if outcome.get((sv["operator"], sv["occurrence"])) != TestOutcome.KILLED:
            still.append(sv)
    out = dict(stored, killed=stored["killed"] + len(stored["survivors"]) - len(still), survived=len(still),
               survivors=still, survivors_rechecked={"commit": commit, "rerun": len(stored["survivors"]),
                                                     "killed_now": len(stored["survivors"]) - len(still)})
    path = RESULTS / (module.replace("/", "_") + ".json")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, path)
    print(f"{module}: survivors re-run at {commit[:7]}: {out['survivors_rechecked']['killed_now']} of "
          f"{len(stored['survivors'])} killed now; {out['killed']}/{out['mutants']} killed")


def _drop_invalid(session: Path, path: Path) -> int:
    """Drop the session's mutants that are not valid Python (an operator can write `x not in` where `not x`
    was, a unary operator into a keyword argument): no program, so no verdict; returns how many (stored as
    not counted).  Each is compiled from cosmic-ray's own mutated source of the file."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.work_db import use_db

    source = path.read_text(encoding="utf-8")
    with use_db(str(session)) as db:
        items = list(db.work_items)
        keep = []
        for item in items:
            mut = item.mutations[0]
            op = cosmic_ray.plugins.get_operator(mut.operator_name)(**(getattr(mut, "operator_args", None) or {}))
            code = mutate_code(source, op, mut.occurrence)
            try:
                if code is not None:
                    compile(code, str(path), "exec")
                keep.append(item)
            except SyntaxError:
                pass
        if len(keep) < len(items):
            db.clear()
            db.add_work_items(keep)
    return len(items) - len(keep)


def _keep_sample(session: Path, module: str, n: int, round_: int = 1) -> int:
    """Keep a random sample of n of the session's mutants (seeded by the module's path and the round, so a
    re-run draws the same ones and a later round others); returns how many there were."""
    import random

    from cosmic_ray.work_db import use_db

    with use_db(str(session)) as db:
        items = list(db.work_items)
        if len(items) > n:
            keep = random.Random(module if round_ == 1 else f"{module}#{round_}").sample(items, n)
            db.clear()
            db.add_work_items(keep)
    return len(items)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre, half = p + z * z / (2 * n), z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def _store(module: str, session: Path, commit: str, seconds: float, claims: list[str],
           population: int | None = None, round_: int = 1, invalid: int = 0) -> None:
    from cosmic_ray.work_db import use_db  # noqa: I001
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    rows, survivors, incompetent = [], [], invalid        # (mutants that are not valid Python: not counted)
    with use_db(str(session)) as db:
        for item, result in db.completed_work_items:
            mut = item.mutations[0]
            if result.worker_outcome in (WorkerOutcome.SKIPPED, WorkerOutcome.NO_TEST) or \
                    result.test_outcome == TestOutcome.INCOMPETENT:
                incompetent += 1                   # not a valid program, or not run: not counted
                continue
            killed = result.test_outcome == TestOutcome.KILLED
            rows.append(killed)
            if not killed:
                survivors.append({"line": mut.start_pos[0], "operator": mut.operator_name,
                                  "occurrence": mut.occurrence, "diff": (result.diff or "")[-600:]})
    out = {"module": module, "commit": commit, "mutants": len(rows), "killed": sum(rows),
           "survived": len(survivors), "not_counted": incompetent, "claims_reaching": len(claims), "seconds": round(seconds),
           "survivors": survivors}
    if population is not None:
        out["sampled_from"] = population          # a random sample of the module's mutants, not all of them
    if round_ > 1:
        out["round"] = round_
    stem = module.replace("/", "_") + ("" if round_ == 1 else f".round{round_}")
    tmp = RESULTS / (stem + ".json.tmp")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, RESULTS / (stem + ".json"))
    print(f"{module}: {out['killed']}/{out['mutants']} killed")


BEGIN, END = "<!-- cosmic-ray:begin (generated by python benchmarks/mutation_score.py report) -->", "<!-- cosmic-ray:end -->"


#: surviving mutants found equivalent by reading them: (module, line removed, line added) -> why, both lines
#: stripped as in the stored diff (cosmic-ray writes `a.shape[ -1]`)
BY_INSPECTION = {
    ('experiments/models/bidir_analogy.py', 'def evaluate(emb: Embeddings, questions, chunk: int = 64) -> list[dict]:',
     'def evaluate(emb: Embeddings, questions, chunk: int = 63) -> list[dict]:'):
        'the number of questions scored per batched similarity product: each question is answered from its own row, '
        'so any grouping gives the same answers: performance only',
    ('numerics/continuous_attention.py', 'big = m > 1', 'big = m >= 1'):
        "the bisection for the truncated parabola's radius on [a, b]: the two tests differ only where a midpoint's "
        "mass is exactly 1, and either way the bracket keeps the root: the same radius to the loop's 1e-15",
    ('numerics/convergence.py', 'rate = "super-exponential" if q >= 1.5 else "exponential"',
     'rate = "super-exponential" if q > 1.5 else "exponential"'):
        'the label at a fitted exponent q of exactly 1.5 (a least-squares slope of float data): the two tests '
        'differ on that one value only',
    ('numerics/fenchel_attention.py',
     'G = torch.bmm(K3, K3.transpose(-1, -2)) if K3.shape[-2] <= K3.shape[-1] else None   # (the backward\'s too)',
     'G = torch.bmm(K3, K3.transpose(-1, -2)) if K3.shape[-2] <= K3.shape[- 0] else None   # (the backward\'s too)'):
        'which solver space the exact layer takes (the S x S Gram space or the direct one, chosen by S <= E to be '
        'the cheaper): both iterate to the same residual test on the same lambda* and their backwards solve the '
        'same implicit-function system to the same tolerance (fenchel.thm1.implicit-gradients runs both): '
        'performance only',
    ('numerics/fenchel_attention.py', 'rank_one = rho >= 4', 'rank_one = rho != 4'):
        "the preconditioner of the Gram step below rho = 4 (with its rank-one part, as above 4): a preconditioner "
        "changes how many steps reach the same residual test on the same fixed point, not the fixed point "
        "(docs/layers.md measured it at rho = 3.5: one pass fewer, 15 % slower): performance only",
    ('numerics/kernel_family.py',
     'return not (fi.tiny <= scale <= fi.max and fi.tiny <= 1.0 / scale <= fi.max)',
     'return not (fi.tiny <= scale <= fi.max and fi.tiny >= 1.0 / scale <= fi.max)'):
        'whether a float32 kernel is formed in float64 and rounded back: the mutant takes that path for every '
        'scale, which gives the kernel rounded once instead of computed in float32: the same values to float32 '
        'rounding',
    ('numerics/mp_reference.py',
     'top = gpos.exp() if family == "kernel-softmax" else (1 + am1 * gpos) ** p',
     'top = gpos.exp() if family <= "kernel-softmax" else (1 + am1 * gpos) ** p'):
        "the bound U on u that decides which basis pieces are bounded rather than integrated: for the deformed "
        "family the mutant takes exp(sum gamma+) >= (1 + (alpha - 1) sum gamma+)^(1/(alpha - 1)) (log(1 + x) <= x), a "
        "larger U, so fewer pieces are bounded and more are integrated by Arb: the same verified value and radius "
        "bound, more work",
    ('experiments/models/fenchel_vit.py',
     'x = x + self.drop(self.attn(y, y, y, need_weights=False)[0])',
     'x = x + self.drop(self.attn(y, y, y, need_weights=True)[0])'):
        'the block keeps only the attention output ([0]); need_weights=True makes torch also compute the weights and take its non-fused path, whose output is the same attention to rounding: performance only',
    ('numerics/fenchel_attention.py',
     'lam = a * Z if lam0 is None else lam0',
     'lam = a % Z if lam0 is None else lam0'):
        "the start of the robust solver's iteration (alpha z, (14)); any finite start leads to the same fixed point, and the answer is the point where the solver's own residual test holds (or the warning says where it does not), which the mutant does not touch: performance only",
    ('numerics/fenchel_attention.py',
     'active = ok & (rr_new > stop)',
     'active = ok & (rr_new != stop)'):
        "rows whose residual fell below the stopping level keep iterating to the iteration budget: conjugate gradients only lower a residual already within the tolerance, and a breakdown at the rounding floor is caught by _cg_step's curvature test, which freezes the row: the same answer within the tolerance, more work",
    ('numerics/fenchel_attention.py',
     'd, rr = torch.addcmul(r, torch.where(active, rr_new / rr, 0), d), rr_new',
     'd, rr = torch.addcmul(r, torch.where(active, rr_new ** rr, 0), d), rr_new'):
        "the direction update of the last rows' conjugate gradients (the stragglers finished as a batch of their own): with another beta the iteration is a slower descent, but it stops on the same residual test, and a row it leaves unsolved is reported as the unmutated code reports one: performance only",
    ('numerics/mp_reference.py',
     'cut = mp.mpf((dps + 20) * math.log(10)) + mp.log(max(mp.fsum(abs(gi) for gi in gm), 1) * max(len(gm), 1))',
     'cut = mp.mpf((dps + 20) * math.log(10)) + mp.log(max(mp.fsum(abs(gi) for gi in gm), 1) + max(len(gm), 1))'):
        "the cut beyond which kernel terms are dropped: with log(sum |gamma| + n) for log(sum |gamma| x n) the dropped terms total at most min(sum |gamma|, n) x 10^-(dps+20), below the working precision's 10^-(dps+10) unless both exceed 10^10: equivalent at the stated precision",
    ('experiments/models/bidir_tabular.py',
     'return out[0] if len(out) == 1 and (which is not None or not isinstance(x_rows, (list, tuple))) else out',
     'return out[0] if len(out) <= 1 and (which is not None or not isinstance(x_rows, (list, tuple))) else out'):
        'predict_response refuses a list that is not one array per model (since round 7; an empty list was the only way to reach it with no output), so out has at least one entry: len(out) <= 1 is len(out) == 1',
    ('numerics/continuous_attention.py',
     'done = (new - tau0).abs() <= 4e-16 * (1 + tau0.abs())',
     'done = (new - tau0).abs() < 4e-16 * (1 + tau0.abs())'):
        "the stop of the threshold's safeguarded Newton: < and <= differ only when the step equals 4e-16 (1 + |tau|) exactly, and then the loop takes one more step from a point already at the rounding floor (the step after is below the bound): performance only",
    ('numerics/convergence.py',
     'if p.size >= 2 and np.all(ee < 1):',
     'if p.size >= 2 and np.all(ee != 1):'):
        "errors >= 1 then reach the fit of log(-log e): for e > 1 it is NaN, the slope NaN, and NaN >= 1.5 is False, so the label is 'exponential', the one the unmutated test gives them; e = 1 is excluded by both (only a RuntimeWarning differs)",
    ('numerics/entropic_ot.py',
     'm = x > 0',
     'm = x != 0'):
        'entropy refuses an x with a negative or non-finite entry (since round 7): for x >= 0, x != 0 is x > 0',
    ('numerics/fenchel_attention.py',
     'active = (rr > stop) & torch.isfinite(rr)',
     'active = (rr > stop) + torch.isfinite(rr)'):
        "the conjugate gradients' initial active set (bool + bool is a logical or): rows already within the stopping tolerance at the start take further CG steps, each lowering a residual that is already below the tolerance (the answer moves within that tolerance, where the unmutated code stops), and a row with a non-finite residual still ends at its initial guess (its curvature is not finite, so it takes no step, or its non-finite iterate is reset): performance only",
    ('numerics/fenchel_attention.py',
     'ctx.set_materialize_grads(False)',
     'ctx.set_materialize_grads(True)'):
        'with materialised gradients an output that receives no gradient arrives as zeros instead of None; the backward then adds zero contributions (a zero right-hand side solves to a zero vector): the same gradients, more work',
    ('numerics/fenchel_attention.py',
     'safe = 1.0 / (1.0 / a + k2)',
     'safe = 1.0 + (1.0 / a + k2)'):
        "the safe gradient step of the robust Newton (a fallback for a failed Newton step, then cut by the Armijo line search): the robust solver's fallback step and its line search only change the path to the answer; the answer is the point where the solver's own residual test holds (or the warning says where it does not), which the mutant does not touch: performance only",
    ('numerics/mp_reference.py',
     'gap = min(1.0 / math.sqrt(float(bandwidth)), 1.0 / math.sqrt(float(basis_bandwidth)), 1.0) / 4',
     'gap = min(1.0 // math.sqrt(float(bandwidth)), 1.0 / math.sqrt(float(basis_bandwidth)), 1.0) / 4'):
        "the least spacing to which feature breakpoints are thinned: floor division gives the same or a smaller gap, so more breakpoints are kept; every piece's integral is still checked against its error estimate and the total against the stated tolerance (mp_integrate refuses otherwise): the same reference, more pieces (performance only)",
    ('numerics/multihead.py',
     'if mask.dtype != torch.bool and not mask.dtype.is_floating_point:',
     'if mask.dtype is not torch.bool and not mask.dtype.is_floating_point:'):
        'torch dtypes are singletons: != and is not agree',
    ("numerics/entropic_ot.py",
     'if prob.status == "optimal_inaccurate" and solver == "CLARABEL" and not solver_opts:',
     'if prob.status == "optimal_inaccurate" or solver == "CLARABEL" and not solver_opts:'):
        "the SCS re-solve at eps 1e-9 (the fallback for CLARABEL's inaccurate status) then follows every default "
        "CLARABEL solve: it solves the same problem to its own tolerance and the status test after it still "
        "refuses a non-optimal answer (on instance I-ot SCS lands within 2e-16 of the Newton dual's value, "
        "CLARABEL within 9e-12): performance only",
    ("numerics/quadrature.py",
     'raise ValueError(f"y.shape[{dim}]={y.shape[dim]} must equal the number of grid nodes {w.shape[0]}")',
     'raise ValueError(f"y.shape[{dim}]={y.shape[dim]} must equal the number of grid nodes {w.shape[ -1]}")'):
        "w is the 1-D vector of trapezoid weights: shape[-1] is shape[0], the message is the same",
    ("numerics/fenchel_attention.py",
     "LAM = [a * Z, torch.empty_like(Z)]                                 # lambda, and the previous lambda",
     "LAM = [a % Z, torch.empty_like(Z)]                                 # lambda, and the previous lambda"):
        "the start of a fixed point that runs to its own residual test (or hands over to the robust solver, which "
        "starts from alpha z itself): the answer is the same (performance only)",
    ("numerics/fenchel_attention.py", "Ad.masked_fill_(~ok, 0)", "Ad.masked_fill_(~ok, -1)"):
        "the rows filled are those whose step is 0 (not ok): r - 0 * Ad is r for any finite fill; the fill only keeps "
        "inf or NaN out of 0 * Ad",
    ("numerics/multihead.py", "if m.dtype == torch.bool else shift_rows(m.to(dtype))",
     "if m.dtype is torch.bool else shift_rows(m.to(dtype))"): "torch dtypes are singletons: == and is agree",
    ("numerics/multihead.py", "if mask.dtype == torch.bool:", "if mask.dtype is torch.bool:"):
        "torch dtypes are singletons: == and is agree",
    ("numerics/continuous_attention.py", "if Psi.shape[-1] != t.shape[0]:", "if Psi.shape[-1] != t.shape[ -1]:"):
        "t is the 1-D grid (its shape checked where it is built): shape[-1] is shape[0]",
    ("experiments/models/bidir.py", "chi = self.experts(x, m)[:, 0]                                             # (B,S,V)",
     "chi = self.experts(x, m)[:, -1]                                             # (B,S,V)"):
        "Lemma 1's loss refuses any model with heads != 1 three lines above: head 0 is head -1",
    ("experiments/models/kernel_models.py", "return self.out(torch.cat([a, b], -1))",
     "return self.out(torch.cat([a, b], 1))"):
        "a (the LSTM's last state) and b (the pooled convolutions) are (batch, features): dimension 1 is dimension -1",
    ("numerics/efa_attention.py", "s = k @ q.transpose(-1, -2)", "s = k @ q.transpose(-1, 2)"):
        "q is (N, H, I, d) (scores refuses a Z that is not (N, I, width)): dimension 2 is dimension -2",
    ("numerics/convergence.py", "if p.size >= 2 and np.all(ee < 1):", "if p.size >= 2 and np.all(ee < 2):"):
        "errors in [1, 2) reach the fit: log(-log e) is NaN there, the fitted slope NaN, and NaN >= 1.5 is False, so "
        "the label is 'exponential', the one the unmutated test gives them (only a RuntimeWarning differs)",
    ("numerics/deformed_exp.py", "return mp.mpf(0) if base <= 0 else base ** (1 / (1 - beta))",
     "return mp.mpf(0) if base < 0 else base ** (1 / (1 - beta))"):
        "differs only at base = 0, where beta < 1 (beta = 1 returned above, beta > 1 refused) makes the exponent "
        "positive and 0 ** exponent = 0: the same value",
    ("numerics/validate.py", "if size is not None and a.shape[0] != size:",
     "if size is not None and a.shape[ -1] != size:"): "a is 1-D here (checked on the line above): shape[-1] is shape[0]",
    ("numerics/validate.py", 'raise ValueError(f"{name} must have length {size}; got {a.shape[0]}")',
     'raise ValueError(f"{name} must have length {size}; got {a.shape[ -1]}")'):
        "a is 1-D here: the message is the same",
    # the exact Fenchel solver's Newton phase: both change its path, not its answer (every returned lambda passes
    # the same final residual test, or goes to the robust solver); performance only
    ("numerics/fenchel_attention.py",
     "done = done | ((a * g).abs().amax(-1, keepdim=True) <= tolr(p, h) * (1 + lam.abs().amax(-1, keepdim=True)))",
     "done = done & ((a * g).abs().amax(-1, keepdim=True) <= tolr(p, h) * (1 + lam.abs().amax(-1, keepdim=True)))"):
        "rows are never marked done early: Newton runs all its iterations; the final residual test decides the "
        "answer (performance only)",
    ("numerics/fenchel_attention.py",
     "bad = ~torch.isfinite(step).all(-1, keepdim=True) | ((g * step).sum(-1, keepdim=True) < 0)",
     "bad = ~torch.isfinite(step).all(-1, keepdim=True) | ((g * step).sum(-1, keepdim=True) < -1)"):
        "a slightly non-ascent CG step is kept instead of the safe gradient step; the line search and the final "
        "residual test decide the answer (performance only)",
    ("numerics/mp_reference.py", "n = max(1, int(math.ceil(float((hi - lo) / max_piece))))",
     "n = max(1, int(math.ceil(float((hi - lo) * max_piece))))"):
        "every caller passes max_piece = MAX_PIECE = 1.0, where dividing and multiplying agree",
    ("numerics/mp_reference.py", "with mp.workdps(dps + 10):", "with mp.workdps(dps | 10):"):
        "mp_integrate's working precision: dps | 10 is 58 at the default 50 digits (60 before), still 8 guard "
        "digits; every piece's error estimate is checked against 10^-(dps-10) all the same (equivalent at the "
        "stated precision)",
    ("numerics/multihead.py", "if all(m.dtype == torch.bool for m in masks):",
     "if all(m.dtype is torch.bool for m in masks):"): "torch dtypes are singletons: == and is agree",
    ("numerics/entropic_ot.py", "g = sinkhorn(p, u, M, gamma, max_iter=100, _potentials=True)   # warm start",
     "g = sinkhorn(p, u, M, gamma, max_iter= 99, _potentials=True)   # warm start"):
        "one Sinkhorn sweep fewer in the warm start of a Newton solve that runs to its own tolerance "
        "(performance only)",
    # round 4 (a fresh sample at 9ef2a00)
    ('numerics/fenchel_attention.py',
     'half = torch.finfo(cdt).min / 2',
     'half = torch.finfo(cdt).min / 1'):
        'log u and the mask are each shifted to a largest entry of 0 before they are added, so no row overflows '
        'entirely; an entry whose sum overflows to -inf has weight exp(-inf) = 0, and the floored finite sum (below '
        '-1e308 in float64, -1.7e38 in float32) has weight 0 as well: the weights, the output and the gradients '
        'are the same',
    ('experiments/models/efa.py',
     'if method == "fast" and stack.direction == "bidirectional" and T > 1 and all_targets_exact(stack):',
     'if method == "fast" and stack.direction == "bidirectional" and T > 2 and all_targets_exact(stack):'):
        "for T = 2 targets the fast bidirectional path is left for the generic one (every target's masked copy through the stack), which computes the same logits: performance only",
    ('experiments/models/fenchel_transformers.py',
     'is_small = n < max_exact',
     'is_small = n <= max_exact'):
        'at n = max_exact both branches give max_exact: the logarithmic bucket is max_exact + floor(log(n / max_exact) ...) = max_exact there',
    ('experiments/models/fenchel_vit.py',
     'qk = (q @ k.transpose(-1, -2)).squeeze(2) / math.sqrt(self.dh)        # alpha <t, z>, alpha = 1',
     'qk = (q @ k.transpose(-1, 2)).squeeze(2) / math.sqrt(self.dh)        # alpha <t, z>, alpha = 1'):
        'k is (B, H, NA, dh), four dimensions: dimension 2 is dimension -2',
    ('numerics/entropic_dual.py',
     'floor = max(tol, 64 * _EPS * math.sqrt(1.0 + alpha) * max(1.0, float(np.abs(bt).max())) * tmax)',
     'floor = max(tol, 63 * _EPS * math.sqrt(1.0 + alpha) * max(1.0, float(np.abs(bt).max())) * tmax)'):
        "a safety factor on the floating-point floor of the stopping test (64 or 63 times eps x the problem's scale): it moves the stop only when the residual lies in a 1.6 % band at the rounding floor, where either answer is within rounding of lambda*",
    ('numerics/fenchel_attention.py',
     'if K.shape[-2] <= E:',
     'if K.shape[- 1] <= E:'):
        "which of the two fast phases solves the first-order condition (Gram space or direct): both solve it to the same tolerance, and the backward chooses its own path from the forward's saved Gram matrix; performance only",
    ('numerics/mp_reference.py',
     'break',
     'continue'):
        "both `break`s of mp_integrate's refinement loop stop it once the total estimate meets the target or no piece is above its share; with `continue` the loop goes on bisecting pieces above their share (their values change within mpmath's error estimates) or idles to max_bisections: performance only",
    ('numerics/mp_reference.py',
     'if base != "normal":',
     'if base > "normal":'):
        "mp_context_reference refuses every base but 'normal' and 'uniform' (since round 4): for those two, base > 'normal' is base != 'normal'",
    ('numerics/quadrature.py',
     'while math.erfc(L / math.sqrt(2)) >= eps and L < 60:',
     'while math.erfc(L / math.sqrt(2)) >= eps and L < 59:'):
        'L starts at 1 and grows by 0.25; for any eps in (0, 1), erfc(L / sqrt 2) falls below eps (it underflows to 0 below 5e-324) before L reaches 39, so neither L < 60 nor L < 59 ever stops the loop',
    ('numerics/quadrature.py',
     'while math.erfc(L / math.sqrt(2)) >= eps and L < 60:',
     'while math.erfc(L / math.sqrt(2)) >= eps and L != 60:'):
        'L starts at 1 and grows by 0.25 exactly (binary fractions): L != 60 and L < 60 differ only from L = 60 on, which the loop never reaches (erfc(L / sqrt 2) < eps before L = 39 for any eps in (0, 1))',
    # open survivors of earlier rounds, classed in this round's work
    ('numerics/entropic_dual.py',
     'slack = 16 * eps * (f.abs() + lse.abs() + 1)',
     'slack = 15 * eps * (f.abs() + lse.abs() + 1)'):
        "the slack of the Armijo test for rounding (16 or 15 eps x the size of the terms): it decides only steps whose gain lies within rounding of zero, near the solution, where the Newton iteration's own stopping test certifies the answer either way",
    ('numerics/entropic_ot.py',
     'if fn >= f - 1e-15 * max(1.0, abs(f)) or t < 1e-10:',
     'if fn >= f - 1e-15 * max(1.0, abs(f)) or t == 1e-10:'):
        'the floor of the backtracking in solve_ot_dual_newton: the Newton direction of the strictly concave dual is an ascent direction, so the Armijo test with its 1e-15 relative slack accepts a step long before t = 2^-34 < 1e-10; the floor is a safeguard never reached',
    ('numerics/fenchel_attention.py',
     'if n >= 2 and not x < 0.9 * best:',
     'if n >= 2 and not x < 0.9 - best:'):
        'the stall test of the direct phase (hand over when |alpha F| stops shrinking by 10 %): with it weakened the phase runs to its pass budget instead, and then hands over to the robust solver; the answer is certified by the same residual test (x <= tol) either way: performance only',
    ('numerics/fenchel_attention.py',
     '_STRAGGLERS = 1 / 16',
     '_STRAGGLERS = 1 | 16'):
        'the share of rows below which the conjugate-gradient solves finish the remaining rows as a batch of their own: the same iteration on a subset of rows, so the same answer to rounding (fenchel.thm1.implicit-gradients holds batched and alone to 3e-12): performance only',
    ('numerics/mp_reference.py', 'with ctx.workprec(int((dps + 10) * math.log2(10)) + 20):',
     'with ctx.workprec(int((dps + 11) * math.log2(10)) + 20):'):
        "mp_context_reference's Arb working precision: 11 guard digits instead of 10 over the stated dps; Arb's "
        "balls enclose the integrals at any precision, the extra bits only tighten the radii, and the returned "
        "error is max(radius, 10^-dps), which the radius (~10^-(dps+10)) does not reach either way: the same "
        "reference at the stated precision (its midpoints differ beyond dps + 10 digits), more work",
    ('numerics/mp_reference.py', 'target = rel * max(scale, mp.mpf(10) ** (-(dps + 5)))',
     'target = rel * max(scale, mp.mpf(10) % (-(dps + 5)))'):
        "the bisection loop's target without its absolute floor (10 % -(dps+5) is -(dps-5) < 0, so max() gives the "
        "scale): it differs only for integrals below 10^-(dps+5), where the loop's target becomes stricter and it "
        "only bisects more (up to max_bisections); the final test, unchanged, still decides whether the answer is "
        "returned, and a piece bisected further is at least as accurate (as for the 10x lower floor above)",
    ('numerics/multihead.py', 'for m in masks[1:]:', 'for m in masks[ 0:]:'):
        "the merged bool mask of MHA's key_padding_mask and attn_mask: the mutant ANDs ~masks[0] into keep = "
        "~masks[0] once more, and x & x = x with the same shape (keep already has masks[0]'s shape): the same "
        "mask, one elementwise pass more",
    ('numerics/fenchel_attention.py',
     'theta = (rr - rp) / (rr - 2 * rp + prev_rr).clamp_min(  # dr = r - r_prev',
     'theta = (rr - rp) / (rr - 2 % rp + prev_rr).clamp_min(  # dr = r - r_prev'):
        'the Anderson(1) mixing weight of the robust fixed point: a wrong weight only changes the iterates; the fixed point stops on its own residual test, or hands over to the Newton steps, whose stop certifies the answer: performance only',
    ('numerics/mp_reference.py',
     'max_bisections: int = 10, on_piece=None):',
     'max_bisections: int = 11, on_piece=None):'):
        'the default budget of bisection rounds before mp_integrate refuses: one more round only lets an integrand that needs 11 rounds be answered (within the same stated tolerance, checked after the rounds) instead of refused',
    # round 5 (a fresh sample at e0407d8)
    ('experiments/models/efa.py',
     'if self.n_items == 0:',
     'if self.n_items <= 0:'):
        'EFAValue refuses an item count that is not a whole number >= 0 (since round 5), so n_items <= 0 is n_items == 0 there',
    ('experiments/models/efa_theory.py',
     'w = torch.relu(q @ k.transpose(-1, -2)) / I                           # (B, M, T, I)',
     'w = torch.relu(q @ k.transpose(-1, 2)) / I                           # (B, M, T, I)'):
        'k is (B, M, I, d), four dimensions: dimension 2 is dimension -2',
    ('numerics/entropic_dual.py',
     'break',
     'continue'):
        'the `break` after the converged step of the float64 Newton: with `continue` the loop repeats converged steps at the rounding floor, each kept only if it does not raise the gradient norm, until max_iter: the answer is as good or better (performance only)',
    ('numerics/entropic_ot.py',
     'keep = u > 0',
     'keep = u >= 0'):
        "conjugate's inner sums weighted by u: a column of zero mass adds 0 x (a finite log-sum-exp) = 0; it differs only where a zero-mass column of M is +inf throughout, which neither Sec 9's instances (M(t, t) = inf on the diagonal only) nor the validated solvers' inputs have",
    ('numerics/fenchel_attention.py',
     'bad = ~torch.isfinite(x.sum(-1, keepdim=True))    # (cheaper than isfinite(x).all(-1); flags inf, nan)',
     'bad = ~torch.isfinite(x.sum(+1, keepdim=True))    # (cheaper than isfinite(x).all(-1); flags inf, nan)'):
        'the non-finite test of the conjugate-gradient start, per row (original) or per column (mutated): every non-finite entry lies in a flagged row and in a flagged column, so either way the start is finite, and CG solves to its tolerance from any finite start: performance only',
    ('numerics/fenchel_attention.py',
     'if g.shape == shape:',
     'if g.shape is shape:'):
        '_reduce_to on a gradient of the target shape: the general path sums over no dimension and returns g itself',
    ('numerics/mp_reference.py',
     'if family == "kernel-deformed":',
     'if family <= "kernel-deformed":'):
        "mp_context_reference refuses every family but 'kernel-softmax' and 'kernel-deformed' (since round 4): for those two, family <= 'kernel-deformed' is family == 'kernel-deformed'",
    # round 6 (a fresh sample at 482f354)
    ('experiments/models/bidir.py',
     'generator: torch.Generator | None = None) -> "BidirAttentionMLM":',
     'generator: torch.Generator / None = None) -> "BidirAttentionMLM":'):
        'an operator inside a type annotation spread over several lines, never evaluated (from __future__ import annotations)',
    ('experiments/models/kernel_models.py',
     'grid_size: int | None = None, kernel: str = "laplace", bandwidth: float | None = None,',
     'grid_size: int * None = None, kernel: str = "laplace", bandwidth: float | None = None,'):
        'an operator inside a type annotation spread over several lines, never evaluated (from __future__ import annotations)',
    ('numerics/fenchel_attention.py',
     'safe = 1.0 / (1.0 / a + k2)',
     'safe = 2.0 / (1.0 / a + k2)'):
        "the safe gradient step g / (1/alpha + max |t|^2) of the robust Newton, doubled: a fallback for a failed Newton step, then cut by the Armijo line search; the robust solver's fallback step and its line search only change the path to the answer; the answer is the point where the solver's own residual test holds (or the warning says where it does not), which the mutant does not touch: performance only",
    ('numerics/fenchel_attention.py',
     'safe = 1.0 / (1.0 / a + k2)',
     'safe = 1.0 / (1.0 / a * k2)'):
        "the safe gradient step's curvature bound (1/alpha x max |t|^2 instead of the sum): a fallback for a failed Newton step, then cut by the Armijo line search; the robust solver's fallback step and its line search only change the path to the answer; the answer is the point where the solver's own residual test holds (or the warning says where it does not), which the mutant does not touch: performance only",
    ('numerics/fenchel_attention.py',
     'slack = 16 * eps * (f.abs() + lse.abs() + 1)',
     'slack = 16 * eps % (f.abs() + lse.abs() + 1)'):
        "the rounding slack of the robust Newton's Armijo test (16 eps % (...) instead of 16 eps x (...)): it decides only steps whose gain lies within rounding of zero; the robust solver's fallback step and its line search only change the path to the answer; the answer is the point where the solver's own residual test holds (or the warning says where it does not), which the mutant does not touch: performance only",
    ('numerics/fenchel_attention.py',
     'if it and n_active <= _STRAGGLERS * active.numel():            # the last few: a batch of their own',
     'if it and n_active <= _STRAGGLERS - active.numel():            # the last few: a batch of their own'):
        "the threshold below which the backward's conjugate gradients finish the last rows as a batch of their own, made negative: they stay in the full batch; the same iteration on the same rows (fenchel.thm1.implicit-gradients holds batched and alone): performance only",
    ('numerics/convergence.py',
     'increasing = bool(np.all(np.diff(tail) > 0)) if tail.size > 1 else True',
     'increasing = bool(np.all(np.diff(tail) > 0)) if tail.size >= 1 else True'):
        'for a tail of one local order np.diff(tail) is empty and np.all of an empty array is True: the value of the else branch, so the two conditions give the same result for every size',
    ('numerics/fenchel_attention.py',
     'return tol + eps8 * a * ((p * kn2).sum(-1, keepdim=True) - _rowdot(h, h)).clamp_min(0)',
     'return tol + eps8 * a * ((p * kn2).sum(-1, keepdim=True) - _rowdot(h, h)).clamp_min( -1)'):
        "tr Cov_p(t) = E||t||^2 - ||E t||^2 is >= 0 exactly; the clamp only removes a negative rounding of its two-term form, where the mutant lowers the robust solver's stopping threshold (a stricter test, never a looser one): every answer it accepts passes the original test, and the searches found no input where the threshold's rounding changed an answer or a warning (float32 templates 1e2-3e3 from the origin, spread 1e-2, alpha 1e2-1e4)",
    ('numerics/fenchel_attention.py',
     'if not bool(finite.all()):               # rare: keep non-finite rows out of the updates below',
     'if  bool(finite.all()):               # rare: keep non-finite rows out of the updates below'):
        "the robust solver's CG always starts from x0 = safe * g (never from 0, so x K^T is not accumulated): a row whose curvature d^T H d overflows gets step 0 either way; unmasked, its nan reaches its own r, d and then x, and the closing 'bad' test hands back x0 for that row instead of its last finite iterate -- a direction the caller takes only after its own ascent test and line search, and the answer is the point where the solver's residual test holds: which direction a row with overflowed curvature starts from, not the answer",
    ('numerics/fenchel_attention.py',
     'LAM = [a * Z, torch.empty_like(Z)]                                 # lambda, and the previous lambda',
     'LAM = [a / Z, torch.empty_like(Z)]                                 # lambda, and the previous lambda'):
        'the start of the direct-space fixed point (alpha z, (14)): from any start it either passes its residual test, which holds only within tol of the unique lambda* of the strictly concave dual, or stops (not contracting, or a non-finite start such as alpha / 0) and hands over to the robust solver, which starts from alpha z again: which iterate it starts from, not the answer',
    ('numerics/mp_reference.py',
     'reach_psi = math.sqrt(psi_cut_f / zb_f) * (1 + 1e-9)     # beyond it u_psi is 0 as computed',
     'reach_psi = math.sqrt(psi_cut_f / zb_f) * (1 + 1.000000001)     # beyond it u_psi is 0 as computed'):
        'the reach beyond which a piece of the basis integral is taken as 0 in closed form; u_psi is 0 as computed beyond sqrt(psi_cut / basis_bandwidth) itself, so a wider reach hands more of those pieces to tanh-sinh, which integrates the zeros to 0 with error 0: the same value and error estimate, more work',
    ('numerics/efa_attention.py',
     's = (a_out @ c_ctx.transpose(-1, -2)) * self.scale    # (N, H, R, I)',
     's = (a_out @ c_ctx.transpose(-1, 2)) * self.scale    # (N, H, R, I)'):
        "c_ctx = _proj(Zk, ...) is always 4-D here, (N, H, I, d), and in a 4-D tensor dimension 2 is dimension -2: the same transpose",
    ('numerics/continuous_attention.py',
     'done = (new - tau0).abs() <= 4e-16 * (1 + tau0.abs())',
     'done = (new - tau0).abs() <= 4e-16 * (1 ** tau0.abs())'):
        "the stopping test of the bracketed Newton iteration for tau: the mutant's absolute 4e-16 is a stricter test than 4e-16 (1 + |tau|); it only runs more of the `iters` iterations, which stay inside the bracket at the root to rounding, and the same final Newton step follows: the same tau to rounding",
    ('numerics/entropic_ot.py',
     'r, c = p > 0, u > 0',
     'r, c = p > -1, u > 0'):
        'keeping the zero-mass rows of p in Sinkhorn: log 0 = -inf gives them the potential -inf, so every entry of their rows is exp(-inf) = 0, they add nothing to the column updates (logsumexp of -inf terms) and meet their marginal 0 exactly: the same plan and value (numpy warns about log 0)',
    ('numerics/fenchel_attention.py',
     'def fenchel_dual_lambda(T, logu, z, alpha, tol: float | None = None, max_iter: int = 50):',
     'def fenchel_dual_lambda(T, logu, z, alpha, tol: float | None = None, max_iter: int = 49):'):
        'the default iteration budget of the differentiable Newton: it converges in at most 30 steps on every instance we built (I-rand at alpha up to 1e8, the edge cases), so 49 instead of 50 binds only where the solve does not converge, and the solver reports that either way',
    ('numerics/fenchel_attention.py',
     'if x <= tol or bool((_inf_norm(torch.bmm(r, K)).mul_(a) <= tol * (1 + _inf_norm(lam))).all()):',
     'if x <= tol or bool((_inf_norm(torch.bmm(r, K)).mul_(a) == tol * (1 + _inf_norm(lam))).all()):'):
        "the Gram phase's exact residual test, tried when its cheap bound x is within reach: the mutant's equality almost never holds, so the phase goes on until its bound passes tol or it stops contracting, and then the direct/robust solver answers from alpha z with the same residual test: the same lambda* within tol, more work",
    ('numerics/mp_reference.py',
     'target = rel * max(scale, mp.mpf(10) ** (-(dps + 5)))',
     'target = rel * max(scale, mp.mpf(10) ** (-(dps + 6)))'):
        "the bisection loop's target for an integral below 10^-(dps+5): the mutant's floor is 10 times lower, a stricter target that only bisects more; the final test, unchanged, decides whether the answer is returned, and a piece bisected further is at least as accurate",
    ('numerics/fenchel_attention.py',
     'theta = (rr - rp) / (rr - 2 * rp + prev_rr).clamp_min(  # dr = r - r_prev',
     'theta = (rr - rp) // (rr - 2 * rp + prev_rr).clamp_min(  # dr = r - r_prev'):
        "the Anderson(1) mixing weight of the robust solver's fixed-point phase (floored): it changes only which "
        "iterates phase 1 visits; phase 1 returns only where its residual test |alpha F(lambda)|_inf <= tol (1 + "
        "|lambda|_inf) holds (within tol of the unique lambda*, by strong concavity) and otherwise hands an "
        "iterate to the Newton phase, which ends on the same test (or warns): the same lambda* within tol, "
        "performance only (measured on six instances at scores up to 100 and alpha up to 1e4: lambda within 0.002 tol of the unmutated one)",
}


# Survivors of a stored run that claims added since kill: (module, the line, the mutated line) -> the claim
# whose verdict the mutant now changes.  tests/test_claim_mutations.py (slow tier) swaps each mutant into the
# function that holds the line and asserts the verdict holds unmutated and changes mutated, so an entry cannot
# stay wrong; a re-run of the module at a later commit supersedes them.
KILLED_SINCE = {
    ('experiments/models/efa.py', 'raise ValueError(f"y: trunc(y) + value_offset must lie in [0, {self.n_values - 1}]")',
     'raise ValueError(f"y: trunc(y) + value_offset must lie in [0, {self.n_values >> 1}]")'): 'efa.sec2-2.value-model',
    ('experiments/models/bidir_tabular.py',
     'raise ValueError(f"x_rows must be one (N, {model.seq_len - 1}) array or a list of n_models = "',
     'raise ValueError(f"x_rows must be one (N, {model.seq_len >> 1}) array or a list of n_models = "'):
        'bidir.sec3-1.atn-training',
    ('experiments/models/efa.py',
     'if _INPUT_CHECKS[0] and targets.numel() and (targets.min() < 0 or targets.max() >= I):',
     'if _INPUT_CHECKS[0] and targets.numel() and (targets.min() != 0 or targets.max() >= I):'): 'efa.sec5.model-setup',
    ('experiments/models/kernel_models.py',
     'if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != length or not x.is_floating_point():',
     'if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] < length or not x.is_floating_point():'):
        'kernel.sec6.networks',
    ('experiments/models/fenchel_vit.py', 'depth: int = 4, heads: int = 4, mlp_dim: int = 128, dropout: float = 0.2,',
     'depth: int = 5, heads: int = 4, mlp_dim: int = 128, dropout: float = 0.2,'): 'fenchel.sec9.ot-vit-network',
    ('numerics/entropic_dual.py', 'first = solver_opts or (TIGHT if solver == "CLARABEL" else {})',
     'first = solver_opts or (TIGHT if solver is "CLARABEL" else {})'): 'fenchel.thm1.strong-duality',
    ('experiments/models/bidir_tabular.py', 'self.tok, self.pos = P(C + 1, d), P(seq_len, d)',
     'self.tok, self.pos = P(C + 2, d), P(seq_len, d)'): 'bidir.sec3-1.tabular-atn-block',
    ('numerics/continuous_layers.py', 'and query.shape[:-2] == ktab.shape[:-2]):',
     'and query.shape[:~2] == ktab.shape[:-2]):'): 'kernel.eq1.sequence-layer',
    ('experiments/models/fenchel_transformers.py', 'return ret + torch.where(is_small, n, large)',
     'return ret ^ torch.where(is_small, n, large)'): 'fenchel.sec8.substitute-architectures',
    ('numerics/entropic_dual.py', 'tol = 1e-12 if z.dtype == torch.float64 else 1e-5',
     'tol = 1e-12 if z.dtype == torch.float64 else 1.00001'): 'fenchel.thm1.mpmath-50-digits',
    ('numerics/efa_attention.py', 'elif scale == "sqrt_head":', 'elif scale <= "sqrt_head":'): 'efa.sec5.model-setup',
    ('experiments/models/efa.py',
     'raise ValueError(f"targets must be integer positions in [0, {I - 1}]; got dtype {targets.dtype}")',
     'raise ValueError(f"targets must be integer positions in [0, {I ** 1}]; got dtype {targets.dtype}")'):
        'efa.sec5.model-setup',
    ('numerics/continuous_attention.py', 'except (TypeError, ValueError):',
     'except (CosmicRayTestingException, ValueError):'): 'kernel.eq3.gaussian-case',
    ('experiments/models/efa.py',
     'self.value_mask = nn.Parameter(torch.empty(self.value_dim).uniform_(-0.05, 0.05))',
     'self.value_mask = nn.Parameter(torch.empty(self.value_dim).uniform_(not 0.05, 0.05))'):
        'efa.sec5.model-setup',
    ('experiments/models/fenchel_vit.py',
     'self.blocks = nn.ModuleList(Block(dim, heads, mlp_dim, dropout) for _ in range(depth - 1))',
     'self.blocks = nn.ModuleList(Block(dim, heads, mlp_dim, dropout) for _ in range(depth >> 1))'):
        'fenchel.sec9.ot-vit-network',
    ('numerics/mp_reference.py',
     'return 1 + (float(alpha) - 1) * (np.exp(-float(bandwidth) * (x[:, None] - s[None, :]) ** 2) @ g)',
     'return 1 + (float(alpha) ** 1) * (np.exp(-float(bandwidth) * (x[:, None] - s[None, :]) ** 2) @ g)'):
        'kernel.ref.wide-domain',
    ('experiments/models/kernel_models.py', 'nn.ConstantPad1d((3, 4), 0.0), nn.Conv1d(1, f1, 8), nn.BatchNorm1d(f1), nn.ReLU(),',
     'nn.ConstantPad1d((3, 4), 0.0), nn.Conv1d(1, f1, 9), nn.BatchNorm1d(f1), nn.ReLU(),'): 'kernel.table2.baselines',
    ('experiments/models/bidir_tabular.py', 'if rows.ndim != 2 or rows.shape[1] < 2:',
     'if rows.ndim != 2 or rows.shape[ 0] < 2:'): 'bidir.sec3-1.atn-training',
    ('experiments/models/fenchel_vit.py', 'if gamma <= 0:',
     'if gamma <= -1:'): 'fenchel.sec9.ot-vit-network',
    ('experiments/models/fenchel_vit.py', 'n = (image_size // patch) ** 2',
     'n = (image_size // patch) % 2'): 'fenchel.sec9.ot-vit-network',
    ('numerics/continuous_attention.py', 'shift = ((1.0 / Qm) ** (a - 1.0) - 1.0) / (a - 1.0)',
     'shift = ((1.0 / Qm) ** (a ** 1.0) - 1.0) / (a - 1.0)'): 'kernel.claim1.normalizer-bounds',
    ('numerics/continuous_attention.py', 'if H.shape[-1] != F.shape[1]:',
     'if H.shape[-1] > F.shape[1]:'): 'kernel.eq1.sequence-layer',
    ('numerics/continuous_layers.py', 'dens = u / (u @ tab.w).unsqueeze(-1)',
     'dens = u % (u @ tab.w).unsqueeze(-1)'): 'kernel.eq1.sequence-layer',
    ('numerics/convergence.py', 'if not np.all(np.isfinite(a)) or np.any(a <= 0):',
     'if not np.all(np.isfinite(a)) or np.any(a <= -1):'): 'kernel.ref.super-exponential-rate',
    ('numerics/convergence.py', 'tail = p[-last:]',
     'tail = p[not last:]'): 'kernel.ref.super-exponential-rate',
    ('numerics/expfam.py', 'if not torch.all((yy == 0) | (yy == 1)):',
     'if not torch.all((yy == 0) | (yy >= 1)):'): 'efa.eq3.expfam-loglik',
    ('numerics/quadrature.py', 'def normal_tail_half_width(eps: float = 1e-40, scale: float = 1.0) -> float:',
     'def normal_tail_half_width(eps: float = 1e-40, scale: float = 0.0) -> float:'): 'kernel.appE.trapezoid-rule',
    ('experiments/models/bidir.py', 'if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype not in (torch.int64, torch.int32):',
     'if not isinstance(x, torch.Tensor) or x.dim() > 2 or x.dtype not in (torch.int64, torch.int32):'): 'bidir.sec2-1.mlm-domain',
    ('experiments/models/efa.py', 'if self.value_embedding == "identity":',
     'if self.value_embedding is "identity":'): 'efa.sec5.model-setup',
    ('experiments/models/kernel_models.py', 'grid_size: int = 100, ref_points: int = 945, hidden: int = 256, kernel: str = "gaussian",',
     'grid_size: int = 100, ref_points: int = 944, hidden: int = 256, kernel: str = "gaussian",'): 'kernel.sec6.networks',
    ('numerics/continuous_attention.py', 'raise ValueError(f"B\'s last dim ({B.shape[-1]}) must equal the number of basis functions ({r.shape[-1]})")',
     'raise ValueError(f"B\'s last dim ({B.shape[~1]}) must equal the number of basis functions ({r.shape[-1]})")'): 'kernel.alg1.attention-module',
    ('numerics/continuous_layers.py', 'if not MIN_BANDWIDTH <= bandwidth <= MAX_BANDWIDTH:   # 1/(2 bandwidth^2) divided by zero or overflowed',
     'if not MIN_BANDWIDTH <= bandwidth != MAX_BANDWIDTH:   # 1/(2 bandwidth^2) divided by zero or overflowed'): 'kernel.eq1.sequence-layer',
    ('numerics/entropic_dual.py', 'for it in range(1, max_iter + 1):',
     'for it in range(1, max_iter + 0):'): 'fenchel.thm1.mpmath-50-digits',
    ('numerics/fenchel_attention.py', 'log_u = mask if log_u is None else log_u + mask',
     'log_u = mask if log_u is None else log_u // mask'): 'fenchel.sec7.exact-attention-mpmath',
    ('numerics/fenchel_attention.py', 'gA = (_vdot(lam, w) / (a * a)).squeeze(-1)',
     'gA = (_vdot(lam, w) / (a * a)).squeeze(- 2)'): 'fenchel.thm1.implicit-gradients',
    ('numerics/kernel_layer_math.py', 'if kind == "gaussian_mixture":',
     'if kind is "gaussian_mixture":'): 'kernel.alg1.attention-module',
    ('numerics/mp_reference.py', 'for k in range(int(math.ceil(float(a))), int(math.floor(float(b))) + 1):',
     'for k in range(int(math.ceil(float(a))), int(math.floor(float(b))) * 1):'): 'kernel.cor5.5.normalized',
    ('numerics/multihead.py', 'if query.shape[-1] == 0:',
     'if query.shape[-1] < 0:'): 'efa.eq1.torch-layer',
    ('experiments/models/bidir_tabular.py', 'idx = perm[:, i:i + cfg.batch_size]',
     'idx = perm[:, i:i | cfg.batch_size]'): 'bidir.sec3-1.atn-training',
    ('numerics/continuous_attention.py', 'u = exp_rho_beta(f_tilde, rho, 2.0 - alpha) * _q0_on_grid(q0, t, f_tilde)',
     'u = exp_rho_beta(f_tilde, rho, 2.0 - alpha) / _q0_on_grid(q0, t, f_tilde)'): 'kernel.corE5.softplus-gap',
    ('numerics/continuous_attention.py', 'hi = torch.sqrt(R0 ** 2 + 2 * s2_d / (b - a)) * 1.001 + 1e-12',
     'hi = torch.sqrt(R0 ** 2 + 2 * s2_d ** (b - a)) * 1.001 + 1e-12'): 'kernel.sec3.unimodal-densities',
    ('numerics/continuous_layers.py', 'tables = 8 * n_basis * (n_basis + S + grid_size + 2)    # the cached tables (float64 Gram, F, M, WPsi)',
     'tables = 8 - n_basis * (n_basis + S + grid_size + 2)    # the cached tables (float64 Gram, F, M, WPsi)'): 'kernel.eq1.sequence-layer',
    ('numerics/continuous_layers.py', 'MAX_TABLE_BYTES = 4 * 2 ** 30     # the input-independent tables of one (S, G, basis) key',
     'MAX_TABLE_BYTES = 4 * 2 << 30     # the input-independent tables of one (S, G, basis) key'): 'kernel.eq1.sequence-layer',
    ('numerics/efa_attention.py', 'b = None if self.in_proj_bias is None else self.in_proj_bias[j * n:(j + 1) * n]',
     'b = None if self.in_proj_bias is None else self.in_proj_bias[j * n:(j + 1) << n]'): 'efa.eq1.torch-layer',
    ('numerics/entropic_ot.py', 'if np.linalg.norm(t * step) <= tol * max(1.0, np.linalg.norm(lam)):',
     'if np.linalg.norm(t % step) <= tol * max(1.0, np.linalg.norm(lam)):'): 'fenchel.sec9.ot-duality',
    ('numerics/kernel_layer_math.py', 'keep = q0 >= 1e-3 * q0.amax(-1, keepdim=True).detach()',
     'keep = q0 >= 1e-3 ** q0.amax(-1, keepdim=True).detach()'): 'kernel.alg1.attention-module',
    ('numerics/mp_reference.py', 'target = rel * max(scale, mp.mpf(10) ** (-(dps + 5)))',
     'target = rel * max(scale, mp.mpf(10) ** (-(dps / 5)))'): 'kernel.ref.wide-domain',
    ('numerics/quadrature.py', 'm = max(1, math.ceil((hi - lo) / max_piece))',
     'm = max(1, math.ceil((hi - lo) * max_piece))'): 'kernel.appE.trapezoid-rule',
    ('numerics/quadrature.py', 'm = max(1, math.ceil((hi - lo) / max_piece))',
     'm = max(1, math.ceil((hi - lo) ** max_piece))'): 'kernel.appE.trapezoid-rule',
    ("numerics/continuous_attention.py", "narrow = 2 * r * (m.abs() + 1) <= 0.5",
     "narrow = 2 - r * (m.abs() + 1) <= 0.5"): "kernel.sec3.unimodal-densities",
    ("numerics/continuous_attention.py", "return torch.exp(log_out + log_part - log_mass[..., None]).to(dt)",
     "return torch.exp(log_out + log_part & log_mass[..., None]).to(dt)"): "kernel.sec3.unimodal-densities",
    ("numerics/continuous_attention.py", "return torch.exp(log_out + log_part - log_mass[..., None]).to(dt)",
     "return torch.exp(log_out + log_part >> log_mass[..., None]).to(dt)"): "kernel.sec3.unimodal-densities",
    ("numerics/continuous_attention.py", "return torch.exp(log_out + log_part - log_mass[..., None]).to(dt)",
     "return torch.exp(log_out << log_part - log_mass[..., None]).to(dt)"): "kernel.sec3.unimodal-densities",
    ("numerics/continuous_attention.py", "mass = _ndtr((b - mu) / sig) - _ndtr((a - mu) / sig)                       # [..., K]",
     "mass = _ndtr((b - mu) / sig) - _ndtr((a | mu) / sig)                       # [..., K]"):
        "kernel.sec3.unimodal-densities",
    ("numerics/multihead.py", "if m.dtype == torch.bool else shift_rows(m.to(dtype))",
     "if m.dtype != torch.bool else shift_rows(m.to(dtype))"): "efa.eq1.torch-layer",
    ("numerics/multihead.py", "out = add if out is None else out + add",
     "out = add if not out is None else out + add"): "efa.eq1.torch-layer",
    ("numerics/multihead.py", "out = add if out is None else out + add",
     "out = add if out is None else out // add"): "efa.eq1.torch-layer",
    ("numerics/multihead.py",
     'raise ValueError(f"key and value must have the same length S; got {key.shape[-2]} and {value.shape[-2]}")',
     'raise ValueError(f"key and value must have the same length S; got {key.shape[not 2]} and {value.shape[-2]}")'):
        "efa.eq1.torch-layer",
    ("numerics/multihead.py",
     "if batch is not None and torch.broadcast_shapes(shape[:-2], tuple(batch)) != tuple(batch):",
     "if batch is not None and torch.broadcast_shapes(shape[:not 2], tuple(batch)) != tuple(batch):"):
        "efa.eq1.torch-layer",
    ("numerics/multihead.py", "if not bool((top != 0).any()):", "if not bool((top <= 0).any()):"):
        "efa.eq1.torch-layer",
    ("numerics/quadrature.py", "if not (0 < eps < 1):", "if not (0 != eps < 1):"): "kernel.appE.trapezoid-rule",
    ("numerics/convergence.py", "def euler_maclaurin_kink_error(h: float, kinks, jumps, x0: float = 0.0,",
     "def euler_maclaurin_kink_error(h: float, kinks, jumps, x0: float = -1.0,"): "kernel.E3.euler-maclaurin-kink",
    ("numerics/convergence.py", "increasing = bool(np.all(np.diff(tail) > 0)) if tail.size > 1 else True",
     "increasing = bool(np.all(np.diff(tail) != 0)) if tail.size > 1 else True"): "kernel.ref.super-exponential-rate",
    ("numerics/entropic_ot.py",
     "terms = [u[j] * cp.log_sum_exp((A @ lam - (M[:, j] - s)) / gamma) for j, s in zip(cols, shift)]",
     "terms = [u[j] * cp.log_sum_exp((A @ lam - (M[:, j] - s)) * gamma) for j, s in zip(cols, shift)]"):
        "fenchel.sec9.ot-duality",
    ("numerics/entropic_dual.py",
     "M = eye / a.unsqueeze(-1) + p.unsqueeze(-1) * G - p.unsqueeze(-1) * pG",
     "M = eye / a.unsqueeze(-1) + p.unsqueeze(-1) * G - p.unsqueeze(+1) * pG"): "fenchel.thm1.mpmath-50-digits",
    ("numerics/fenchel_attention.py",
     "batch = torch.broadcast_shapes(K.shape[:-2], Z.shape[:-2], logu.shape[:-2], a.shape[:-2] if a.dim() else ())",
     "batch = torch.broadcast_shapes(K.shape[:-2], Z.shape[:-2], logu.shape[:- 3], a.shape[:-2] if a.dim() else ())"):
        "fenchel.sec7.exact-attention-mpmath",
    ("numerics/fenchel_attention.py", "return a * Z, Z.new_zeros(B, L, K.shape[-2]), torch.zeros_like(Z)",
     "return a ^ Z, Z.new_zeros(B, L, K.shape[-2]), torch.zeros_like(Z)"): "fenchel.sec7.exact-attention-mpmath",
    ("numerics/continuous_layers.py", "kpm = ~kpm[..., None, :] if kpm.dtype == torch.bool else kpm[..., None, :]",
     "kpm = ~kpm[..., None, :] if not kpm.dtype == torch.bool else kpm[..., None, :]"): "kernel.eq1.sequence-layer",
    ("numerics/continuous_layers.py",
     'n_basis: int = 32, grid_size: int = 256, kernel: str = "gaussian", bandwidth: float = 0.05,',
     'n_basis: int = 31, grid_size: int = 256, kernel: str = "gaussian", bandwidth: float = 0.05,'):
        "kernel.eq1.sequence-layer",
    ("numerics/continuous_layers.py", "except (TypeError, ValueError):",
     "except (CosmicRayTestingException, ValueError):"): "kernel.eq1.sequence-layer",
    ("numerics/mp_reference.py",
     "return 1 + (float(alpha) - 1) * (np.exp(-float(bandwidth) * (x[:, None] - s[None, :]) ** 2) @ g)",
     "return 1 + (float(alpha) - 1) + (np.exp(-float(bandwidth) * (x[:, None] - s[None, :]) ** 2) @ g)"):
        "kernel.ref.wide-domain",
    ("numerics/mp_reference.py", "width = 1.0 / math.sqrt(float(bw))", "width = 1.0 % math.sqrt(float(bw))"):
        "kernel.ref.narrow-kernel",
    ("experiments/models/bidir.py", "if int(m.min()) < 0 or int(m.max()) >= x.shape[1]:",
     "if int(m.min()) != 0 or int(m.max()) >= x.shape[1]:"): "bidir.sec4.eq1-is-lemma1",
    ("experiments/models/kernel_models.py", "stride = max(1, patch // 2)", "stride = max( 2, patch // 2)"):
        "kernel.table2.baselines",
    ("experiments/models/kernel_models.py", "_check_kind(kind, ATTENTIONS[1:3] + ATTENTIONS[4:])",
     "_check_kind(kind, ATTENTIONS[1:3] + ATTENTIONS[ 3:])"): "kernel.sec6.networks",
    ("experiments/models/kernel_models.py", "if not isinstance(patch, int) or not 1 <= patch <= length:",
     "if not isinstance(patch, int) or not 1 <= patch is length:"): "kernel.table2.baselines",
    ("experiments/models/kernel_models.py", "a = self.drop(a[:, -1])", "a = self.drop(a[:, +1])"):
        "kernel.table2.baselines",
    ("experiments/models/fenchel_transformers.py", 'out[f"cross/layer{i + 1}"] = layer.cross_attn',
     'out[f"cross/layer{i ^ 1}"] = layer.cross_attn'): "fenchel.sec8.substitute-architectures",
    ("experiments/models/fenchel_vit.py", "if depth < 1:", "if depth < 2:"): "fenchel.sec9.ot-vit-network",
    ("experiments/models/fenchel_vit.py",
     "same = (labels[:, None] == labels[None, :]) & ~torch.eye(B, dtype=torch.bool)",
     "same = (labels[:, None] == labels[None, :]) % ~torch.eye(B, dtype=torch.bool)"): "fenchel.sec9.ot-vit-network",
    ("experiments/models/fenchel_vit.py",
     "score = torch.rand(B, B, generator=generator).masked_fill(~same, -1.0)",
     "score = torch.rand(B, B, generator=generator).masked_fill(not same, -1.0)"): "fenchel.sec9.ot-vit-network",
    ("experiments/models/efa.py", 'raise ValueError(f"{name} must be an integer tensor of ids in [0, {n - 1}]")',
     'raise ValueError(f"{name} must be an integer tensor of ids in [0, {n | 1}]")'): "efa.eq3.expfam-loglik",
    ("experiments/models/efa_theory.py",
     "return pred if self.B_y is None else pred.clamp(-self.B_y, self.B_y)",
     "return pred if self.B_y is None else pred.clamp(not self.B_y, self.B_y)"): "efa.thm2.parameter-count",
    ("experiments/models/bidir_tabular.py", "per = nn.functional.cross_entropy(lg.reshape(M * b, -1), T[mi, idx].reshape(-1),",
     "per = nn.functional.cross_entropy(lg.reshape(M % b, -1), T[mi, idx].reshape(-1),"): "bidir.sec3-1.atn-training",
    ("experiments/models/bidir_tabular.py", "on_epoch(epoch + 1, float(np.mean(losses[-1])),",
     "on_epoch(epoch - 1, float(np.mean(losses[-1])),"): "bidir.sec3-1.atn-training",
    ("experiments/models/bidir_tabular.py",
     'raise ValueError(f"tokens must lie in 0..{mask_id - 1} (mask_id={mask_id}); got range "',
     'raise ValueError(f"tokens must lie in 0..{mask_id / 1} (mask_id={mask_id}); got range "'):
        "bidir.sec3-1.atn-training",
    ("experiments/models/bidir_tabular.py",
     "bound = math.sqrt(6.0 / (w.shape[-2] + w.shape[-1]))          # glorot_uniform (Keras)",
     "bound = math.sqrt(6.0 / (w.shape[-2] + w.shape[1]))          # glorot_uniform (Keras)"):
        "bidir.sec3-1.tabular-atn-block",
    ("numerics/kernel_family.py", "if t.ndim != 1 or s.ndim != 1:", "if t.ndim > 1 or s.ndim != 1:"):
        "kernel.sec4.kernel-expansion",
    ("numerics/kernel_family.py", "if t.ndim != 1 or s.ndim != 1:", "if t.ndim != 1 or s.ndim > 1:"):
        "kernel.sec4.kernel-expansion",
    ("numerics/kernel_family.py", "if gamma.shape[-1] != K.shape[0]:", "if gamma.shape[-1] is not K.shape[0]:"):
        "kernel.sec4.kernel-expansion",
    ("numerics/kernel_family.py",
     'raise ValueError(f"gamma\'s last dim ({gamma.shape[-1]}) must equal the number of inducing "',
     'raise ValueError(f"gamma\'s last dim ({gamma.shape[not 1]}) must equal the number of inducing "'):
        "kernel.sec4.kernel-expansion",
    ("numerics/kernel_family.py",
     'raise ValueError(f"gamma\'s last dim ({gamma.shape[-1]}) must equal the number of inducing "',
     'raise ValueError(f"gamma\'s last dim ({gamma.shape[- 0]}) must equal the number of inducing "'):
        "kernel.sec4.kernel-expansion",
    ("numerics/kernel_family.py", 'f"points ({K.shape[0]})")', 'f"points ({K.shape[ 1]})")'):
        "kernel.sec4.kernel-expansion",
    ("numerics/kernel_family.py", 'f"points ({K.shape[0]})")', 'f"points ({K.shape[ -1]})")'):
        "kernel.sec4.kernel-expansion",
    ("numerics/multihead.py",
     "if key_padding_mask is not None and tuple(key_padding_mask.shape) != (N, S):",
     "if key_padding_mask is not None and tuple(key_padding_mask.shape) > (N, S):"): "efa.eq1.torch-layer",
    ("numerics/multihead.py",
     "if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:     # vdim=3.5 was read as 3",
     "if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:     # vdim=3.5 was read as 3"):
        "efa.eq1.torch-layer",
    ("numerics/continuous_layers.py", "gx = gu @ y.transpose(-1, -2) if ctx.needs_input_grad[0] else None",
     "gx = gu @ y.transpose(1, -2) if ctx.needs_input_grad[0] else None"): "kernel.eq1.sequence-layer",
    ("numerics/continuous_layers.py", "gy = x.transpose(-1, -2) @ gu if ctx.needs_input_grad[1] else None",
     "gy = x.transpose(-1, -2) @ gu if ctx.needs_input_grad[ 0] else None"): "kernel.eq1.sequence-layer",
    ("numerics/entropic_dual.py", "g = bt - x - q[:m] / q.item(0)", "g = bt - x ** q[:m] / q.item(0)"):
        "fenchel.thm1.mpmath-50-digits",
    ("numerics/entropic_dual.py", "g = bt - x - q[:m] / q.item(0)", "g = bt ** x - q[:m] / q.item(0)"):
        "fenchel.thm1.mpmath-50-digits",
    ("experiments/models/bidir_tabular.py", "adam_eps: float = 1e-7          # Keras Adam default",
     "adam_eps: float = 1.0000001          # Keras Adam default"): "bidir.sec3-1.atn-training",
    ("numerics/mp_reference.py", "return [lo, hi, v, abs(v) * mp.mpf(10) ** (-(dps + 8))]",
     "return [lo, hi, v, abs(v) * mp.mpf(10) * (-(dps + 8))]"): "kernel.ref.wide-domain",
    ("numerics/mp_reference.py",
     "cut = mp.mpf((dps + 20) * math.log(10)) + mp.log(max(mp.fsum(abs(gi) for gi in gm), 1) * max(len(gm), 1))",
     "cut = mp.mpf((dps + 20) + math.log(10)) + mp.log(max(mp.fsum(abs(gi) for gi in gm), 1) * max(len(gm), 1))"):
        "kernel.ref.wide-domain",
    ("numerics/kernel_family.py", "return torch.sqrt(torch.clamp((g @ K * g).sum(-1), min=0.0))",
     "return torch.sqrt(torch.clamp((g @ K * g).sum(-1), min= -1.0))"): "kernel.sec4.kernel-expansion",
    ("experiments/models/bidir_analogy.py", "if not isinstance(S, int) or S < 2:",
     "if not isinstance(S, int) or S != 2:"): "bidir.app-f.analogy-protocol",
    ("experiments/models/bidir_analogy.py", "if len(w) != 4 or cat is None:", "if len(w) == 4 or cat is None:"):
        "bidir.app-f.analogy-protocol",
    ("experiments/models/bidir_analogy.py", "sims[np.arange(len(qs)), arr] = -np.inf               # exclude a, b, c",
     "sims[np.arange(len(qs)), arr] = not np.inf               # exclude a, b, c"): "bidir.app-f.analogy-protocol",
    ("experiments/models/bidir_analogy.py", "self.unit = vectors / np.maximum(norms, 1e-12)",
     "self.unit = vectors / np.maximum(norms, 1.000000000001)"): "bidir.app-f.analogy-protocol",
    ("numerics/entropic_dual.py", "gn = (mu + z - lam / a - h).norm(dim=-1)",
     "gn = (mu | z - lam / a - h).norm(dim=-1)"): "fenchel.thm1.mpmath-50-digits",
    # train_mlm (the Table 3 MLM substitute's loop) and the MLM's input domain: first round and round 2
    ("experiments/models/bidir_analogy.py",
     "model = BidirAttentionMLM(vocab_size, S, p, d=p // heads, d_w=p // heads, heads=heads, layers=1,",
     "model = BidirAttentionMLM(vocab_size, S, p, d=p * heads, d_w=p // heads, heads=heads, layers=1,"):
        "bidir.sec5.mlm-training",
    ("experiments/models/bidir_analogy.py",
     "model = BidirAttentionMLM(vocab_size, S, p, d=p // heads, d_w=p // heads, heads=heads, layers=1,",
     "model = BidirAttentionMLM(vocab_size, S, p, d=p // heads, d_w=p ^ heads, heads=heads, layers=1,"):
        "bidir.sec5.mlm-training",
    ("experiments/models/bidir_analogy.py", "b = tok.gather(1, m[:, None]).squeeze(1)",
     "b = tok.gather(1, m[:, None]).squeeze( 2)"): "bidir.sec5.mlm-training",
    ("experiments/models/bidir_analogy.py", "idx = perm[i:i + batch]", "idx = perm[i:i >> batch]"):
        "bidir.sec5.mlm-training",
    ("experiments/models/bidir_analogy.py",
     "batch: int = 256, lr: float = 3e-3, seed: int = 0, state: dict | None = None,",
     "batch: int = 256, lr: float = -0.997, seed: int = 0, state: dict | None = None,"): "bidir.sec5.mlm-training",
    ("experiments/models/bidir.py", 'raise ValueError(f"b (the masked tokens) must lie in [0, {vocab_size - 1}]")',
     'raise ValueError(f"b (the masked tokens) must lie in [0, {vocab_size ^ 1}]")'): "bidir.sec2-1.mlm-domain",
    ("experiments/models/bidir.py",
     "if isinstance(value, bool) or not isinstance(value, int) or value < minimum:",
     "if isinstance(value, bool) and not isinstance(value, int) or value < minimum:"): "bidir.sec2-1.mlm-domain",
    ("experiments/models/efa_theory.py",
     "self.V = nn.ParameterList(nn.Parameter(torch.randn(self.M, D, D) * s / math.sqrt(D)) for _ in range(self.L))",
     "self.V = nn.ParameterList(nn.Parameter(torch.randn(self.M, D, D) + s / math.sqrt(D)) for _ in range(self.L))"):
        "efa.thm2.parameter-count",
    ("experiments/models/efa_theory.py",
     "self.W1 = nn.ParameterList(nn.Parameter(torch.randn(self.Dp, D) * s / math.sqrt(D)) for _ in range(self.L))",
     "self.W1 = nn.ParameterList(nn.Parameter(torch.randn(self.Dp, D) * s ** math.sqrt(D)) for _ in range(self.L))"):
        "efa.thm2.parameter-count",
    ("numerics/deformed_exp.py", "return base if e == 1.0 else base ** e", "return base if e < 1.0 else base ** e"):
        "kernel.eq5.deformed-exp-log",
    ("numerics/entropic_ot.py", "return float(0.5 * alpha * r @ r + W)", "return float(0.5 * alpha * r @ r % W)"):
        "fenchel.sec9.ot-duality",
    ("numerics/kernel_layer_math.py", 'if family == "softmax":', 'if family is "softmax":'): "kernel.alg1.attention-module",
    # round 3 (at f152667)
    ("experiments/models/fenchel_vit.py", "c = c + self.mlp(self.n2(c))", "c = c ** self.mlp(self.n2(c))"):
        "fenchel.sec9.ot-vit-network",
    ("experiments/models/fenchel_vit.py", "self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)",
     "self.pos = nn.Parameter(torch.randn(1, n + 1, dim) % 0.02)"): "fenchel.sec9.ot-vit-network",
    ("experiments/models/fenchel_vit.py",
     "depth: int = 4, heads: int = 4, mlp_dim: int = 128, dropout: float = 0.2,",
     "depth: int = 4, heads: int = 4, mlp_dim: int = 128, dropout: float = -0.8,"): "fenchel.sec9.ot-vit-network",
    ("experiments/models/kernel_models.py", "if not isinstance(patch, int) or not 1 <= patch <= length:",
     "if not isinstance(patch, int) and not 1 <= patch <= length:"): "kernel.table2.baselines",
    ("experiments/models/bidir_tabular.py", "if xr.ndim != 2 or xr.shape[1] != model.seq_len - 1:",
     "if xr.ndim != 2 or xr.shape[1] > model.seq_len - 1:"): "bidir.sec3-1.atn-training",
    ("experiments/models/bidir_analogy.py",
     "batch: int = 256, lr: float = 3e-3, seed: int = 0, state: dict | None = None,",
     "batch: int = 256, lr: float = 3e-3, seed: int = 1, state: dict | None = None,"): "bidir.sec5.mlm-training",
    ("numerics/continuous_layers.py", "s = s + add.masked_fill(~keep, 0.0)", "s = s / add.masked_fill(~keep, 0.0)"):
        "kernel.eq1.sequence-layer",
    ("numerics/convergence.py", "run = [i for i in above if first_floor is None or i < first_floor]",
     "run = [i for i in above if first_floor is None or i != first_floor]"): "kernel.ref.super-exponential-rate",
    ("numerics/continuous_attention.py", "if f.shape[-1] != t.shape[0]:", "if f.shape[-1] > t.shape[0]:"):
        "kernel.alg1.attention-module",
    ("numerics/efa_attention.py",
     "scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else check_scale(scale)",
     "scale = 1.0 / math.sqrt(query.shape[+1]) if scale is None else check_scale(scale)"): "efa.eq1.torch-layer",
    ("numerics/efa_attention.py",
     "if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool or tuple(allowed.shape) != (N, I, I):",
     "if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool or tuple(allowed.shape) < (N, I, I):"):
        "efa.eq1.torch-layer",
    ("numerics/multihead.py",
     "query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)",
     "query, key, value = query.transpose(0, 1), key.transpose( 1, 1), value.transpose(0, 1)"): "efa.eq1.torch-layer",
    ("numerics/multihead.py", "if x.shape[-1] != d:", "if x.shape[-1] > d:"): "efa.eq1.torch-layer",
    ("numerics/continuous_layers.py", "mu = (p * pos).sum(-1)", "mu = (p * pos).sum(1)"): "kernel.eq1.sequence-layer",
    ("numerics/kernel_layer_math.py", 'if kernel == "laplace":', 'if kernel is "laplace":'):
        "kernel.alg1.attention-module",
    ("numerics/quadrature.py", "if not (math.isfinite(h) and h > 0):", "if not (math.isfinite(h) and h > -1):"):
        "kernel.appE.trapezoid-rule",
    ("numerics/expfam.py",
     "if not torch.all(torch.isfinite(yy.double())) or not torch.all(yy == torch.round(yy)) or \\",
     "if not torch.all(torch.isfinite(yy.double())) or not torch.all(yy >= torch.round(yy)) or \\"):
        "efa.eq3.expfam-loglik",
    # round 4 (a fresh sample at 9ef2a00)
    ('experiments/models/bidir_analogy.py',
     'if vectors.ndim != 2 or len(words) != vectors.shape[0]:',
     'if vectors.ndim > 2 or len(words) != vectors.shape[0]:'):
        'bidir.app-f.analogy-protocol',
    ('experiments/models/bidir_analogy.py',
     'if len(w) != 4 or cat is None:',
     'if len(w) < 4 or cat is None:'):
        'bidir.app-f.analogy-protocol',
    ('experiments/models/bidir_tabular.py',
     'if not 0.0 <= self.dropout < 1.0:',
     'if not 0.0 <= self.dropout <= 1.0:'):
        'bidir.sec3-1.atn-training',
    ('experiments/models/efa.py',
     '_INPUT_CHECKS[0] = bool(enabled)',
     '_INPUT_CHECKS[ 1] = bool(enabled)'):
        'efa.sec5.model-setup',
    ('experiments/models/efa.py',
     'nn.init.uniform_(self.delta, -bound, bound)',
     'nn.init.uniform_(self.delta, not bound, bound)'):
        'efa.sec5.model-setup',
    ('experiments/models/fenchel_transformers.py',
     'd_ff: int = 256, dropout: float = 0.1):',
     'd_ff: int = 256, dropout: float = 1.1):'):
        'fenchel.sec8.substitute-architectures',
    ('experiments/models/fenchel_vit.py',
     'best, idx = score.max(1)',
     'best, idx = score.max( 0)'):
        'fenchel.sec9.ot-vit-network',
    ('experiments/models/kernel_models.py',
     'ridge: float = 0.5, sigmas=(0.025, 0.1, 0.5), mixture_components: int = 10, setup: str = "ours"):',
     'ridge: float = 0.5, sigmas=(0.025, -0.9, 0.5), mixture_components: int = 10, setup: str = "ours"):'):
        'kernel.sec6.networks',
    ('experiments/models/kernel_models.py',
     'n_basis: int = 32, n_inducing: int = 10, grid_size: int = 100, bandwidth: float = 0.1,',
     'n_basis: int = 32, n_inducing: int = 11, grid_size: int = 100, bandwidth: float = 0.1,'):
        'kernel.sec6.networks',
    ('numerics/deformed_exp.py',
     'if not (math.isfinite(a) and 1.0 < a <= 2.0):',
     'if not (math.isfinite(a) and 0.0 < a <= 2.0):'):
        'kernel.eq5.deformed-exp-log',
    ('numerics/efa_attention.py',
     'if scale == "width":',
     'if scale is "width":'):
        'efa.sec5.model-setup',
    ('numerics/efa_attention.py',
     'bound = math.sqrt(6.0 / (W.shape[1] + W.shape[2]))',
     'bound = math.sqrt(6.0 / (W.shape[1] + W.shape[ 1]))'):
        'efa.sec5.model-setup',
    ('numerics/entropic_dual.py',
     'if space == "atoms" or (space == "auto" and T.shape[-2] < T.shape[-1]):',
     'if space == "atoms" or (space is "auto" and T.shape[-2] < T.shape[-1]):'):
        'fenchel.thm1.mpmath-50-digits',
    ('numerics/entropic_ot.py',
     'rows = np.exp(logsumexp((f[:, None] + g[None, :] - Mr) / gamma, axis=1))',
     'rows = np.exp(logsumexp((f[:, None] + g[None, :] - Mr) ** gamma, axis=1))'):
        'fenchel.sec9.ot-duality',
    ('numerics/entropic_ot.py',
     'if np.max(np.abs(rows - p[r])) < tol:',
     'if np.max(np.abs(rows + p[r])) < tol:'):
        'fenchel.sec9.ot-duality',
    ('numerics/fenchel_attention.py',
     'if x.dim() == 0:',
     'if x.dim() == 1:'):
        'fenchel.thm1.implicit-gradients',
    ('numerics/fenchel_attention.py',
     'if af != 1:',
     'if af < 1:'):
        'fenchel.thm1.implicit-gradients',
    ('numerics/fenchel_attention.py',
     'kn2 = (K * K).sum(-1).unsqueeze(-2)                                 # ||t_i||^2, (..., 1, S)',
     'kn2 = (K / K).sum(-1).unsqueeze(-2)                                 # ||t_i||^2, (..., 1, S)'):
        'fenchel.sec7.exact-attention-mpmath',
    ('numerics/kernel_layer_math.py',
     'if base == "parabola":',
     'if base is "parabola":'):
        'kernel.alg1.attention-module',
    ('numerics/mp_reference.py',
     'r = (lo + hi) / 2',
     'r = (lo & hi) / 2'):
        'kernel.ref.wide-domain',
    ('numerics/mp_reference.py',
     'if a < x < b and (not out or x - out[-1] >= width / 4):',
     'if a < x != b and (not out or x - out[-1] >= width / 4):'):
        'kernel.ref.wide-domain',
    ('numerics/mp_reference.py',
     'except (ValueError, ZeroDivisionError):',
     'except (CosmicRayTestingException, ZeroDivisionError):'):
        'kernel.ref.wide-domain',
    ('numerics/multihead.py',
     'if key.shape[:2] != value.shape[:2] or key.shape[0] != N:',
     'if key.shape[:2] != value.shape[:2] and key.shape[0] != N:'):
        'efa.eq1.torch-layer',
    # open survivors of earlier rounds, killed in this round's work
    ('experiments/models/efa.py',
     'if self.normalization == "code" and self.direction == "unidirectional":',
     'if self.normalization == "code" and self.direction is "unidirectional":'):
        'efa.sec5.model-setup',
    ('numerics/entropic_ot.py',
     'for it in range(1, max_iter + 1):',
     'for it in range(1, max_iter - 1):'):
        'fenchel.sec9.ot-duality',
    ('numerics/entropic_ot.py',
     'if fn >= f0 - 1e-15 * max(1.0, abs(f0)) or t < 1e-10:',
     'if fn >= f0 / 1e-15 * max(1.0, abs(f0)) or t < 1e-10:'):
        'fenchel.sec9.ot-duality',
    # round 5 (a fresh sample at e0407d8)
    ('experiments/models/bidir.py',
     'if not isinstance(b, torch.Tensor) or b.shape != (n,):',
     'if not isinstance(b, torch.Tensor) or b.shape is (n,):'):
        'bidir.sec2-1.mlm-domain',
    ('experiments/models/bidir.py',
     'if not (isinstance(init_std, (int, float)) and init_std > 0):',
     'if not (isinstance(init_std, (int, float)) or init_std > 0):'):
        'bidir.sec2-1.mlm-domain',
    ('experiments/models/bidir_analogy.py',
     'out.append({"category": q[0], "group": group_of(q[0]), "correct": bool(emb.words[p] == q[4]),',
     'out.append({"category": q[0], "group": group_of(q[0]), "correct": bool(emb.words[p] is q[4]),'):
        'bidir.app-f.analogy-protocol',
    ('experiments/models/fenchel_vit.py',
     'if depth < 1:',
     'if depth < 0:'):
        'fenchel.sec9.ot-vit-network',
    ('experiments/models/fenchel_vit.py',
     'ot: bool = False, gamma: float | None = None):',
     'ot: bool = True, gamma: float | None = None):'):
        'fenchel.sec9.ot-vit-network',
    ('numerics/continuous_attention.py',
     'if bool(torch.any(w < 0)) or not torch.allclose(w.sum(-1), one, atol=1e-9):',
     'if bool(torch.any(w < -1)) or not torch.allclose(w.sum(-1), one, atol=1e-9):'):
        'kernel.sec3.unimodal-densities',
    ('numerics/continuous_layers.py',
     "if t.dim() == 1 and mask is None:                       # shared positions: numerics' Eq. 6 directly",
     "if not t.dim() == 1 and mask is None:                       # shared positions: numerics' Eq. 6 directly"):
        'kernel.eq1.sequence-layer',
    ('numerics/convergence.py',
     'if h.size != e.size:',
     'if h.size is not e.size:'):
        'kernel.ref.super-exponential-rate',
    ('numerics/deformed_exp.py',
     'if beta == 1:',
     'if beta >= 1:'):
        'kernel.eq5.deformed-exp-log',
    ('numerics/efa_attention.py',
     'return efa_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0,',
     'return efa_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 1.0,'):
        'efa.eq1.torch-layer',
    ('numerics/efa_attention.py',
     'if not isinstance(Z, torch.Tensor) or Z.dim() != 3 or Z.shape[-1] != self.width:',
     'if not isinstance(Z, torch.Tensor) or Z.dim() < 3 or Z.shape[-1] != self.width:'):
        'efa.eq1.torch-layer',
    ('numerics/efa_attention.py',
     'if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool or tuple(allowed.shape) != (N, I, I):',
     'if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool or tuple(allowed.shape) > (N, I, I):'):
        'efa.eq1.torch-layer',
    ('numerics/entropic_dual.py',
     'b = u @ T + z',
     'b = u @ T ** z'):
        'fenchel.thm1.exact-identities',
    ('numerics/entropic_dual.py',
     'gn = (b - lam / a - h).norm(dim=-1)',
     'gn = (b - lam / a - h).norm(dim=1)'):
        'fenchel.thm1.mpmath-50-digits',
    ('numerics/expfam.py',
     'if not math.isfinite(s) or s <= 0:',
     'if not math.isfinite(s) or s <= -1:'):
        'efa.footnote3.gaussian-nll-mse',
    ('numerics/mp_reference.py',
     'return (mp.erf(hi / sqrt2) - mp.erf(lo / sqrt2)) / 2',
     'return (mp.erf(hi / sqrt2) - mp.erf(lo / sqrt2)) >> 2'):
        'kernel.ref.wide-domain',
    ('numerics/multihead.py',
     'if need_weights and w is not None:',
     'if need_weights or w is not None:'):
        'efa.eq1.torch-layer',
    ('numerics/multihead.py',
     'elif attn_mask.dim() == 3 and tuple(attn_mask.shape) == (N * self.num_heads, L, S):',
     'elif attn_mask.dim() == 3 and tuple(attn_mask.shape) == (N // self.num_heads, L, S):'):
        'efa.eq1.torch-layer',
    ('numerics/multihead.py',
     'unbatched = query.dim() == 2',
     'unbatched = query.dim() < 2'):
        'efa.eq1.torch-layer',
    ('numerics/multihead.py',
     'raise ValueError(f"query and key must share the last dimension E; got {query.shape[-1]} and {key.shape[-1]}")',
     'raise ValueError(f"query and key must share the last dimension E; got {query.shape[-1]} and {key.shape[+1]}")'):
        'efa.eq1.torch-layer',
    ('numerics/multihead.py',
     'if not (math.isfinite(v) and v > 0):',
     'if not (math.isfinite(v) or v > 0):'):
        'kernel.eq1.sequence-layer',
    ('numerics/quadrature.py',
     'if not (math.isfinite(L) and L > 0):',
     'if not (math.isfinite(L) and L > -1):'):
        'kernel.appE.trapezoid-rule',
    # round 6 (a fresh sample at 482f354)
    ('experiments/models/bidir_analogy.py',
     'if vectors.ndim != 2 or len(words) != vectors.shape[0]:',
     'if vectors.ndim != 2 or len(words) is not vectors.shape[0]:'):
        'bidir.app-f.analogy-protocol',
    ('experiments/models/bidir_analogy.py',
     'if not isinstance(S, int) or S < 2:',
     'if not isinstance(S, int) and S < 2:'):
        'bidir.app-f.analogy-protocol',
    ('experiments/models/efa.py',
     'if tau.ndim != 3 or tuple(tau.shape[:2]) != (B, I) or tau.shape[-1] != attr_dim:',
     'if tau.ndim < 3 or tuple(tau.shape[:2]) != (B, I) or tau.shape[-1] != attr_dim:'):
        'efa.sec5.model-setup',
    ('experiments/models/efa_theory.py',
     'if tau.shape != (B, I, self.tau_dim):',
     'if tau.shape < (B, I, self.tau_dim):'):
        'efa.thm2.loss-bound-lipschitz',
    ('experiments/models/efa_theory.py',
     'if v is not None and not (math.isfinite(v) and v > 0):',
     'if v is not None and not (math.isfinite(v) and v >= 0):'):
        'efa.thm2.loss-bound-lipschitz',
    ('experiments/models/fenchel_transformers.py',
     'return {f"layer{i + 1}": layer.attn for i, layer in enumerate(self.layers)}',
     'return {f"layer{i ^ 1}": layer.attn for i, layer in enumerate(self.layers)}'):
        'fenchel.sec8.substitute-architectures',
    ('experiments/models/fenchel_transformers.py',
     'if self.capture is not None:',
     'if not self.capture is not None:'):
        'fenchel.sec8.substitute-architectures',
    ('experiments/models/kernel_models.py',
     'ff: int = 128, dropout: float = 0.1, patch: int = 1):',
     'ff: int = 128, dropout: float = 0.1, patch: int = 0):'):
        'kernel.table2.baselines',
    ('numerics/efa_attention.py',
     'if dropout_p > 0:',
     'if dropout_p < 0:'):
        'efa.eq1.torch-layer',
    ('numerics/entropic_dual.py',
     'it = 0',
     'it = 1'):
        'fenchel.thm1.mpmath-50-digits',
    ('numerics/expfam.py',
     'if not torch.all(torch.isfinite(r)) or not torch.all(r > 1):',
     'if not torch.all(torch.isfinite(r)) or not torch.all(r >= 1):'):
        'efa.footnote3.gaussian-nll-mse',
    ('numerics/mp_reference.py',
     'share = target / len(pieces)',
     'share = target & len(pieces)'):
        'kernel.ref.wide-domain',
    ('numerics/multihead.py',
     'if attn_mask.dim() == 2 and tuple(attn_mask.shape) == (L, S):',
     'if attn_mask.dim() == 2 and tuple(attn_mask.shape) is not (L, S):'):
        'efa.eq1.torch-layer',
    ('numerics/multihead.py',
     'self._packed = self.kdim == E and self.vdim == E',
     'self._packed = self.kdim <= E and self.vdim == E'):
        'efa.eq1.torch-layer',
    ('experiments/models/bidir.py',
     'if p < V or p < S + 1:',
     'if p < V or p < S // 1:'):
        'bidir.thm2.image-constraints',
    ('experiments/models/bidir_analogy.py',
     '"generator": g.get_state(), "losses": losses, "epoch": ep + 1})',
     '"generator": g.get_state(), "losses": losses, "epoch": ep | 1})'):
        'bidir.sec5.mlm-training',
    ('experiments/models/bidir_tabular.py',
     'torch.manual_seed(seeds[0] * 100003 + epoch)',
     'torch.manual_seed(seeds[0] - 100003 + epoch)'):
        'bidir.sec3-1.atn-training',
    ('experiments/models/bidir_tabular.py',
     'if len(seeds) != M:',
     'if len(seeds) > M:'):
        'bidir.sec3-1.atn-training',
    ('experiments/models/efa_theory.py',
     'def __init__(self, K: int = 4, tau_dim: int = 2, Kp: int = 16, layers: int = 1, heads: int = 2,',
     'def __init__(self, K: int = 4, tau_dim: int = 2, Kp: int = 16, layers: int = 1, heads: int = 1,'):
        'efa.thm2.loss-bound-lipschitz',
    ('numerics/continuous_layers.py',
     'and query.shape[:-2] == ktab.shape[:-2]):',
     'and query.shape[:2] == ktab.shape[:-2]):'):
        'kernel.eq1.sequence-layer',
    ('numerics/entropic_dual.py',
     'floor = max(tol, 64 * _EPS * math.sqrt(1.0 + alpha) * max(1.0, float(np.abs(bt).max())) * tmax)',
     'floor = max(tol, 64 * _EPS * math.sqrt(1.0 * alpha) * max(1.0, float(np.abs(bt).max())) * tmax)'):
        'fenchel.thm1.mpmath-50-digits',
    ('numerics/entropic_dual.py',
     'if best is None or res < best[2]["kkt_residual"]:',
     'if best is None or res == best[2]["kkt_residual"]:'):
        'fenchel.thm1.strong-duality',
    ('numerics/mp_reference.py',
     'share = target / len(pieces)',
     'share = target % len(pieces)'):
        'kernel.ref.wide-domain',
    ('numerics/mp_reference.py',
     'target = rel * max(scale, mp.mpf(10) ** (-(dps + 5)))',
     'target = rel * max(scale, mp.mpf( 9) ** (-(dps + 5)))'):
        'kernel.ref.wide-domain',
    ('numerics/expfam.py',
     'raise ValueError(f"{name} must hold integers in [0, {self.n_classes - 1}]")',
     'raise ValueError(f"{name} must hold integers in [0, {self.n_classes & 1}]")'):
        'efa.eq3.expfam-loglik',
    ('numerics/fenchel_attention.py',
     'Hd = torch.baddbmm(d, Cd, K, beta=1 / af) if af is not None else torch.bmm(Cd, K).addcmul_(d, 1 / a)',
     'Hd = torch.baddbmm(d, Cd, K, beta=1 // af) if af is not None else torch.bmm(Cd, K).addcmul_(d, 1 / a)'):
        'fenchel.thm1.implicit-gradients',
    ('numerics/mp_reference.py',
     'gap = min(1.0 / math.sqrt(float(bandwidth)), 1.0 / math.sqrt(float(basis_bandwidth)), 1.0) / 4',
     'gap = min(1.0 / math.sqrt(float(bandwidth)), 1.0 / math.sqrt(float(basis_bandwidth)), 1.0) % 4'):
        'kernel.ref.wide-domain',
    ('numerics/mp_reference.py',
     'if err > rel * max(abs(total), mp.mpf(10) ** (-(dps + 5))):',
     'if err > rel * max(abs(total), mp.mpf(10) ** (+(dps + 5))):'):
        'kernel.ref.wide-domain',
    ('numerics/mp_reference.py',
     'pts = sorted({float(a), float(b)} | {float(x) for x in breakpoints if a < x < b})',
     'pts = sorted({float(a), float(b)} | {float(x) for x in breakpoints if a < x > b})'):
        'kernel.ref.wide-domain',
    ('numerics/mp_reference.py',
     'f"needed: {what} <= {(1.0 / (RESOLVABLE * where)) ** 2:.3g}); no reference returned")',
     'f"needed: {what} <= {( 0.0 / (RESOLVABLE * where)) ** 2:.3g}); no reference returned")'):
        'kernel.ref.narrow-kernel',
    ('numerics/multihead.py',
     'out = out + (query.sum() + key.sum() + value.sum()).mul(0).nan_to_num(0.0).to(dtype)',
     'out = out << (query.sum() + key.sum() + value.sum()).mul(0).nan_to_num(0.0).to(dtype)'):
        'kernel.eq1.sequence-layer',
    ('numerics/quadrature.py',
     'if isinstance(G, bool) or int(G) != G or G < 2:',
     'if isinstance(G, bool) or int(G) != G or G < 1:'):
        'kernel.appE.trapezoid-rule',
    ('numerics/quadrature.py',
     'def normal_tail_half_width(eps: float = 1e-40, scale: float = 1.0) -> float:',
     'def normal_tail_half_width(eps: float = 1.0, scale: float = 1.0) -> float:'):
        'kernel.appE.trapezoid-rule',
    ('experiments/models/efa.py',
     'self.alpha = nn.Parameter(torch.empty(self.n_items, self.dim).uniform_(-0.05, 0.05))',
     'self.alpha = nn.Parameter(torch.empty(self.n_items, self.dim).uniform_(- 1.05, 0.05))'):
        'efa.sec5.model-setup',
    ('numerics/convergence.py',
     'if p[-1] > order_threshold and (p.size == 1 or np.all(np.diff(p) > -0.5)):',
     'if p[-1] > order_threshold and (p.size == 1 or np.all(np.diff(p) >= -0.5)):'):
        'kernel.ref.super-exponential-rate',
    ('numerics/convergence.py',
     'def rate_parts(h, err, floor: float, labels=None, order_threshold: float = 6.0) -> dict:',
     'def rate_parts(h, err, floor: float, labels=None, order_threshold: float = 5.0) -> dict:'):
        'kernel.ref.super-exponential-rate',
    ('numerics/entropic_dual.py',
     'if status == "optimal" and res <= kkt_tol:',
     'if status >= "optimal" and res <= kkt_tol:'):
        'fenchel.thm1.strong-duality',
    ('numerics/entropic_dual.py',
     'if status == "optimal" and res <= kkt_tol:',
     'if status > "optimal" and res <= kkt_tol:'):
        'fenchel.thm1.strong-duality',
    ('numerics/entropic_dual.py',
     'for it in range(1, max_iter + 1):',
     'for it in range(1, max_iter << 1):'):
        'fenchel.thm1.mpmath-50-digits',
    ('numerics/entropic_dual.py',
     'if fn < f - slack:             # no ascent even at the smallest step: rounding floor',
     'if fn < f * slack:             # no ascent even at the smallest step: rounding floor'):
        'fenchel.thm1.mpmath-50-digits',
    ('numerics/multihead.py',
     'elif attn_mask.dim() == 3 and tuple(attn_mask.shape) == (N * self.num_heads, L, S):',
     'elif attn_mask.dim() == 3 and tuple(attn_mask.shape) >= (N * self.num_heads, L, S):'):
        'efa.eq1.torch-layer',
    ('numerics/multihead.py',
     'f"({N * self.num_heads}, {L}, {S}); got {tuple(attn_mask.shape)}")',
     'f"({N & self.num_heads}, {L}, {S}); got {tuple(attn_mask.shape)}")'):
        'efa.eq1.torch-layer',
    ('numerics/kernel_family.py', 'return torch.exp(-z * d.double() ** 2).to(d.dtype)',
     'return torch.exp(+z * d.double() ** 2).to(d.dtype)'): 'kernel.sec4.kernel-expansion',
    ('numerics/kernel_family.py',
     'if _beyond(1.0 / sc, d):      # a scale float32 rounds to 0 (below ~1e-45): 0 / 0 on the diagonal',
     'if _beyond(1.0 % sc, d):      # a scale float32 rounds to 0 (below ~1e-45): 0 / 0 on the diagonal'):
        'kernel.sec4.kernel-expansion',
    ('numerics/fenchel_attention.py',
     'bad = ~torch.isfinite(step).all(-1, keepdim=True) | ((g * step).sum(-1, keepdim=True) < 0)',
     'bad = ~torch.isfinite(step).all(-1, keepdim=True) | ((g / step).sum(-1, keepdim=True) < 0)'):
        'fenchel.sec7.exact-attention-mpmath',
    ('numerics/expfam.py',
     'dt = torch.promote_types(out.dtype, y.dtype) if torch.is_tensor(y) and y.is_floating_point() else out.dtype',
     'dt = torch.promote_types(out.dtype, y.dtype) if torch.is_tensor(y) or y.is_floating_point() else out.dtype'):
        'efa.eq3.expfam-loglik',
    ('numerics/expfam.py', 'discrete = True', 'discrete = False'): 'efa.eq3.expfam-loglik',
    ('numerics/quadrature.py', 'if n < 2:', 'if n == 2:'): 'kernel.appE.trapezoid-rule',
    ('numerics/multihead.py', 'if isinstance(mask, str) or isinstance(mask, numbers.Number):',
     'if isinstance(mask, str) and isinstance(mask, numbers.Number):'): 'efa.eq1.torch-layer',
    ('numerics/multihead.py',
     'out = out + (query.sum() + key.sum() + value.sum()).mul(0).nan_to_num(0.0).to(dtype)',
     'out = out + (query.sum() + key.sum() ** value.sum()).mul(0).nan_to_num(0.0).to(dtype)'):
        'kernel.eq1.sequence-layer',
    ('numerics/convergence.py', 'if p.size >= 2 and np.all(ee < 1):', 'if p.size >= 1 and np.all(ee < 1):'):
        'kernel.ref.super-exponential-rate',
    ('numerics/convergence.py',
     'return "at floor" + (f" from {parts[\'floor_from\']}" if parts["floor_from"] is not None else "")',
     'return "at floor" + (f" from {parts[\'floor_from\']}" if parts["floor_from"] is None else "")'):
        'kernel.ref.super-exponential-rate',
    ('numerics/entropic_dual.py', 'return k if abs(k) > 8 else 0', 'return k if abs(k) > 9 else 0'):
        'fenchel.thm1.mpmath-50-digits',
    ('experiments/models/bidir_analogy.py',
     'out = {grp: stats([r for r in results if grp == "overall" or r["group"] == grp])',
     'out = {grp: stats([r for r in results if grp == "overall" or r["group"] is grp])'):
        'bidir.app-f.analogy-protocol',
    ('experiments/models/bidir_tabular.py', 'layer_norm_eps: float = 1e-6', 'layer_norm_eps: float = 1.000001'):
        'bidir.sec3-1.tabular-atn-block',
}


def killed_since(module: str, survivor: dict) -> str | None:
    """The claim that kills a stored survivor now (KILLED_SINCE), or None."""
    lines = _changed_lines(survivor)
    return KILLED_SINCE.get((module, *lines)) if lines is not None else None


def removed_since(module: str, survivor: dict) -> bool:
    """Whether the line a stored survivor mutated is gone from the module's present source (the code was
    deleted since the run): such a mutant cannot be tested any more and is counted apart."""
    lines = _changed_lines(survivor)
    path = REPO / module
    if lines is None or not path.is_file():
        return False
    core = lines[0].rstrip("):,")                   # a line extended since (a new parameter) is not deleted
    return all(core not in ln for ln in path.read_text(encoding="utf-8").splitlines())


def _changed_lines(survivor: dict) -> tuple[str, str] | None:
    text = survivor.get("diff", "").splitlines()
    hunk = [i for i, ln in enumerate(text) if ln.startswith("@@")]
    # the lines of the hunk (the stored diff keeps its last 600 characters: a header cut in two, "++ b/...",
    # is not a changed line)
    # (or a hunk header cut in front of its "@@": "-176,7 +176,7 @@ ...")
    body = text[hunk[-1] + 1:] if hunk else [ln for ln in text if not ln.startswith(("++ b/", "-- a/"))
                                             and not re.match(r"-\d+(,\d+)? \+\d+(,\d+)? @@", ln)]
    diff = [ln for ln in body if ln[:1] in "+-" and ln[:3] not in ("+++", "---") and ln[1:].strip()]  # blank: nothing
    removed = [ln[1:].strip() for ln in diff if ln.startswith("-")]
    added = [ln[1:].strip() for ln in diff if ln.startswith("+")]
    return (removed[0], added[0]) if len(removed) == len(added) == 1 else None


def why_equivalent(module: str, commit: str, survivor: dict) -> str | None:
    """Why a surviving mutant cannot change behaviour, or None: listed in BY_INSPECTION, or an operator
    swapped in an annotation (equivalent)."""
    lines = _changed_lines(survivor)
    if lines is not None and (module, *lines) in BY_INSPECTION:
        return BY_INSPECTION[(module, *lines)]
    if equivalent(module, commit, survivor):
        return "an operator inside a type annotation, never evaluated (from __future__ import annotations)"
    return None


def equivalent(module: str, commit: str, survivor: dict) -> bool:
    """A surviving mutant that cannot change behaviour: an operator swapped inside type annotations
    (`int | None` -> `int & None`) in a module with ``from __future__ import annotations``, where annotations
    are never evaluated -- every `|` of the mutated line lies inside an annotation (of a parameter, a return
    or an annotated assignment, on one line or spread over several), as ast reads the module's source at
    the run's commit."""
    if not survivor["operator"].startswith("core/ReplaceBinaryOperator_BitOr_"):
        return False
    text = source_at(module, commit)
    src = text.splitlines()
    if "from __future__ import annotations" not in src or not 0 < survivor["line"] <= len(src):
        return False
    n = survivor["line"]
    line = src[n - 1]
    bars = [k for k, ch in enumerate(line) if ch == "|"]
    spans = _annotation_spans(text)
    return bool(bars) and all(any(_inside(span, n, k) for span in spans) for k in bars)


def source_at(module: str, commit: str) -> str:
    """The text of `module` at `commit`, read with `git show`; UsageError when git cannot give it (no git, a copy
    without .git, a shallow clone without that commit): its empty output was read as a module without
    annotations, no survivor was classed equivalent, and `report` rewrote the scores lower."""
    from attnlab.errors import UsageError

    try:
        done = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{module}"], capture_output=True, text=True)
    except OSError as exc:
        why = exc.strerror or str(exc)
    else:
        if done.returncode == 0:
            return done.stdout
        why = " ".join(done.stderr.split()) or f"exit code {done.returncode}"
    raise UsageError(f"needs the git history of the stored runs: git show {commit[:12]}:{module} in {REPO} "
                     f"failed ({why[:200]}); run it in a full clone (not a copy without .git or a shallow clone); "
                     f"{DOC.name} is left as it was")


def _annotation_spans(text: str) -> list[tuple[int, int, int, int]]:
    """(line, col, end line, end col) of every annotation in the module (parameters, returns, annotated
    assignments)."""
    import ast

    nodes = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]
            nodes += [p.annotation for p in params if p.annotation is not None]
            if node.returns is not None:
                nodes.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            nodes.append(node.annotation)
    return [(x.lineno, x.col_offset, x.end_lineno, x.end_col_offset) for x in nodes]


def _inside(span: tuple[int, int, int, int], line: int, col: int) -> bool:
    l0, c0, l1, c1 = span
    return (l0 < line or (l0 == line and col >= c0)) and (line < l1 or (line == l1 and col < c1))


def report() -> None:
    """Replace the generated block of docs/claims_mutations.md by the per-module table and the survivors
    (equivalent mutants, :func:`equivalent`, counted apart and left out of the score)."""
    rows = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    lines = ["| module | commit | mutants | killed | equivalent | score (of the non-equivalent) | not counted | "
             "claims reaching it | seconds |", "|---|---|---|---|---|---|---|---|---|"]
    killed = counted = since = 0
    s_killed = s_counted = s_since = 0                 # the sampled modules' first rounds alone
    f_killed = f_counted = 0                           # later rounds: fresh samples at a later commit
    by_round: dict[int, list[int]] = {}                # round -> [killed, counted] of the later rounds
    for r in rows:
        r["equivalent"] = [sv for sv in r["survivors"] if why_equivalent(r["module"], r["commit"], sv)]
        r["removed"] = [sv for sv in r["survivors"] if sv not in r["equivalent"] and removed_since(r["module"], sv)]
        n = r["mutants"] - len(r["equivalent"]) - len(r["removed"])
        killed, counted = killed + r["killed"], counted + n
        k_since = sum(killed_since(r["module"], sv) is not None for sv in r["survivors"]
                      if sv not in r["equivalent"] and sv not in r["removed"])
        since += k_since
        if "sampled_from" in r and r.get("round", 1) == 1:
            s_killed, s_counted, s_since = s_killed + r["killed"], s_counted + n, s_since + k_since
        elif r.get("round", 1) > 1:
            f_killed, f_counted = f_killed + r["killed"], f_counted + n
            kc = by_round.setdefault(r["round"], [0, 0, 0])
            by_hand = sum(_changed_lines(sv) is not None and (r["module"], *_changed_lines(sv)) in BY_INSPECTION
                          for sv in r["equivalent"])
            kc[0], kc[1], kc[2] = kc[0] + r["killed"], kc[1] + n, kc[2] + by_hand
        score = f"{100 * r['killed'] / n:.1f}%" if n else "-"
        if n and "sampled_from" in r:
            lo, hi = wilson(r["killed"], n)
            score += f" (sample of {r['mutants'] + r.get('not_counted', 0)} of {r['sampled_from']}; 95% CI {100 * lo:.0f}-{100 * hi:.0f}%)"
        when = r["commit"][:7] + (f" (sample round {r['round']})" if r.get("round", 1) > 1 else "")
        if "survivors_rechecked" in r:
            when += f" (its {r['survivors_rechecked']['rerun']} survivors re-run at {r['survivors_rechecked']['commit'][:7]})"
        lines.append(f"| `{r['module']}` | {when} | {r['mutants']} | {r['killed']} | {len(r['equivalent'])} | "
                     f"{score} | {r.get('not_counted', 0)} | {r['claims_reaching']} | {r['seconds']} |")
    if counted:
        sampled = sum("sampled_from" in r for r in rows)
        lines += ["", f"Over the {len(rows)} modules run so far ({sampled} of them on a random sample of their "
                      f"mutants): {killed} of {counted} non-equivalent mutants tested were killed "
                      f"({100 * killed / counted:.1f}%) at the commits in the table; with the {since} survivors that "
                      f"claims added since kill (below, each re-applied by tests/test_claim_mutations.py), "
                      f"{killed + since} of {counted} ({100 * (killed + since) / counted:.1f}%)."]
        if s_counted:
            lo, hi = wilson(s_killed, s_counted)
            lines += ["", f"The fully run modules weigh most in that total.  The sampled modules alone (first rounds): "
                          f"{s_killed} of {s_counted} ({100 * s_killed / s_counted:.1f}%, 95% CI {100 * lo:.0f}-"
                          f"{100 * hi:.0f}%) at the sweep's commit, {s_killed + s_since} of {s_counted} with the "
                          f"survivors killed since -- but those claims were written against these very mutants, so "
                          f"only a fresh sample at a later commit (`--round 2`) measures the catalog without that "
                          f"bias."]
        if f_counted:
            lo, hi = wilson(f_killed, f_counted)
            per_round = "; ".join(f"round {k} at {next(r['commit'][:7] for r in rows if r.get('round') == k)}: "
                                  f"{kk} of {nn} ({100 * kk / nn:.1f}%)" for k, (kk, nn, _) in sorted(by_round.items()) if nn)
            strict = "; ".join(f"round {k}: {kk} of {nn + bh} ({100 * kk / (nn + bh):.1f}%)"
                               for k, (kk, nn, bh) in sorted(by_round.items()) if nn)
            lines += ["", f"Fresh samples so far (later rounds): {f_killed} of {f_counted} non-equivalent mutants killed "
                          f"({100 * f_killed / f_counted:.1f}%, 95% CI {100 * lo:.0f}-{100 * hi:.0f}%); {per_round}.  "
                          f"Each round measures the catalog as it stood at its commit, before the claims written "
                          f"against its survivors.  The mutants classed equivalent by inspection were classed after "
                          f"their round was seen; counted as survivors instead (the strict score): {strict}."]
    removed = [(r["module"], sv) for r in rows for sv in r["removed"]]
    if removed:
        lines += ["", "Survivors whose code was deleted since (not counted):", ""]
        lines += [f"- `{m}` line {sv['line']}: `{_changed_lines(sv)[0]}`" for m, sv in removed]
    gone = [(r["module"], sv, killed_since(r["module"], sv)) for r in rows for sv in r["survivors"]
            if sv not in r["equivalent"] and sv not in r["removed"] and killed_since(r["module"], sv)]
    if gone:
        lines += ["", "Survivors of those runs that claims added since kill (KILLED_SINCE in the script; a test applies "
                      "each mutant to the module and asserts the claim's verdict changes):", ""]
        for m, sv, cid in gone:
            ch = _changed_lines(sv)
            lines.append(f"- `{m}` line {sv['line']}: `{ch[0]}` -> `{ch[1]}`: killed by `{cid}`")
    lines += ["", "Surviving non-equivalent mutants (line: cosmic-ray operator, occurrence); each is a missing or "
                  "loose claim:", ""]
    for r in rows:
        for sv in r["survivors"]:
            if sv not in r["equivalent"] and sv not in r["removed"] and not killed_since(r["module"], sv):
                ch = _changed_lines(sv)
                lines.append(f"- `{r['module']}` line {sv['line']}: {sv['operator']} ({sv['occurrence']})"
                             + (f": `{ch[0]}` -> `{ch[1]}`" if ch else ""))
    by_hand = [(r["module"], sv, why_equivalent(r["module"], r["commit"], sv)) for r in rows for sv in r["equivalent"]
               if not equivalent(r["module"], r["commit"], sv)]
    if by_hand:
        lines += ["", "Equivalent by inspection (counted apart, BY_INSPECTION in the script):", ""]
        lines += [f"- `{m}` line {sv['line']}: {sv['operator']} ({sv['occurrence']}): {why}" for m, sv, why in by_hand]
    text = DOC.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"mutation_score: {DOC} lacks the markers of the generated block")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail, encoding="utf-8")
    os.replace(tmp, DOC)
    print(DOC)


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1; got {text!r}")
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("modules", nargs="+")
    r.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "attnlab-mutation")
    r.add_argument("--timeout", type=float, default=120.0)
    r.add_argument("--map", type=Path, help="reuse this claim map (from an earlier run on the same commit)")
    r.add_argument("--commit", help="mutate this commit (default HEAD)")
    r.add_argument("--survivors", action="store_true",
                   help="re-run only the stored survivors of each module against the claims of --commit (the "
                        "module's source must be unchanged since the stored run)")
    r.add_argument("--round", dest="round_", type=_positive_int, default=1, metavar="K",
                   help="with --sample: round K draws another sample (seeded by the path and K), stored beside "
                        "the others as <module>.roundK.json")
    r.add_argument("--sample", type=_positive_int, default=None, metavar="N",
                   help="run a random sample of N mutants per module (seeded by the module's path), for a score "
                        "with a confidence interval where the whole module would take too long")
    sub.add_parser("report")
    m = sub.add_parser("map")
    m.add_argument("out", type=Path)
    u = sub.add_parser("unreached", help="the public functions of numerics/ and experiments/models/ that no fast "
                                         "claim calls, from a map traced by `map`")
    u.add_argument("map_file", type=Path)
    c = sub.add_parser("check")
    c.add_argument("module")
    c.add_argument("map_file", type=Path)
    sv = sub.add_parser("serve")
    sv.add_argument("sock", type=Path)
    a = sub.add_parser("ask")
    a.add_argument("sock", type=Path)
    a.add_argument("root", type=Path)
    a.add_argument("module")
    a.add_argument("map_file", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "ask":                               # thin: no attnlab, no torch
        return ask(args.sock, args.root, args.module, args.map_file)
    if args.cmd == "serve":
        serve(args.sock)
        return 0
    if args.root is not None:
        use_root(args.root.resolve())
    if args.cmd == "run":
        run(args.modules, args.work, args.timeout, args.map, args.commit, args.sample, args.survivors, args.round_)
    elif args.cmd in ("report", "unreached"):
        from attnlab.errors import UsageError   # (after use_root: the class its tree raises)

        try:
            if args.cmd == "report":
                report()
            else:
                for mod, names in unreached(args.map_file).items():
                    prefix = mod[:-3].replace("/", ".") + "."
                    print(f"{mod}: " + ", ".join(n[len(prefix):] for n in names))
        except UsageError as exc:               # the one error path: one line, exit 2
            print(f"attnlab: error: mutation_score.py {args.cmd}: {exc}", file=sys.stderr)
            return 2
    elif args.cmd == "map":
        build_map(args.out)
    else:
        return check(args.module, args.map_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
