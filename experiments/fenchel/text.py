"""Offline text for the deviation experiment: the movie-review sentences of the data layer
(``attnlab.experiments.data``, data set ``movie-review-sentences``), a word-level vocabulary, BERT-style
masking for masked-language modelling and T5-style span corruption.

The paper does not say which text it fed to BERT and T5 (Sec 8); any English text serves the
purpose of the measurement.
"""
from __future__ import annotations

import gzip
import re
from collections import Counter

import numpy as np
import torch

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]"]
N_SENTINELS = 16
PAD, UNK, CLS, SEP, MASK, BOS, EOS = range(7)
_WORD = re.compile(r"[a-z0-9']+|[^\sa-z0-9']")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def load_sentences(path=None) -> list[str]:
    """The 10,605 review sentences (column ``text``), in file order."""
    from attnlab.experiments.data import data_file

    p = data_file("movie-review-sentences", "sentences.tsv.gz", path)
    with gzip.open(p, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    if not lines or lines[0].split("\t")[-1] != "text":
        raise ValueError(f"{p}: expected a header ending in a 'text' column")
    return [ln.split("\t", 3)[3] for ln in lines[1:] if ln.count("\t") >= 3]


class Vocab:
    """Word-level vocabulary: specials, T5 sentinels <extra_id_k>, then the most frequent words."""

    def __init__(self, sentences: list[list[str]], max_size: int = 6000, min_count: int = 2):
        cnt = Counter(w for s in sentences for w in s)
        self.itos = SPECIALS + [f"<extra_id_{k}>" for k in range(N_SENTINELS)]
        self.first_word = len(self.itos)
        self.itos += [w for w, c in cnt.most_common(max_size) if c >= min_count]
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def sentinel(self, k: int) -> int:
        return len(SPECIALS) + k

    def encode(self, words: list[str]) -> list[int]:
        return [self.stoi.get(w, UNK) for w in words]


def split_corpus(sentences: list[str], n_eval: int, max_words: int):
    """A fixed split (independent of the run's seed): every 20th sentence is held out for evaluation
    until n_eval are taken.  Returns (train, eval) as lists of word lists (truncated to max_words)."""
    toks = [tokenize(s)[:max_words] for s in sentences]
    toks = [t for t in toks if len(t) >= 4]
    held = set(range(0, len(toks), 20)[:n_eval])
    train = [t for i, t in enumerate(toks) if i not in held]
    evl = [toks[i] for i in sorted(held)]
    return train, evl


def pad_batch(seqs: list[list[int]]):
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, ids != PAD


def bert_inputs(words: list[int]) -> list[int]:
    return [CLS] + words + [SEP]


def mlm_mask(ids: torch.Tensor, valid: torch.Tensor, vocab_size: int, first_word: int,
             rng: np.random.Generator, rate: float = 0.15):
    """BERT masking (Devlin et al. 2019): 15% of the word positions are targets; of those 80% become
    [MASK], 10% a random word, 10% stay.  Returns (inputs, labels with -100 on non-targets)."""
    word = valid & (ids >= first_word) | valid & (ids == UNK)
    r = torch.from_numpy(rng.random(ids.shape))
    target = word & (r < rate)
    labels = torch.where(target, ids, torch.full_like(ids, -100))
    r2 = torch.from_numpy(rng.random(ids.shape))
    inp = ids.clone()
    inp[target & (r2 < 0.8)] = MASK
    rand = torch.from_numpy(rng.integers(first_word, vocab_size, size=ids.shape))
    swap = target & (r2 >= 0.8) & (r2 < 0.9)
    inp[swap] = rand[swap]
    return inp, labels


def _segments(rng, n_items: int, n_segments: int) -> list[int]:
    """Random positive integers summing to n_items (T5's random segmentation)."""
    if n_segments <= 1:
        return [n_items]
    cuts = np.sort(rng.choice(np.arange(1, n_items), n_segments - 1, replace=False))
    return list(np.diff(np.concatenate([[0], cuts, [n_items]])).astype(int))


def span_corrupt(words: list[int], vocab: Vocab, rng: np.random.Generator, density: float = 0.15,
                 mean_span: float = 3.0):
    """T5 span corruption (Raffel et al. 2020): noise spans (density 0.15, mean length 3) are replaced
    by sentinels in the source; the target lists each sentinel followed by its span.  Returns
    (source, target), both ending in [EOS]."""
    n = len(words)
    n_noise = min(max(1, int(round(n * density))), n - 1)
    n_spans = max(1, min(int(round(n_noise / mean_span)), n_noise, n - n_noise, N_SENTINELS))
    noise_len = _segments(rng, n_noise, n_spans)
    keep_len = _segments(rng, n - n_noise, n_spans)
    src, tgt, i = [], [], 0
    for k in range(n_spans):
        src += words[i:i + keep_len[k]]
        i += keep_len[k]
        src.append(vocab.sentinel(k))
        tgt += [vocab.sentinel(k)] + words[i:i + noise_len[k]]
        i += noise_len[k]
    return src + [EOS], tgt + [EOS]
