"""Words as strings of symbols with incrementally maintained pair counts: the heart of both trainers."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence


class _PairMerger:
    """Words as strings of symbols, with incrementally maintained pair counts.

    A symbol is an integer id, stored as the character ``chr(id)``, so that a
    word is a ``str`` and merging a pair everywhere in it is ``str.replace``
    (left to right, non-overlapping: exactly BPE's rule) and its pairs are
    ``zip(word, word[1:])``, both running in C. Pairs are tuples of two such
    characters (``(chr(a), chr(b))`` sorts as ``(a, b)``).

    ``pair_counts[(a, b)]`` is the number of times ``b`` directly follows
    ``a`` over all words, each word weighted by its frequency; with
    ``count_symbols``, ``symbol_counts`` counts single symbols the same way.
    ``merge`` replaces every occurrence of a pair by a new symbol and updates
    only the counts around each occurrence: for ``l a b r`` -> ``l X r`` (word
    frequency ``f``), ``(a, b)``, ``(l, a)`` and ``(b, r)`` lose ``f``,
    ``(l, X)`` and ``(X, r)`` gain it (``l`` is ``X`` itself when the previous
    occurrence ended right there). ``where`` may list a word for a pair it no
    longer contains; merging such a word is a no-op.
    """

    def __init__(self, words: Sequence[Sequence[int]], freqs: Iterable[int], count_symbols: bool = False):
        self.words = ["".join(map(chr, w)) for w in words]
        self.freqs = list(freqs)
        counts: Counter = Counter()
        where: dict = {}
        singles: Counter | None = Counter() if count_symbols else None
        ones, one_symbols = [], []              # pairs and symbols of frequency-1 words: counted at once, in C
        for i, (word, f) in enumerate(zip(self.words, self.freqs)):
            pairs = list(zip(word, word[1:]))
            if f == 1:
                ones.extend(pairs)
                one_symbols.extend(word)
            else:
                self._add(counts, pairs, f)
                if singles is not None:
                    self._add(singles, word, f)
            for pair in pairs:
                where.setdefault(pair, set()).add(i)
        counts.update(ones)
        if singles is not None:
            singles.update(one_symbols)
        self.pair_counts, self.where, self.symbol_counts = counts, where, singles

    @staticmethod
    def _add(counter: Counter, items, f: int) -> None:
        if f == 1:
            counter.update(items)            # counted in C
        else:
            for x in items:
                counter[x] += f

    def merge(self, pair: tuple[str, str], new_symbol: str) -> dict:
        """Replace every ``pair`` by ``new_symbol``; return ``{pair: new count}`` of the pairs whose count grew."""
        a, b = pair
        ab = a + b
        delta: dict = {}
        counts, where, singles, words, freqs = self.pair_counts, self.where, self.symbol_counts, self.words, self.freqs
        for i in where.pop(pair, ()):
            word = words[i]
            k = word.find(ab)
            if k < 0:
                continue
            f, n, prev_end, hits = freqs[i], len(word), -1, 0
            while k >= 0:               # occurrence `l a b r` -> `l X r`; l is X if an occurrence just ended
                hits += 1
                if k > 0:
                    left = new_symbol if k == prev_end else word[k - 1]
                    p = (left, a)
                    delta[p] = delta.get(p, 0) - f
                    p = (left, new_symbol)
                    delta[p] = delta.get(p, 0) + f
                    where.setdefault(p, set()).add(i)
                if k + 2 < n:
                    right = word[k + 2]
                    p = (b, right)
                    delta[p] = delta.get(p, 0) - f
                    p = (new_symbol, right)
                    delta[p] = delta.get(p, 0) + f
                    where.setdefault(p, set()).add(i)
                prev_end = k + 2
                k = word.find(ab, prev_end)
            delta[pair] = delta.get(pair, 0) - hits * f
            words[i] = word.replace(ab, new_symbol)
            if singles is not None:
                singles[a] -= hits * f
                singles[b] -= hits * f
                singles[new_symbol] += hits * f
        grown = {}
        for p, d in delta.items():
            if d:
                c = counts[p] + d
                if d > 0:
                    grown[p] = c
                if c:
                    counts[p] = c
                else:
                    del counts[p]
        if singles is not None:
            for s in {a, b}:
                if singles[s] == 0:
                    del singles[s]
        return grown
