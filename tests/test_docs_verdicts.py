"""The verdicts the hand-written pages state are the catalog's: the README's at-a-glance (every
"(`claim`, ...: verdict)" it cites, and each paper's count of errata) and the verdict history of
docs/results_verdicts.md (replayed from issue 44's table through every later move, it must end at each
claim's expected verdict), and every verdict docs/*.md states in bold right after a claim's id.  Claims
are named by id or by a glob of ids (as `attnlab verify --claim` takes them)."""
import fnmatch
import re
from pathlib import Path

import pytest

from attnlab import catalog
from attnlab.catalog import VERDICT_WORDS
from attnlab.listing import on_results_scale

ROOT = Path(__file__).resolve().parents[1]
GLANCE_BEGIN, GLANCE_END = "<!-- glance:begin", "<!-- glance:end -->"
# longest first, so that "not reproduced on a substitute" is not read as "reproduced on a substitute"
WORDS = sorted(set(VERDICT_WORDS.values()) - {"error"}, key=len, reverse=True)
WORD_OF = {w: k for k, w in VERDICT_WORDS.items()}
ID = r"`(?:efa|bidir|fenchel|kernel)\.[\w.*?\[\]-]+`"
TAG = re.compile(rf"((?:{ID},\s*)*{ID}):\s+({'|'.join(map(re.escape, WORDS))})\)")


def _claims() -> dict:
    return {c.id: c for c in catalog.all_claims()}


def _expand(cell: str, claims: dict) -> list[str]:
    """The claim ids the backticked ids and globs of `cell` name; each must name at least one."""
    out = []
    for pat in re.findall(ID, cell):
        hit = sorted(fnmatch.filter(claims, pat.strip("`")))
        assert hit, f"{pat} names no claim of the catalog"
        out += hit
    return out


def _flat(text: str) -> str:
    return " ".join(text.split())


def _glance() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert GLANCE_BEGIN in text and GLANCE_END in text, "README.md has no at-a-glance block"
    return text.split(GLANCE_BEGIN, 1)[1].split(GLANCE_END, 1)[0]


def test_glance_tag_reader_reads_what_it_should():
    """The reader itself: a tag with a glob and a long verdict, a tag after other words in its
    parentheses, and a wrong verdict that must be reported."""
    claims = {"efa.results.a": None, "efa.results.b": None, "kernel.x": None}
    tags = TAG.findall(_flat("x (`efa.results.*`: not reproduced on a\n    substitute) y (1 %; `kernel.x`: skipped)"))
    assert [(_expand(c, claims), w) for c, w in tags] == [(["efa.results.a", "efa.results.b"],
                                                           "not reproduced on a substitute"), (["kernel.x"], "skipped")]
    with pytest.raises(AssertionError, match="names no claim"):
        _expand("`efa.nothing-*`", claims)


def test_readme_glance_cites_the_catalogs_verdicts():
    claims = _claims()
    tags = TAG.findall(_flat(_glance()))
    assert tags, "the at-a-glance block cites no verdict"
    cited, wrong = set(), []
    for cell, word in tags:
        for cid in _expand(cell, claims):
            cited.add(cid)
            if VERDICT_WORDS[claims[cid].expected] != word:
                wrong.append(f"{cid}: README says {word!r}, the catalog expects "
                             f"{VERDICT_WORDS[claims[cid].expected]!r}")
    assert not wrong, "README.md's at-a-glance is out of date:\n" + "\n".join(wrong)
    empirical = {cid for cid, c in claims.items() if on_results_scale(c)}
    assert not empirical - cited, ("empirical claims the README's at-a-glance does not cite: "
                                   f"{sorted(empirical - cited)}")


def test_readme_glance_counts_each_papers_errata():
    claims = _claims()
    bullets = re.split(r"^- \*\*(\w+)\*\*\s*$", _glance(), flags=re.M)[1:]
    papers = dict(zip(bullets[::2], bullets[1::2]))
    assert set(papers) == {c.paper for c in claims.values()}
    for paper, body in papers.items():
        theory = _flat(body.split("*Experiments*")[0])
        said = [int(n) for n in re.findall(r"\b(\d+) errata\b", theory)]
        n = sum(1 for c in claims.values() if c.paper == paper and c.expected == "erratum")
        assert said == [n], f"README.md's at-a-glance gives {paper} {said} errata; the catalog has {n}"


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The body rows (cells) of the first markdown table after `header`."""
    rest = text.split(header, 1)[1].lstrip("\n").splitlines()
    rows = []
    for line in rest:
        if not line.startswith("|"):
            if rows:
                break
            continue
        if set(line.strip()) <= set("|-: "):                   # the header's rule
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells[0] == "claim":
            continue
        rows.append(cells)
    return rows


def test_results_verdict_history_ends_at_the_expected_verdicts():
    claims = _claims()
    text = (ROOT / "docs" / "results_verdicts.md").read_text(encoding="utf-8")
    state = {}
    for cells in _table_rows(text, "## Which verdicts moved (issue 44)"):
        for cid in _expand(cells[0], claims):
            state[cid] = WORD_OF[cells[2]]
    unchanged = _flat(text.split("Unchanged by issue 44:", 1)[1].split("Later moves", 1)[0])
    for cell, word in TAG.findall(unchanged):
        for cid in _expand(cell, claims):
            assert cid not in state, f"{cid} is both in issue 44's table and unchanged by it"
            state[cid] = WORD_OF[word]
    for cells in _table_rows(text, "Later moves, in order"):
        before, now = cells[1], WORD_OF[cells[2]]
        for cid in _expand(cells[0], claims):
            if before == "-":
                assert cid not in state, f"{cid} is registered again in the later moves"
            else:
                assert state.get(cid) == WORD_OF[before], (
                    f"{cid} moves from {before!r} in the later moves, but its state there was "
                    f"{VERDICT_WORDS.get(state.get(cid), state.get(cid))!r}")
            state[cid] = now
    empirical = {cid for cid, c in claims.items() if on_results_scale(c)}
    assert not empirical - set(state), f"claims without a verdict history: {sorted(empirical - set(state))}"
    wrong = [f"{cid}: history ends at {VERDICT_WORDS[state[cid]]!r}, the catalog expects "
             f"{VERDICT_WORDS[claims[cid].expected]!r}" for cid in sorted(empirical) if state[cid] != claims[cid].expected]
    assert not wrong, "docs/results_verdicts.md misses a move:\n" + "\n".join(wrong)


BOLD = re.compile(rf"({ID})((?:(?!{ID})[^|])*?)\*\*({'|'.join(map(re.escape, WORDS))})\*\*")


def _bold_verdicts(text: str) -> list[tuple[str, str]]:
    """(id or glob, verdict) for every verdict in bold that follows a claim id in the same table-free
    stretch of at most 160 characters, no other claim id between them: how the docs state a verdict."""
    return [(m.group(1), m.group(3)) for m in BOLD.finditer(_flat(text)) if len(m.group(2)) <= 160]


def test_bold_verdict_reader():
    text = ("`efa.results.a` (a difference, CI [0.1, 0.2]) is **holds** here; `efa.results.b` and then\n"
            "`efa.results.c` are **inconclusive** | `efa.results.d` | **skipped**")
    assert _bold_verdicts(text) == [("`efa.results.a`", "holds"), ("`efa.results.c`", "inconclusive")]


def test_docs_state_the_catalogs_verdicts_in_bold():
    claims = _claims()
    wrong = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for cell, word in _bold_verdicts(page.read_text(encoding="utf-8")):
            for cid in _expand(cell, claims):
                if VERDICT_WORDS[claims[cid].expected] != word:
                    wrong.append(f"{page.name}: {cid} is **{word}** there, the catalog expects "
                                 f"{VERDICT_WORDS[claims[cid].expected]!r}")
    assert not wrong, "verdicts stated in docs/ are out of date:\n" + "\n".join(wrong)
