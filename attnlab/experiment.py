"""The experiment contract (DESIGN.md): one run -- its settings, checkpoints, lock and results record.
Every `attnlab run <experiment>` builds on this module and its neighbours, one concern each:
:mod:`attnlab.run_args` (the shared flags), :mod:`attnlab.devices`, :mod:`attnlab.parallel` (threads,
memory, fan-out), :mod:`attnlab.atomic_io`, :mod:`attnlab.provenance` and :mod:`attnlab.progress`.

A runner looks like::

    def main(argv):
        p = experiment_parser("efa-synthetic", "Table 1 (left) ...")
        p.add_argument(...)                       # experiment-specific flags
        args = p.parse_args(argv)
        for ctx in contexts(args, "efa-synthetic", config=CONFIG_QUICK if args.quick else CONFIG):
            if ctx.done():                        # record already there: skip (resume at run level)
                continue
            state = ctx.load_checkpoint()          # resume inside a run (None when fresh)
            ...train, calling ctx.save_checkpoint({...}) once per epoch...
            ctx.write_record([metric_row(setting, model, metric, value), ...])
        return 0

Records are written to ``<results-dir>/<experiment>/<quick|full>/<tag>seed<k>.json`` (default
results dir: ``./results``, or ``$ATTNLAB_RESULTS``); checkpoints go to ``$ATTNLAB_RUNS`` or
``./runs`` (not committed) and are removed once the record is written.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Iterator

from attnlab.atomic_io import (_check_names, _umask_mode, atomic_torch_save, atomic_write_json, check_folder,
                               check_writable, read_json)
from attnlab.devices import device_description, resolve_device
from attnlab.parallel import set_torch_threads
from attnlab.progress import Progress, format_duration
from attnlab.provenance import git_revision, host, package_versions
from attnlab.run_args import seeds_of


def results_root(args=None, read: bool = False) -> Path:
    """Where records go (``--results-dir``, else $ATTNLAB_RESULTS, else ./results).  For reading
    (``read=True``: results, report, figures) without either, ./results where it exists, else the
    committed records (attnlab.evidence.committed_records: the repository's, or an installed package's
    copy), so that an install outside the repository shows the repository's results."""
    d = getattr(args, "results_dir", None) if args is not None else None
    if d is not None and not str(d).strip():    # '' would silently mean $ATTNLAB_RESULTS or ./results
        from attnlab.errors import UsageError

        raise UsageError("--results-dir is empty; give a folder")
    chosen = d or os.environ.get("ATTNLAB_RESULTS")
    if chosen:
        return Path(chosen)
    if read and not Path("results").is_dir():
        from attnlab.evidence import committed_records

        return committed_records()
    return Path("results")


def _folder_key(folder: Path) -> str:
    """A short name for a results folder (the digest of its real path: `a/../b`, `b` and a link to it are one
    folder): its runs' checkpoints go under it."""
    import hashlib

    return "results-" + hashlib.sha256(os.path.realpath(Path(folder).absolute()).encode()).hexdigest()[:12]


def runs_root() -> Path:
    return Path(os.environ.get("ATTNLAB_RUNS") or "runs")


# --------------------------------------------------------------------------- one run
def metric_row(setting: str, model: str, metric: str, value: float, converged: bool | None = None) -> dict:
    """One number of a record.  `converged` is for a record that trains several models whose
    optimisers may end differently: it says whether this row's model converged, and overrides the
    record's flag for this row (attnlab.results.row_converged)."""
    row = {"setting": str(setting), "model": str(model), "metric": str(metric), "value": float(value)}
    if converged is not None:
        row["converged"] = bool(converged)
    return row


SETTINGS_KEY = "_attnlab_run_settings"
# wall seconds the run had spent up to its last checkpoint, so that a resumed run's record counts them
WALL_KEY = "_attnlab_wall_seconds"
# the devices (device_description) of the invocations up to the last checkpoint, in order, so that the
# record of a run resumed elsewhere (a GPU machine's checkpoint finished on a CPU) names every one
DEVICES_KEY = "_attnlab_devices"
# the torch thread count the run's checkpoint was written with: a resume on another count is refused
THREADS_KEY = "_attnlab_torch_threads"
# torch's global random state(s) when the checkpoint was written (CPU, and CUDA's where it was in use): what
# dropout draws from; a run resumed without it drew other dropout masks (fenchel-deviation: 235 values moved)
RNG_KEY = "_attnlab_torch_rng"
# what a checkpoint written before DEVICES_KEY existed says about its invocations' devices
_UNRECORDED = "not recorded"
# Flags (and config values of the same name) that only pick which runs to do; every runner names the
# pick in the run's tag, so a run is the same run whichever other runs were picked beside it.  (The kernel
# runners' `basis`, the numbers of basis functions N, is one: each N is a run tagged N<N>; as a defining value,
# `--basis 128` was refused beside the config's N=128 records of basis (64, 128), though its flag is documented
# for running a subset.)
_PICKS = {"models", "ks", "efa", "basis"}
# Flags that say how to run, not what the run is: they may change between an interrupted run and its resume.
# `--settings` picks settings the same way where the setting is in the tag (the EFA runners); a runner whose
# config holds the settings themselves (kernel-cost) still has them in its config values, which define it.
# (--compile is not among them: torch.compile reorders sums, so a run resumed with it on or off is neither run --
# test MSE 2.7715913477 against 2.7715913436 -- and its resume is refused as a change of --threads is)
_NOT_DEFINING = {"seed", "seeds", "device", "resume", "force", "rerun_unjudged", "results_dir", "quiet", "threads",
                 "jobs", "backend", "address", "data", "_default_seeds", "settings"} | _PICKS


def _run_config(config: dict) -> dict:
    """The config values that define one run: `config` without the picks (_PICKS)."""
    return {k: v for k, v in config.items() if k not in _PICKS}


def _defining(settings: dict) -> dict:
    """`settings` without the flags and config values that do not define a run (checkpoints written
    before a flag joined _NOT_DEFINING still carry it)."""
    values = settings.get("config_values") if isinstance(settings.get("config_values"), dict) else {}
    # a flag whose value the config holds (--alpha: config alpha) is defined there, resolved: `--alpha 1` and the
    # default alpha 1 are one run (the flag's None against 1.0 refused the resume of the same run)
    out = {k: v for k, v in settings.items()
           if not (k.startswith("--") and (k[2:].replace("-", "_") in _NOT_DEFINING
                                          or k[2:].replace("-", "_") in values))}
    if isinstance(out.get("config_values"), dict):
        out["config_values"] = _run_config(out["config_values"])
    return out


def _data_source(substitute) -> str:
    """What a run trains on, as its identity has it: the paper's data, or a substitute (which one is its record's
    `substitute` text, whose wording may change between versions: not part of the identity)."""
    return "substitute data" if substitute else "the paper's data"


def run_settings(experiment: str, config_name: str, config: dict, tag: str, seed: int, args=None) -> dict:
    """The settings that define a run (what its checkpoint must match on --resume), JSON-plain."""
    import json as _json

    from attnlab.catalog import jsonable

    flags = {k: v for k, v in sorted(vars(args).items()) if k not in _NOT_DEFINING} if args is not None else {}
    out = {"experiment": experiment, "config": config_name, "tag": tag, "seed": int(seed),
           "config_values": _run_config(config), **{f"--{k.replace('_', '-')}": v for k, v in flags.items()}}
    return _defining(_json.loads(_json.dumps(jsonable(out), sort_keys=True, default=str)))


_HELD: set = set()          # the run locks this process holds (absolute lock paths)
#: the checkpoint this process restored last, until the run saves its next one or writes its record: an error
#: in between (a checkpoint whose SHA-256 matches but whose contents are not this run's: a field of the wrong
#: type or shape, a key missing) is reported by :func:`restore_failed` as one line
_RESTORING: list = []
#: what a runner raises when it restores a state it cannot use
_RESTORE_ERRORS = (TypeError, KeyError, ValueError, RuntimeError, AttributeError, IndexError)


def restore_failed(exc: BaseException):
    """The UsageError for `exc` when it was raised after a checkpoint was restored and before the run saved
    its next one (see _RESTORING), else None."""
    from attnlab.errors import UsageError

    if not _RESTORING or isinstance(exc, UsageError) or not isinstance(exc, _RESTORE_ERRORS):
        return None
    first = (str(exc).splitlines() or [""])[0][:160]
    return UsageError(f"--resume: the run failed after restoring the checkpoint {_RESTORING[-1]} "
                      f"({type(exc).__name__}: {first}): it is damaged or not this run's; run without --resume to "
                      "start afresh")


def _differences(there: dict, now: dict, prefix: str = "") -> list[str]:
    """'key: X there, Y now' for each setting that differs, nested dicts (config_values) key by key: the
    whole dicts made a line of 700 characters that hid the one value that changed."""
    out = []
    for k in sorted(set(there) | set(now), key=str):
        a, b = there.get(k), now.get(k)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{k}.")
        else:
            out.append(f"{prefix}{k}: {a!r} there, {b!r} now")
    return out


def _bad_epochs(state, epochs) -> str:
    """'' or what is wrong with the epoch counters of a checkpoint's state: every value under a key 'epoch' a whole
    number >= 0, and the top-level one at most the run's `epochs` where the config has them (an edited epoch of
    100 ended a run of 8 at once and wrote its record; -5 trained 16), and equal to the length of the per-epoch
    history stored beside it (an edited epoch 0 beside 3 epochs of history trained 11 epochs of a run of 8)."""
    if isinstance(state, dict) and isinstance(state.get("history"), list) and isinstance(state.get("epoch"), int) \
            and not isinstance(state.get("epoch"), bool) and state["epoch"] != len(state["history"]):
        return f"its epoch {state['epoch']} disagrees with the {len(state['history'])} epochs of history stored with it"

    def walk(x, top):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "epoch":
                    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                        return f"its epoch {v!r} is no count of epochs"
                    if top and isinstance(epochs, int) and not isinstance(epochs, bool) and v > epochs:
                        return f"its epoch {v} is beyond this run's {epochs} epochs"
                elif isinstance(v, (dict, list, tuple)):
                    bad = walk(v, False)
                    if bad:
                        return bad
        elif isinstance(x, (list, tuple)):
            for v in x:
                bad = walk(v, False)
                if bad:
                    return bad
        return ""
    return walk(state, True)
LOCK_POLL_SECONDS = 1.0     # how often a run waiting for another process's lock on it tries again


class RunContext:
    """One (experiment, config, tag, seed) run: its record path, checkpoints, and record writing."""

    def __init__(self, experiment: str, seed: int, device: str, quick: bool, config: dict,
                 args=None, tag: str = "", substitute: str | None = None, config_name: str | None = None):
        self.experiment, self.seed, self.device = experiment, int(seed), device
        self.device_name = device_description(device)
        # quick, full (the paper's), or a named intermediate config whose records get their own folder
        self.config_name = config_name or ("quick" if quick else "full")
        self.config, self.tag, self.substitute = dict(config), tag, substitute
        self.args = args
        self.force = bool(getattr(args, "force", False))
        self.rerun_unjudged = bool(getattr(args, "rerun_unjudged", False))
        self.resume = bool(getattr(args, "resume", False))
        self.verbose = not bool(getattr(args, "quiet", False))
        # the data it trains on is part of what the run is (--data is not: the same data set lies at other paths on
        # other machines): the paper's data or a substitute.  A run resumed on the other (a killed substitute run
        # resumed with --data at the paper's file) spliced the two into one history under the paper's label.
        self.settings = {**run_settings(experiment, self.config_name, self.config, tag, self.seed, args),
                         "data": _data_source(substitute)}
        stem = f"{tag + '-' if tag else ''}seed{self.seed}"
        self.record_path = results_root(args) / experiment / self.config_name / f"{stem}.json"
        # (one checkpoint per results folder: a run into another folder resumed from this one's, and two runs into
        # two folders overwrote each other's)
        self.checkpoint_path = (runs_root() / experiment / self.config_name / _folder_key(results_root(args))
                                / f"{stem}.ckpt")
        # every output path is checked before the first step, not found unwritable after hours of training
        where = "--results-dir" if getattr(args, "results_dir", None) else (
            "$ATTNLAB_RESULTS" if os.environ.get("ATTNLAB_RESULTS") else "the results folder")
        check_folder(self.record_path.parent, where, make=True)
        check_writable(self.record_path, where)
        for longest in (f".{self.record_path.name}.lock", f".{self.record_path.name}.{'x' * 8}.tmp"):
            _check_names(self.record_path.parent / longest, where)     # the lock and the atomic write's temporary
        _check_names(self.checkpoint_path.parent / f".{self.checkpoint_path.name}.{'x' * 8}.tmp",
                     "$ATTNLAB_RUNS" if os.environ.get("ATTNLAB_RUNS") else "the checkpoint folder ./runs")
        runs_where = "$ATTNLAB_RUNS" if os.environ.get("ATTNLAB_RUNS") else "the checkpoint folder ./runs"
        check_folder(self.checkpoint_path.parent, runs_where, make=True)
        check_writable(self.checkpoint_path, runs_where)
        self._lock = None           # the open lock file while this process holds the run (done())
        self.t0 = time.perf_counter()
        # the code this run executes: the revision when it starts, not when its record is written hours later
        self.revision = git_revision()
        self.wall_before = 0.0      # seconds spent by earlier, interrupted invocations (from --resume)
        self.devices_before: list[str] = []     # their devices, in order (from --resume)

    def devices(self) -> list[str]:
        """The devices this run has trained on, in order (one entry per change of device)."""
        moved = self.devices_before[-1:] != [self.device_name]
        return self.devices_before + ([self.device_name] if moved else [])

    def wall_seconds(self) -> float:
        """Wall time of this run: this invocation plus what earlier invocations had spent up to the
        checkpoint it resumed from."""
        return self.wall_before + time.perf_counter() - self.t0

    def done(self) -> bool:
        """A record of this run already exists (and --force was not given, nor --rerun-unjudged with a record
        whose convergence status is unknown or missing: such a run is done again).  A record at this path
        written with other config values (those both sides name) is not this run: refused with one line
        rather than silently taken as done.  While another live process holds the run (a second identical
        command into the same results folder), this waits for it, saying so: then the record it wrote is
        found (done), or, if it stopped without one, the run is done here -- never skipped unrecorded."""
        waited_since = None
        if self._lock is None and not self._take_lock():   # said even under --quiet
            waited_since = time.time()
            holder = self._lock_holder()
            print(f"attnlab: warning: {self.record_path}: another live process{holder} is running this run; "
                  "waiting for it to finish (Ctrl-C to stop waiting) ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            while not self._take_lock():
                time.sleep(LOCK_POLL_SECONDS)
            print(f"attnlab: {self.record_path}: the other process let go of this run after "
                  f"{format_duration(time.perf_counter() - t0)}", file=sys.stderr, flush=True)
        self._clean_temporaries()
        self._check_siblings()
        if not self.record_path.exists():
            return False
        if self.force:
            # two identical --force commands: the second waited while the first re-ran this seed and wrote its
            # record; that is the re-run both asked for (it trained the seed twice and replaced the record)
            if waited_since is None or self.record_path.stat().st_mtime < waited_since:
                return False
            if self.verbose:
                print(f"  {self.record_path} was re-run by the process this one waited for (--force); skipping",
                      file=sys.stderr)
            self._release_lock()
            return True
        from attnlab.results import _record_problem

        try:
            rec = read_json(self.record_path)
            problem = _record_problem(rec)
        except ValueError as exc:
            problem = str(exc)
        if not problem:             # a record copied or renamed onto this run's path is another run's: never "done"
            mine = {"experiment": self.experiment, "config": self.config_name, "tag": self.tag, "seed": self.seed}
            theirs = {k: (rec.get(k) or "") if k == "tag" else rec.get(k) for k in mine}
            if theirs != mine:
                from attnlab.errors import UsageError

                self._release_lock()
                raise UsageError(f"{self.record_path} holds the record of another run ("
                                 + ", ".join(f"{k} {theirs[k]!r}" for k in mine if theirs[k] != mine[k])
                                 + f", not {', '.join(f'{k} {mine[k]!r}' for k in mine if theirs[k] != mine[k])}): "
                                 "a copied or renamed file; move it to its own name or remove it")
        if problem:                 # a half-written or damaged record is not a finished run
            print(f"attnlab: warning: {self.record_path} exists but cannot be used ({problem}); running this "
                  "seed again (the new record replaces it)", file=sys.stderr)
            return False
        if _data_source(rec.get("substitute")) != _data_source(self.substitute) and not self.force:
            # a record on the other data is another run (a substitute run skipped as done beside the paper's record,
            # and its summary showed the paper's number unmarked)
            from attnlab.errors import UsageError

            self._release_lock()
            raise UsageError(f"{self.record_path} holds a record on {_data_source(rec.get('substitute'))}, this run "
                             f"is on {_data_source(self.substitute)}; pass --force to replace it, or --results-dir "
                             "for another folder")
        # other settings first: --rerun-unjudged re-runs a record of this run, never one of another config (it
        # replaced those silently, leaving a folder of mixed settings)
        saved = rec.get("config_values") or {}
        if isinstance(saved, dict):
            from attnlab.catalog import jsonable

            now = json.loads(json.dumps(jsonable(_run_config(self.config)), default=str))
            diff = [k for k in sorted(set(_run_config(saved)) & set(now)) if saved[k] != now[k]]
            if diff:
                from attnlab.errors import UsageError

                self._release_lock()
                raise UsageError(f"{self.record_path} exists but was written with other settings ("
                                 + ", ".join(f"{k}: {saved[k]!r} there, {now[k]!r} now" for k in diff)
                                 + "); pass --force to replace it, or --results-dir for another folder")
        status = (rec.get("convergence") or {}).get("status") if isinstance(rec.get("convergence"), dict) else None
        if self.rerun_unjudged and status in (None, "unknown"):
            if self.verbose:
                why = (rec.get("convergence") or {}).get("reason") if status else "no convergence judgement stored"
                print(f"  {self.record_path} exists but its convergence cannot be judged ({why}); running this "
                      "seed again (--rerun-unjudged)", file=sys.stderr)
            return False
        if self.verbose:
            print(f"  {self.record_path} exists; skipping (use --force to re-run)", file=sys.stderr)
        self._release_lock()
        return True

    def _check_siblings(self) -> None:
        """The records of this config's other seeds (same tag) were written with the config values this run has
        (on the values both name): a folder of mixed settings (one seed at --alpha 0.25 beside four at 1) was
        averaged into one row by `attnlab results` and the claims.  Refused with one line naming the first
        difference; under --force a warning (re-running every seed replaces them all; until then the readers
        keep the majority, attnlab.results.consistent_records)."""
        from attnlab.catalog import jsonable

        now = json.loads(json.dumps(jsonable(_run_config(self.config)), default=str))
        import glob

        pattern = f"{glob.escape(self.tag) + '-' if self.tag else ''}seed*.json"      # (a tag may hold [ or *)
        for other in sorted(self.record_path.parent.glob(pattern)):
            stem = other.name[len(self.tag) + 1 if self.tag else 0:-len(".json")]
            if other == self.record_path or not (stem.startswith("seed") and stem[4:].isdigit()):
                continue
            try:
                saved = read_json(other).get("config_values")
            except (ValueError, AttributeError):
                continue                        # (an unusable record: the readers skip it, saying so)
            if not isinstance(saved, dict):
                continue
            saved = _run_config(saved)
            diff = [k for k in sorted(set(saved) & set(now)) if saved[k] != now[k]]
            if not diff:
                continue
            what = ", ".join(f"{k}: {saved[k]!r} there, {now[k]!r} now" for k in diff[:3])
            if self.force:
                print(f"attnlab: warning: {other} was written with other config values ({what}); --force: run "
                      "every seed again so that the folder holds one setting (until then `attnlab results` and the "
                      "claims keep the majority)", file=sys.stderr)
                return
            from attnlab.errors import UsageError

            self._release_lock()
            raise UsageError(f"{other} was written with other config values ({what}): the seeds of one config "
                             "share them; write this run to another --results-dir (or re-run every seed with --force)")

    def _lock_path(self) -> Path:
        return self.record_path.with_name(f".{self.record_path.name}.lock")

    def _lock_holder(self) -> str:
        """' (pid N)' of the process named in the lock file, or '' when it cannot be read."""
        try:
            pid = self._lock_path().read_text().strip()
        except (OSError, UnicodeDecodeError):
            return ""
        return f" (pid {pid})" if pid.isdigit() else ""

    def _take_lock(self) -> bool:
        """Hold this run (results folder, experiment, config, tag, seed) for this process: False when another
        live process holds it.  flock is released by the kernel when its holder dies, so the lock of a
        killed run is taken over; the lock file is removed when the record is written."""
        import fcntl

        path = self._lock_path()
        if str(path.absolute()) in _HELD:          # this process holds it already (another context of the run)
            return True
        from attnlab.errors import UsageError

        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, _umask_mode())
            except OSError as exc:                 # (a folder in its place, a read-only file system)
                raise UsageError(f"cannot take this run's lock file {path}: {exc.strerror or exc}"
                                 + (" (a folder is in its place: remove it)" if path.is_dir() else "")) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except OSError:                        # a file system without flock: run unlocked
                os.close(fd)
                return True
            try:                                   # the file we locked may have been removed by its holder
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                try:
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode())
                except OSError as exc:             # (a full disk)
                    os.close(fd)
                    try:
                        path.unlink()
                    except OSError:
                        pass
                    raise UsageError(f"cannot write this run's lock file {path}: {exc.strerror or exc}") from None
                self._lock = fd
                _HELD.add(str(path.absolute()))
                return True
            os.close(fd)

    def _release_lock(self) -> None:
        if self._lock is not None:
            _HELD.discard(str(self._lock_path().absolute()))
            try:
                self._lock_path().unlink()
            except OSError:
                pass
            os.close(self._lock)
            self._lock = None

    def __del__(self):
        try:
            self._release_lock()
        except Exception:
            pass

    def _clean_temporaries(self) -> None:
        """Remove what a run killed while writing left behind: the temporary files of this run's record
        and checkpoint (atomic writes: ``.<name>.<random>.tmp``).  Called while holding the run's lock, so
        no live writer of these files exists."""
        for final in (self.record_path, self.checkpoint_path):
            for tmp in final.parent.glob(f".{final.name}.*.tmp"):
                try:
                    tmp.unlink()
                except OSError:
                    pass

    def progress(self, total: int, name: str = "") -> Progress:
        return Progress(total, name or f"{self.experiment} seed {self.seed}", enabled=self.verbose)

    def save_checkpoint(self, state: dict) -> None:
        """Save `state` (tensors, numbers, strings, None, numpy arrays and scalars, in dicts, lists and
        tuples) so that it loads without pickle (``torch.load(weights_only=True)``)."""
        import torch

        try:
            rng = {"cpu": torch.get_rng_state()}
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                rng["cuda"] = torch.cuda.get_rng_state_all()
            plain = _plain({**state, SETTINGS_KEY: self.settings, WALL_KEY: self.wall_seconds(),
                            DEVICES_KEY: self.devices(), THREADS_KEY: torch.get_num_threads(), RNG_KEY: rng})
        except TypeError as exc:    # never crash a training run over its checkpoint: it goes on without one
            if not getattr(self, "_warned_checkpoint", False):
                print(f"attnlab: warning: {self.checkpoint_path}: not checkpointed ({exc})", file=sys.stderr)
                self._warned_checkpoint = True
            return
        atomic_torch_save(self.checkpoint_path, plain)
        _RESTORING.clear()                          # (the run has gone past what it restored)

    def load_checkpoint(self) -> dict | None:
        """The last checkpoint when --resume was given and one exists, else None.  A checkpoint written
        under other settings (another config, split seed, model, ...) is refused: a resumed run must be
        the same run.  torch's global random state is set back to what it was when the checkpoint was
        written (dropout draws from it): call this where the training loop goes on, after building the
        model (whose initialisation draws from it too)."""
        if not self.resume:
            return None
        if not self.checkpoint_path.exists():
            if self.verbose:        # (a --results-dir spelled otherwise than before is another folder's checkpoints)
                # an interrupted run of this seed under another config (--quick forgotten, another --lr) is said:
                # this run starts afresh beside it
                key, stem = self.checkpoint_path.parent.name, self.checkpoint_path.name
                others = sorted(q.parent.parent.name for q in self.checkpoint_path.parents[2].glob(f"*/{key}/{stem}")
                                if q != self.checkpoint_path)
                print(f"  --resume: no checkpoint of this run at {self.checkpoint_path}; starting from the beginning"
                      + (f" (this seed has an interrupted run under config {', '.join(others)}: to resume that one, "
                         "give the flags it was run with)" if others else ""), file=sys.stderr)
            return None
        import torch

        from attnlab.errors import UsageError

        state = _load_plain(self.checkpoint_path)
        saved = state.pop(SETTINGS_KEY, None) if isinstance(state, dict) else None
        wall = state.pop(WALL_KEY, 0.0) if isinstance(state, dict) else 0.0
        devices = state.pop(DEVICES_KEY, [_UNRECORDED]) if isinstance(state, dict) else [_UNRECORDED]
        threads = state.pop(THREADS_KEY, None) if isinstance(state, dict) else None
        rng = state.pop(RNG_KEY, None) if isinstance(state, dict) else None
        if isinstance(threads, int) and threads != torch.get_num_threads():
            # the numbers of a run depend on its thread count (the order of its sums): a run continued on another
            # count is neither run (bidir-toy-corpus: 173 values of its second half moved)
            raise UsageError(f"--resume: the checkpoint {self.checkpoint_path} was written with {threads} torch "
                             f"thread(s), this run has {torch.get_num_threads()}; resume with --threads {threads} (and "
                             "a --jobs that leaves each run that many cores), or run without --resume to start afresh")
        if isinstance(saved, dict):
            saved = _defining(saved)
            # (a checkpoint from before the data source, or --compile, was kept)
            for key in ("data", "--compile"):
                if key in self.settings:
                    saved.setdefault(key, self.settings[key])
        if saved != self.settings:
            diff = ("it records no settings" if not isinstance(saved, dict) else
                    ", ".join(_differences(saved, self.settings)))
            raise UsageError(f"--resume: the checkpoint {self.checkpoint_path} was written under other settings "
                             f"({diff}); run with those settings, or without --resume to start afresh")
        bad = _bad_epochs(state, self.config.get("epochs") if isinstance(self.config, dict) else None)
        if bad or not isinstance(state, dict):
            raise UsageError(f"--resume: the checkpoint {self.checkpoint_path} is not this run's "
                             f"({bad or 'it holds no state'}); run without --resume to start afresh")
        self._rng_at_checkpoint = rng if isinstance(rng, dict) and isinstance(rng.get("cpu"), torch.Tensor) else None
        try:
            self.resume_rng()
        except _RESTORE_ERRORS as exc:            # (a random state of another size or kind)
            raise UsageError(f"--resume: the checkpoint {self.checkpoint_path} is not this run's (its random state: "
                             f"{str(exc).splitlines()[0][:120]}); run without --resume to start afresh") from None
        _RESTORING[:] = [self.checkpoint_path]
        if self.verbose:
            print(f"  resuming from {self.checkpoint_path}", file=sys.stderr)
        self.wall_before = float(wall)
        self.devices_before = [str(d) for d in devices]
        return state

    def resume_rng(self) -> None:
        """Set torch's global random state back to the loaded checkpoint's (load_checkpoint does it when it loads;
        a runner that seeds and builds a model after loading calls this again where its loop goes on).  Nothing
        without a loaded checkpoint, or one written before the state was kept."""
        rng = getattr(self, "_rng_at_checkpoint", None)
        if rng is None:
            return
        import torch

        torch.set_rng_state(rng["cpu"])
        if rng.get("cuda") and torch.cuda.is_available() and len(rng["cuda"]) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(rng["cuda"])

    def converged(self, record: dict, trivial: dict | None = None) -> dict:
        """The judgement of :mod:`attnlab.convergence` on `record` (its stored curves): {"converged":
        True | False | None, "convergence": {...}, "rows": ...}.  How training stopped is not evidence."""
        from attnlab.convergence import judge_record

        return judge_record(record, trivial)

    def write_record(self, metrics: list[dict], extra: dict | None = None, training: dict | None = None,
                     trivial: dict | None = None) -> Path:
        """Write the run's record.  `training` says how training ended: {stopped: early-stop | tolerance |
        max-epochs | time-limit | fixed-schedule, best_epoch, epochs_run, max_epochs}; `extra.history` holds
        the whole per-epoch curve; `trivial` the trivial predictor's value on the compared metric
        ({"value": ..., "perfect": ...}, :func:`attnlab.convergence.judge_record`).  The record's
        `converged` and `convergence` are judged from the stored curves (:mod:`attnlab.convergence`)."""
        from attnlab.convergence import apply

        rec = {
            "experiment": self.experiment, "config": self.config_name, "tag": self.tag,
            "seed": self.seed, "device": self.device, "device_name": self.device_name,
            "devices": self.devices(),
            "substitute": self.substitute, "config_values": self.config, "metrics": metrics,
            "wall_seconds": round(self.wall_seconds(), 3),
            "git_revision": self.revision, "versions": package_versions(), "host": host(),
            # (the numbers depend on it beyond 1: the order of torch's sums; README, "Processes, threads")
            "torch_threads": _torch_threads(),
            "command": _command_line(self.experiment),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        rec["training"] = training
        rec["converged"] = None
        if extra:
            rec["extra"] = extra
        from attnlab.catalog import jsonable

        rec = apply(json.loads(json.dumps(jsonable(rec), default=str)), trivial)
        from attnlab.results import _record_problem

        problem = _record_problem(rec)
        if problem:     # a record every reader would skip (and every re-run replace): not written; checkpoint kept
            from attnlab.errors import UsageError

            self._release_lock()
            if _RESTORING:          # (a value restored from the checkpoint, not a setting, as a rule: name it)
                raise UsageError(f"--resume: the run failed after restoring the checkpoint {_RESTORING[-1]} (its "
                                 f"record cannot be used: {problem}): it is damaged or not this run's; run without "
                                 "--resume to start afresh; no record written")
            raise UsageError(f"{self.experiment} ({self.config_name}) seed {self.seed}: the run's record cannot be "
                             f"used ({problem}: a setting outside what the model can compute, as a rule); no record "
                             "written")
        path = atomic_write_json(self.record_path, rec)
        _RESTORING.clear()
        if self.checkpoint_path.exists():
            self.checkpoint_path.unlink()
        self._release_lock()
        return path


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


_NDARRAY = "_attnlab_ndarray"      # a numpy array in a checkpoint: {_NDARRAY: tensor, "dtype": str}
_TUPLE = "_attnlab_tuple"          # a tuple (torch's safe loader keeps tuples, but a dict key marks it plainly)


def _plain(obj):
    """`obj` with what torch.load(weights_only=True) cannot read made plain: numpy arrays as tensors
    (tagged, restored by _unplain), numpy scalars as Python numbers.  Anything else that is not a tensor,
    number, string, bytes, None, dict, list or tuple is refused (it would need pickle to load)."""
    import numpy as np
    import torch

    if isinstance(obj, np.generic):             # before the Python types: np.float64 is a float subclass
        return obj.item()
    if isinstance(obj, (torch.Tensor, str, bytes, bool, int, float, type(None), torch.Size, torch.dtype,
                        torch.device)):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise TypeError("a checkpoint cannot hold a numpy array of Python objects")
        return {_NDARRAY: torch.from_numpy(np.ascontiguousarray(obj).copy()), "dtype": str(obj.dtype)}
    if isinstance(obj, dict):
        return type(obj)((_plain(k), _plain(v)) for k, v in obj.items()) if type(obj) is not dict else \
            {_plain(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        vals = [_plain(v) for v in obj]
        return vals if isinstance(obj, list) else tuple(vals)
    raise TypeError(f"a checkpoint cannot hold a {type(obj).__name__} (it would need pickle to load); "
                    "store tensors, numbers, strings and numpy arrays in dicts and lists")


def _unplain(obj):
    if isinstance(obj, dict):
        if _NDARRAY in obj and set(obj) == {_NDARRAY, "dtype"}:
            return obj[_NDARRAY].numpy().astype(obj["dtype"], copy=False)
        return type(obj)((k, _unplain(v)) for k, v in obj.items()) if type(obj) is not dict else \
            {k: _unplain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unplain(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_unplain(v) for v in obj)
    return obj


def _load_plain(path: Path):
    """A checkpoint loaded without pickle (weights_only=True: a crafted file cannot run code); a
    truncated, garbage or unsafe one is a UsageError naming it."""
    import torch

    from attnlab.errors import UsageError

    import pickle

    import io

    from attnlab.atomic_io import checked_torch_bytes

    try:
        data = checked_torch_bytes(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume: the checkpoint {path} cannot be loaded safely ({exc}); delete it, or run without "
                         "--resume to start afresh") from None
    import warnings

    try:
        with warnings.catch_warnings():        # (torch's two-line note on an old pickle protocol: the refusal below says it)
            warnings.simplefilter("ignore", UserWarning)
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "global" not in str(exc).lower():   # no pickled object named: garbage, not a crafted file
            raise UsageError(f"--resume: the checkpoint {path} cannot be loaded safely (it is not a checkpoint "
                             "written by attnlab); delete it, or run without --resume to start afresh") from None
        # pickled objects other than tensors and plain data: refused unread
        raise UsageError(f"--resume: the checkpoint {path} holds Python objects that only pickle could load, "
                         "which attnlab refuses (a crafted file could run code); it was not written by this "
                         "attnlab: delete it, or run without --resume to start afresh") from None
    except Exception as exc:        # truncated (EOFError, RuntimeError), garbage
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"--resume: the checkpoint {path} cannot be loaded safely ({reason}); it is damaged "
                         "or was not written by this attnlab: delete it, or run without --resume to start "
                         "afresh") from None
    return _unplain(state)


def _command_line(experiment: str) -> str:
    """The command that produced a record, as the user typed it when run through `attnlab run`, less
    ``--results-dir``: where a record is written does not change it, and a folder of one machine has no
    place in a record that travels."""
    import shlex

    argv = _without_results_dir(sys.argv[1:])
    if argv[:2] == ["run", experiment]:
        return "attnlab " + " ".join(shlex.quote(a) for a in argv)
    return f"attnlab run {experiment} (called as: {' '.join(shlex.quote(a) for a in sys.argv)})"


def _without_results_dir(argv: list[str]) -> list[str]:
    """argv less --results-dir and its folder, and less --resume (a resumed run is the same run, and its record
    the same record)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--results-dir":
            skip = True
        elif not a.startswith("--results-dir=") and a != "--resume":
            out.append(a)
    return out


def contexts(args, experiment: str, config: dict, tag: str = "",
             substitute: str | None = None, config_name: str | None = None) -> Iterator[RunContext]:
    """One RunContext per requested seed (torch threads set from --threads)."""
    set_torch_threads(args)
    for s in seeds_of(args):
        yield context(args, experiment, config, s, tag, substitute, config_name)


def context(args, experiment: str, config: dict, seed: int, tag: str = "",
            substitute: str | None = None, config_name: str | None = None,
            device: str | None = None) -> RunContext:
    """The RunContext of one seed (for a task of :func:`fan_out`).  `device` overrides --device for a
    run that cannot use it (a scikit-learn baseline always runs, and is recorded, on the CPU)."""
    device = resolve_device(device or getattr(args, "device", "auto"))
    return RunContext(experiment, seed, device, bool(getattr(args, "quick", False)), config, args,
                      tag, substitute, config_name)
