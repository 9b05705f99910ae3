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
    the counts from the words that contained it only: each such word's old
    pairs lose its frequency and its new pairs gain it (pairs away from the
    merge cancel out). ``where`` may list a word for a pair it no longer
    contains; merging such a word is a no-op.
    """

    def __init__(self, words: Sequence[Sequence[int]], freqs: Iterable[int], count_symbols: bool = False):
        self.words = ["".join(map(chr, w)) for w in words]
        self.freqs = list(freqs)
        counts: Counter = Counter()
        where: dict = {}
        singles: Counter | None = Counter() if count_symbols else None
        for i, (word, f) in enumerate(zip(self.words, self.freqs)):
            pairs = list(zip(word, word[1:]))
            self._add(counts, pairs, f)
            if singles is not None:
                self._add(singles, word, f)
            for pair in pairs:
                where.setdefault(pair, set()).add(i)
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
        lost, gained = [], []                    # pairs of words of frequency 1, counted at the end
        weighted: Counter = Counter()            # gains minus losses of the other words
        counts, where, singles, words, freqs = self.pair_counts, self.where, self.symbol_counts, self.words, self.freqs
        for i in where.pop(pair, ()):
            word = words[i]
            merged = word.replace(ab, new_symbol)
            hits = len(word) - len(merged)
            if not hits:
                continue
            f = freqs[i]
            if f == 1:
                lost.extend(zip(word, word[1:]))
                gained.extend(zip(merged, merged[1:]))
            else:
                for p in zip(word, word[1:]):
                    weighted[p] -= f
                for p in zip(merged, merged[1:]):
                    weighted[p] += f
            words[i] = merged
            k = merged.find(new_symbol)         # the only new pairs are those touching new_symbol
            while k >= 0:
                if k > 0:
                    where.setdefault((merged[k - 1], new_symbol), set()).add(i)
                if k + 1 < len(merged):
                    where.setdefault((new_symbol, merged[k + 1]), set()).add(i)
                k = merged.find(new_symbol, k + 1)
            if singles is not None:
                singles[a] -= hits * f
                singles[b] -= hits * f
                singles[new_symbol] += hits * f
        delta = Counter(gained)
        delta.subtract(Counter(lost))
        delta.update(weighted)
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
