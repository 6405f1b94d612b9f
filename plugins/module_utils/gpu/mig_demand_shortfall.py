# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG demand planner, the smallest shortfall, exactly. Pure, no I/O; used by gpu/mig_demand.py
(method: docs/mig.md#mig-from-demand).

For the shortfall only the capacity a node ends with counts, not where it starts: nodes whose groups
(gpu/mig_demand_pool.py) can end with the same set of capacities (over the demanded resources; only the
ones no other dominates) form a class. A depth-first branch and bound over how many nodes of a class end
with each capacity finds the smallest shortfall; it has no step limit. What keeps it small: capacities
are non-negative, so the remaining need is clipped at 0 and two branches that reach the same
(class, capacity, nodes left, need) are the same sub-problem (visited once); bounds from the Lagrangian
relaxation (weights y in [0, 1]: y.need - sum over what is left of nodes x max y.capacity) and from each
resource on its own; the first dive follows the relaxation's weights.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand_search import prune


def _ceil_div(a, b):
    return -(-a // b)


def _dot(y, vector):
    return sum(a * b for a, b in zip(y, vector))


def _maxima(vectors):
    """The vectors no other one dominates (each once)."""
    unique = sorted(set(vectors), reverse=True)
    return [v for v in unique if not any(o != v and all(a >= b for a, b in zip(o, v)) for o in unique)]


def classes_of(groups):
    """[(capacities, [(group index, {capacity: option index, or None for staying})])]: groups whose nodes
    can end with the same capacities (``base`` of a group: what its nodes offer now)."""
    by_key = {}
    for gi, group in enumerate(groups):
        reach = {group.base: None}
        for oi, (_name, delta) in enumerate(group.options):
            reach.setdefault(tuple(b + d for b, d in zip(group.base, delta)), oi)
        by_key.setdefault(tuple(_maxima(reach)), []).append((gi, reach))
    return sorted(by_key.items(), key=lambda item: (-sum(len(groups[gi].nodes) for gi, _r in item[1]), item[0]))


def lagrange_weights(classes, need, rounds=120):
    """Weights y in [0, 1] that make the Lagrangian bound good (projected supergradient ascent)."""
    y = [1.0 if n > 0 else 0.0 for n in need]
    best, best_y = None, list(y)
    scale = [max([1] + [v[r] for _s, vs in classes for v in vs]) for r in range(len(need))]
    for step in range(1, rounds + 1):
        value, slope = _dot(y, need), list(need)
        for size, vectors in classes:
            top = max(vectors, key=lambda v: _dot(y, v))
            value -= size * _dot(y, top)
            slope = [g - size * t for g, t in zip(slope, top)]
        if best is None or value > best:
            best, best_y = value, list(y)
        norm = sum((g / s) ** 2 for g, s in zip(slope, scale)) ** 0.5 or 1.0
        y = [min(1.0, max(0.0, w + 0.5 * g / s / norm / step ** 0.5)) for w, g, s in zip(y, slope, scale)]
    return best_y


class ShortfallSearch(object):
    """Smallest shortfall over classes of (size, [capacity vectors]) for a need per resource."""

    def __init__(self, classes, need):
        self.need = tuple(max(0, n) for n in need)
        self.classes, self.active = [], []
        for index, (size, vectors) in enumerate(classes):
            if len(vectors) == 1:       # no choice: every node ends with it
                self.need = self._take(self.need, vectors[0], size)
            else:
                self.classes.append((size, vectors))
                self.active.append(index)
        self.fixed = [(size, vectors[0]) if len(vectors) == 1 else None for size, vectors in classes]
        self.weights = [[1.0] * len(need), lagrange_weights(self.classes, self.need)]
        for index, (size, vectors) in enumerate(self.classes):
            y = self.weights[-1]
            self.classes[index] = (size, sorted(vectors, key=lambda v: (-_dot(y, v), v)))
        self._tables()
        self.steps = 0
        self.best, self.choice = None, []

    @staticmethod
    def _take(need, vector, times):
        return tuple(max(0, n - times * v) for n, v in zip(need, vector))

    def _tables(self):
        count, width = len(self.classes), len(self.need)
        self.avail = [[0] * width for _i in range(count + 1)]
        self.lag = [[0.0] * len(self.weights) for _i in range(count + 1)]
        self.tail_max, self.tail_lag = [], []
        for c in range(count - 1, -1, -1):
            size, vectors = self.classes[c]
            self.avail[c] = [a + size * max(v[r] for v in vectors) for r, a in enumerate(self.avail[c + 1])]
            self.lag[c] = [a + size * max(_dot(y, v) for v in vectors) for y, a in zip(self.weights, self.lag[c + 1])]
        for size, vectors in self.classes:
            self.tail_max.append([[max(v[r] for v in vectors[k:]) for r in range(width)] for k in range(len(vectors))])
            self.tail_lag.append([[max(_dot(y, v) for v in vectors[k:]) for y in self.weights]
                                  for k in range(len(vectors))])

    def bound(self, state):
        """A lower bound on the shortfall of every completion of ``state`` (class, option, nodes left, need)."""
        c, k, rem, need = state
        if c == len(self.classes):
            return sum(need)
        tail = self.tail_max[c][k]
        alone = sum(max(0, n - rem * t - a) for n, t, a in zip(need, tail, self.avail[c + 1]))
        relaxed = max(_dot(y, need) - rem * t - a
                      for y, t, a in zip(self.weights, self.tail_lag[c][k], self.lag[c + 1]))
        return max(alone, int(_ceil_div(int(round(relaxed * 1e6)), 1000000)) if relaxed > 0 else 0)

    def _next(self, state, times):
        """The state after ``times`` nodes of the class end with option k; the last option takes the rest."""
        c, k, rem, need = state
        size, vectors = self.classes[c]
        need, rem = self._take(need, vectors[k], times), rem - times
        if k + 2 < len(vectors):
            return (c, k + 1, rem, need)
        need = self._take(need, vectors[-1], rem)
        if c + 1 == len(self.classes):
            return (c + 1, 0, 0, need)
        return (c + 1, 0, self.classes[c + 1][0], need)

    def _choices(self, state):
        c, k, rem, need = state
        vector = self.classes[c][1][k]
        wanted = [_ceil_div(n, v) for n, v in zip(need, vector) if n > 0 and v > 0]
        return iter(range(min(rem, max(wanted or [0])), -1, -1))

    def run(self, incumbent):
        """The smallest shortfall and [(class, option, count)] of a plan that has it; ``incumbent`` is the
        shortfall of a plan already known (the search looks for a better one only)."""
        self.best = incumbent
        self.root_bound = sum(self.need)
        if not self.classes:
            self.best, self.choice = min(incumbent, self.root_bound), []
            return self.best
        root = (0, 0, self.classes[0][0], tuple(self.need))
        self.root_bound = self.bound(root)
        seen = set()
        stack, path = [(root, self._choices(root))], []
        while stack and self.best > self.root_bound:
            state, choices = stack[-1]
            times = next(choices, None)
            if times is None:
                stack.pop()
                continue
            self.steps += 1
            del path[len(stack) - 1:]
            path.append((state[0], state[1], times))
            child = self._next(state, times)
            if child[0] == len(self.classes):
                if sum(child[3]) < self.best:
                    self.best, self.choice = sum(child[3]), list(path)
            elif child not in seen and self.bound(child) < self.best:
                seen.add(child)
                stack.append((child, self._choices(child)))
        return self.best

    def counts(self):
        """Per class given, {capacity vector: nodes that end with it} of the best plan run found."""
        out = [{vector: size} if vector else {} for vector, size in
               ((f[1], f[0]) if f else (None, 0) for f in self.fixed)]
        for c, k, times in self.choice:
            vector = self.classes[c][1][k]
            out[self.active[c]][vector] = out[self.active[c]].get(vector, 0) + times
        for c, (size, vectors) in enumerate(self.classes):
            index = self.active[c]
            out[index][vectors[-1]] = out[index].get(vectors[-1], 0) + size - sum(out[index].values())
        return out


def _group_counts(groups, members, wanted):
    """Counts per (group, option) that give each capacity vector as often as ``wanted`` says, with as
    many nodes as possible staying (a node stays where it already offers the wanted vector)."""
    wanted, free, counts = dict(wanted), {}, {}
    for gi, _reach in members:
        stay = min(wanted.get(groups[gi].base, 0), len(groups[gi].nodes))
        wanted[groups[gi].base] = wanted.get(groups[gi].base, 0) - stay
        free[gi] = len(groups[gi].nodes) - stay
    for vector, times in sorted(wanted.items()):
        for gi, reach in members:
            take = min(times, free[gi])
            if take and reach.get(vector) is not None:
                counts[(gi, reach[vector])] = counts.get((gi, reach[vector]), 0) + take
                free[gi] -= take
                times -= take
    return counts


def smallest_shortfall(groups, deficit, incumbent):
    """(shortfall, counts per (group, option)): the smallest shortfall any plan has, and a plan with it
    (``incumbent``, the counts of a plan, when it has it already); the ShortfallSearch used."""
    need = [d + sum(len(g.nodes) * g.base[r] for g in groups) for r, d in enumerate(deficit)]
    classes = classes_of(groups)
    search = ShortfallSearch([(sum(len(groups[gi].nodes) for gi, _r in members), list(key))
                              for key, members in classes], need)
    known = incumbent_shortfall(groups, deficit, incumbent)
    if search.run(known) >= known:
        return known, incumbent, search
    counts = {}
    for (_key, members), wanted in zip(classes, search.counts()):
        counts.update(_group_counts(groups, members, wanted))
    return search.best, prune(groups, counts, remaining_deficit(groups, deficit, counts)), search


def remaining_deficit(groups, deficit, counts):
    """The deficit per resource once the plan ``counts`` is applied."""
    deficit = list(deficit)
    for (gi, oi), times in counts.items():
        deficit = [d - times * e for d, e in zip(deficit, groups[gi].options[oi][1])]
    return deficit


def incumbent_shortfall(groups, deficit, counts):
    return sum(d for d in remaining_deficit(groups, deficit, counts) if d > 0)
