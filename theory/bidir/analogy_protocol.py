"""The word-analogy protocol of "Bidirectional Attention as a Mixture of Continuous Word Experts" (Sec. 4.1,
App. F; Table 3) as the library evaluates it (`bidir.app-f.analogy-protocol`): the library's evaluate and
summarize (experiments/models/bidir_analogy.py) against a question-by-question transcription of App. F in
float64 that shares no code with them.
"""
from __future__ import annotations

import numpy as np

from attnlab.catalog import claim, holds_if
from attnlab.theory._inputs import at_run_time, refused

COS_TOL = 1e-5          # the library works in float32: a cosine carries ~1e-7 relative rounding
GAP_MIN = 1e-4          # a question whose best two candidates are closer than this is not judged on its answer


def app_f_printed(words, vectors, questions):
    """App. F: for "a is to b as c is to ?", the word d not in {a, b, c} maximising cos(x_d, x_b + x_c - x_a)
    (the first occurrence of a repeated word names it); Sec. 4.1: correct when it is the answer, and the
    cosine between x_b + x_c - x_a and the answer's embedding.  Returns per question (correct, cosine,
    gap between the best two candidates)."""
    index: dict = {}
    for i, w in enumerate(words):
        index.setdefault(w, i)
    X = np.asarray(vectors, dtype=np.float64)
    out = []
    for _cat, a, b, c, d in questions:
        f = X[index[b]] + X[index[c]] - X[index[a]]
        nf = np.linalg.norm(f)
        cos = [float(X[i] @ f / (np.linalg.norm(X[i]) * nf)) if np.linalg.norm(X[i]) > 0 and nf > 0 else 0.0
               for i in range(len(words))]
        allowed = [i for i in range(len(words)) if i not in (index[a], index[b], index[c])]
        ranked = sorted(allowed, key=lambda i: -cos[i])
        out.append((words[ranked[0]] == d, cos[index[d]], cos[ranked[0]] - cos[ranked[1]]))
    return out


def _instance(seed: int):
    """A vocabulary of 120 words in 60 dimensions (one repeated word, one zero vector) and 240 questions in four
    categories (two semantic, two syntactic 'gram' ones): half answered by the best candidate in float64 (found
    unless the library errs), half by the second best, every 8th by a itself (excluded: never found)."""
    rng = np.random.default_rng(seed)
    n, dim = 120, 60
    words = [f"w{i}" for i in range(n)]
    words[117] = "w5"                                   # a repeated word: the first occurrence (row 5) names it
    X = rng.normal(size=(n, dim)).astype(np.float32)
    X[118] = 0.0                                        # a zero vector: cosine 0 with everything
    X64 = X.astype(np.float64)
    norms = np.maximum(np.linalg.norm(X64, axis=1), 1e-300)
    cats = ["capital-common-countries", "family", "gram1-adjective-to-adverb", "gram3-comparative"]
    qs = []
    for k in range(240):
        a, b, c = (int(v) for v in rng.choice(117, size=3, replace=False))
        f = X64[b] + X64[c] - X64[a]
        cos = X64 @ f / (norms * np.linalg.norm(f))
        cos[[a, b, c, 117]] = -np.inf                   # row 117 repeats word 5: never the named word
        ranked = np.argsort(-cos)
        d = a if k % 8 == 0 else int(ranked[k % 2])
        qs.append((cats[k % 4], words[a], words[b], words[c], words[d]))
    return words, X, qs


def check_analogy_protocol(seed: int = 41):
    from attnlab.experiments.models.bidir_analogy import Embeddings, evaluate, group_of, summarize

    words, X, qs = _instance(seed)
    # the questions as read from a file: equal strings, not the interned literals of the vocabulary
    lib = evaluate(Embeddings(words, X), [tuple(at_run_time(w) for w in q) for q in qs], chunk=64)
    ref = app_f_printed(words, X, qs)
    judged = [k for k, r in enumerate(ref) if r[2] > GAP_MIN]
    flags = sum(1 for k in judged if lib[k]["correct"] != ref[k][0])
    cos_dev = max(abs(r["cosine"] - q[1]) for r, q in zip(lib, ref))
    groups_ok = all(r["group"] == ("syntactic" if q[0].startswith("gram") else "semantic") and r["category"] == q[0]
                    for r, q in zip(lib, qs)) and group_of("gram9-plural-verbs") == "syntactic"
    # summarize: counts, accuracies and mean cosines per group and category, from the records
    # (also from records whose strings were made at run time, as records read back from a file hold them: equal
    # strings, not the interned literals)
    sum_dev, count_errors = 0.0, 0
    for summ in (summarize(lib), summarize([{k: at_run_time(v) if isinstance(v, str) else v for k, v in r.items()}
                                            for r in lib])):
        for name, sel in [("semantic", lambda r: r["group"] == "semantic"),
                          ("syntactic", lambda r: r["group"] == "syntactic"), ("overall", lambda r: True)] + [
                (c, (lambda c: lambda r: r["category"] == c)(c)) for c in dict.fromkeys(q[0] for q in qs)]:
            rs = [r for r in lib if sel(r)]
            got = summ[name] if name in ("semantic", "syntactic", "overall") else summ["categories"][name]
            count_errors += int(got["n"] != len(rs))
            sum_dev = max(sum_dev, abs(got["acc"] - sum(r["correct"] for r in rs) / len(rs)),
                          abs(got["cosine"] - sum(r["cosine"] for r in rs) / len(rs)))
    n_correct = sum(r["correct"] for r in lib)
    # every candidate points away from x_b + x_c - x_a (the best cosine is negative, so the excluded a, b, c must
    # be out of the running, not at 0), and the vectors are shorter than 1 (cosines need the norms divided out)
    tw = ["w0", "w1", "w2", "w3", "w4"]
    TX = np.array([[0.8, 0.0], [0.2, 0.0], [0.2, 0.0], [0.06, 0.3], [0.5, 0.05]], dtype=np.float32)
    tq = [("capital-common-countries", "w0", "w1", "w2", "w3"), ("gram1-adjective-to-adverb", "w0", "w1", "w2", "w4")]
    t_lib, t_ref = evaluate(Embeddings(tw, TX), tq), app_f_printed(tw, TX, tq)
    flags += sum(r["correct"] != q[0] for r, q in zip(t_lib, t_ref))
    cos_dev = max([cos_dev] + [abs(r["cosine"] - q[1]) for r, q in zip(t_lib, t_ref)])
    # a, b and c each the best candidate before the exclusion (x_b + x_c - x_a points along all three: cosines
    # ~1), the answer next (0.95): an evaluate that lets any one of them in answers it instead (with random
    # vectors x_a points away from the offset and its exclusion could not show)
    ew = ["e0", "e1", "e2", "e3", "e4"]
    EX = np.array([[1.0, 0.0], [1.0, 0.01], [1.0, -0.01], [0.9, 0.3], [-1.0, 0.0]], dtype=np.float32)
    eq = [("family", "e0", "e1", "e2", "e3"), ("family", "e1", "e0", "e2", "e3"), ("family", "e2", "e1", "e0", "e3")]
    e_lib, e_ref = evaluate(Embeddings(ew, EX), eq), app_f_printed(ew, EX, eq)
    excluded_ok = all(r["correct"] for r in e_lib) and all(q[0] for q in e_ref)
    flags += sum(r["correct"] != q[0] for r, q in zip(e_lib, e_ref))
    inputs_ok = _inputs_round_trip(qs)
    ok = (flags == 0 and cos_dev <= COS_TOL and groups_ok and count_errors == 0 and sum_dev <= 1e-12
          and len(judged) >= 0.9 * len(qs) and 0 < n_correct < len(qs) and all(inputs_ok.values()) and excluded_ok)
    return holds_if(ok, measured=dict(questions=len(qs), judged_on_answer=len(judged), correct=n_correct,
                                      answer_mismatches=flags, max_cosine_dev=cos_dev, groups_ok=groups_ok,
                                      summary_count_errors=count_errors, summary_dev=sum_dev, inputs=inputs_ok,
                                      a_b_c_excluded_where_best=excluded_ok),
                    tolerance=dict(cosine=COS_TOL, summary=1e-12, answers="exact where the best two candidates "
                                   f"differ by more than {GAP_MIN}"),
                    explanation="120 float32 embeddings (a repeated word, a zero vector), 240 questions (their words "
                                "strings equal to the vocabulary's, as read from a file) in two "
                                "semantic and two syntactic categories (every 8th answer is a, so never found): "
                                "the library's evaluate against App. F question by question in float64 (argmax of "
                                "the cosine over d not in {a, b, c}, the answer's cosine), its summarize against "
                                "plain counts and means of the records (also with the records' strings made at run "
                                "time, as read back from a file); read_questions on the questions written in "
                                "questions-words.txt's layout (': category' headers, mixed case, blank lines) gives "
                                "them back and refuses lines of 3 or 5 words or before a header; Embeddings refuses "
                                "vectors that are not (len(words), dim); windows of the substitute MLM against the slices written out; and a "
                                "5-word instance whose every candidate points away from the offset (the best cosine "
                                "negative) with vectors shorter than 1, and one where a, b and c are each the best candidate "
                                "before their exclusion")


def _inputs_round_trip(qs) -> dict:
    """read_questions on `qs` written as questions-words.txt (a header per category run, words in mixed case, a
    blank line) returns them, lower-cased, in order; windows(docs, S) are every length-S slice of every document
    at stride 1, documents shorter than S giving none."""
    import tempfile
    from pathlib import Path

    from attnlab.experiments.models.bidir_analogy import read_questions, windows

    lines, cat = [], None
    for k, (c, *w) in enumerate(qs):
        if c != cat:
            lines += ["", f": {c}"] if lines else [f": {c}"]
            cat = c
        lines.append(" ".join(x.upper() if (k + i) % 3 == 0 else x.capitalize() if (k + i) % 3 == 1 else x
                              for i, x in enumerate(w)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "questions-words.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        parsed = read_questions(path)
        # a question line of 3 or 5 words, and one before any ': category' header, is refused in one line
        bad = {}
        for name, text in (("3 words", ": family\nboy girl king\n"), ("5 words", ": family\nboy girl king queen x\n"),
                           ("no header", "boy girl king queen\n")):
            path.write_text(text, encoding="utf-8")
            bad[name] = refused(lambda: read_questions(path), "malformed analogy line")
    from attnlab.experiments.models.bidir_analogy import Embeddings

    # vectors that are not (len(words), dim): a 1-D array of len(words), a 3-D one, a row short
    vec_refused = all(refused(lambda X=X: Embeddings(["a", "b", "c"], X), "vectors must be (len(words), dim)")
                      for X in (np.ones(3), np.ones((3, 2, 2)), np.ones((2, 4))))
    # 300 words (beyond the integers Python keeps unique) and their 300 rows are accepted
    try:
        vec_refused &= len(Embeddings([f"v{i}" for i in range(300)], np.ones((300, 4))).words) == 300
    except ValueError:
        vec_refused = False
    # a window shorter than 2 (no context left around the masked token), or not an integer, is refused
    vec_refused &= all(refused(lambda S=S: windows([[1, 2, 3]], S), "S must be an integer >= 2") for S in (1, 0, "3"))
    want = [(c, *(x.lower() for x in w)) for c, *w in qs]
    docs = [[3, 1, 4, 1, 5, 9, 2], [6, 5], [3, 5, 8, 9, 7, 9]]
    win_ok = True
    for S in (2, 3, 6):
        slices = [d[i:i + S] for d in docs for i in range(len(d) - S + 1)]
        got = windows(docs, S)
        win_ok &= got.shape == (len(slices), S) and [list(map(int, r)) for r in got] == slices
    return dict(read_questions=parsed == want, windows=bool(win_ok), malformed_lines_refused=all(bad.values()),
                embeddings_shape_refused=vec_refused)


@claim("bidir.app-f.analogy-protocol",
       reference="App. F (\"we look for the word d != a, b, c in the vocabulary such that the cosine similarity "
                 "between x_d and x_b + x_c - x_a is maximized\"); Sec. 4.1 (evaluation metrics); Table 3",
       statement="A question a : b :: c : ? is answered by the word d not in {a, b, c} maximising cos(x_d, x_b + "
                 "x_c - x_a); accuracy is the share of questions answered correctly, and the second metric the mean "
                 "cosine between x_b + x_c - x_a and the correct answer, overall, per group (semantic; syntactic "
                 "= the 'gram' categories) and per category.",
       method="float64",
       vouches_for=("experiments.models.bidir_analogy.evaluate", "experiments.models.bidir_analogy.summarize",
                    "experiments.models.bidir_analogy.windows"))
def _analogy_protocol():
    return check_analogy_protocol()
