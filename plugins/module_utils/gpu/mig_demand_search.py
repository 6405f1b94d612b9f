# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG demand planner, the search: counts of nodes per (group, target) that minimise (shortfall, changes,
pods). A greedy first plan, an LP-dual lower bound, and a branch and bound. Pure, no I/O; used by
gpu/mig_demand.py (method and bound: docs/mig.md#mig-from-demand)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


# ---------------------------------------------------------------------------
# Search: counts per (group, target); objective (shortfall, changes, pods)
# ---------------------------------------------------------------------------

def _shortfall(deficit):
    return sum(d for d in deficit if d > 0)


def _ceil_div(a, b):
    return -(-a // b)


def _apply(deficit, delta, times):
    return [d - times * e for d, e in zip(deficit, delta)]


def _greedy_batch(remaining, deficit, delta):
    """How many nodes can take the same target before its value changes (at least one)."""
    limits = [remaining]
    for d, e in zip(deficit, delta):
        if e > 0 and d > 0:
            limits.append(max(1, d // e))
        elif e < 0 and d <= 0:
            limits.append(max(1, (-d) // (-e)))
    return min(limits)


def _greedy_pick(groups, used, deficit, scale):
    best = None
    for gi, group in enumerate(groups):
        if used[gi] == len(group.nodes):
            continue
        for oi, (_name, delta) in enumerate(group.options):
            score = sum((max(d, 0) - max(d - e, 0)) / s for d, e, s in zip(deficit, delta, scale))
            if score > 1e-9 and (best is None or score > best[0] + 1e-9):
                best = (score, gi, oi)
    return best


def greedy(groups, deficit, scale):
    """A first plan: repeatedly the target that covers most of the normalised deficit."""
    used = [0] * len(groups)
    counts = {}
    deficit = list(deficit)
    while _shortfall(deficit):
        pick = _greedy_pick(groups, used, deficit, scale)
        if pick is None:
            break
        gi, oi = pick[1], pick[2]
        delta = groups[gi].options[oi][1]
        times = _greedy_batch(len(groups[gi].nodes) - used[gi], deficit, delta)
        used[gi] += times
        counts[(gi, oi)] = counts.get((gi, oi), 0) + times
        deficit = _apply(deficit, delta, times)
    return prune(groups, counts, deficit)


def prune(groups, counts, deficit):
    """Undo changes that the shortfall does not need."""
    for key in sorted(counts, reverse=True):
        delta = groups[key[0]].options[key[1]][1]
        while counts[key] and _shortfall(_apply(deficit, delta, -1)) <= _shortfall(deficit):
            counts[key] -= 1
            deficit = _apply(deficit, delta, -1)
    return dict((k, v) for k, v in counts.items() if v)


def plan_cost(groups, counts, deficit):
    """(shortfall, changes, pods) of a plan given as counts per (group, target)."""
    used = [0] * len(groups)
    pods = 0
    for (gi, oi), times in sorted(counts.items()):
        deficit = _apply(deficit, groups[gi].options[oi][1], times)
        pods += groups[gi].pod_prefix[used[gi] + times] - groups[gi].pod_prefix[used[gi]]
        used[gi] += times
    return (_shortfall(deficit), sum(counts.values()), pods)


def changes_bound(search, groups, deficit, shortfall):
    """Fewest changes any plan with ``shortfall`` (the smallest) needs: the search's bounds when the demand
    can be met; otherwise what must still be covered over the most one change covers."""
    if not shortfall:
        return search.bound()
    covered = sum(d for d in deficit if d > 0) - shortfall
    most = max([0] + [sum(min(max(d, 0), max(e, 0)) for d, e in zip(deficit, o[1])) for g in groups for o in g.options])
    return _ceil_div(covered, most) if covered > 0 and most else 0


class Search(object):
    """Branch and bound over (group, target) counts, starting from an incumbent plan."""

    def __init__(self, groups, deficit, budget):
        self.groups, self.deficit, self.budget = groups, list(deficit), budget
        self.vars = [(gi, oi) for gi, group in enumerate(groups) for oi in range(len(group.options))]
        width = len(deficit)
        best_of = [[max([0] + [o[1][r] for o in g.options]) for r in range(width)] for g in groups]
        self.gsum = [[0] * width for _index in range(len(groups) + 1)]
        self.gmax = [[0] * width for _index in range(len(groups) + 1)]
        for gi in range(len(groups) - 1, -1, -1):
            size = len(groups[gi].nodes)
            self.gsum[gi] = [a + size * b for a, b in zip(self.gsum[gi + 1], best_of[gi])]
            self.gmax[gi] = [max(a, b) for a, b in zip(self.gmax[gi + 1], best_of[gi])]
        self.wbest, self.wloss = [], []
        for gi, oi in self.vars:
            rest = groups[gi].options[oi:]
            self.wbest.append([max([0] + [o[1][r] for o in rest]) for r in range(width)])
            self.wloss.append([max([0] + [-o[1][r] for o in rest[1:]]) for r in range(width)])
        # the most each resource can still lose to later groups (targets that offer less of it)
        self.lsum = [[0] * width for _index in range(len(groups) + 1)]
        for gi in range(len(groups) - 1, -1, -1):
            worst = [max([0] + [-o[1][r] for o in groups[gi].options]) for r in range(width)]
            self.lsum[gi] = [a + len(groups[gi].nodes) * b for a, b in zip(self.lsum[gi + 1], worst)]
        self.steps, self.complete = 0, True
        self.best, self.best_counts = None, {}
        self._bound = None

    def lower_bound(self):
        """Fewest changes any plan with the smallest possible shortfall needs (root bound)."""
        gain = self.gsum[0]
        needed = [_ceil_div(min(d, g), m) for d, g, m in zip(self.deficit, gain, self.gmax[0]) if d > 0 and m > 0]
        return max(needed or [0])

    def dual_bound(self, rounds=150):
        """A lower bound on the changes of any plan that meets the demand, from the LP dual: for weights
        y >= 0, y.D - sum over groups of size x max(0, best y.delta - 1) (projected subgradient ascent)."""
        rows = {}
        for group in self.groups:
            key = tuple(o[1] for o in group.options)
            rows[key] = rows.get(key, 0) + len(group.nodes)
        scale = [m or 1 for m in self.gmax[0]]
        weights = [1.0 if d > 0 else 0.0 for d in self.deficit]
        best = 0.0
        for step in range(1, rounds + 1):
            y = [w / s for w, s in zip(weights, scale)]
            value, slope = sum(a * d for a, d in zip(y, self.deficit)), list(self.deficit)
            for deltas, size in rows.items():
                top = max(deltas, key=lambda delta: sum(a * e for a, e in zip(y, delta)))
                excess = sum(a * e for a, e in zip(y, top)) - 1
                if excess > 0:
                    value -= size * excess
                    slope = [g - size * e for g, e in zip(slope, top)]
            best = max(best, value)
            norm = sum((g / s) ** 2 for g, s in zip(slope, scale)) ** 0.5 or 1.0
            weights = [max(0.0, w + (g / s) / norm / step ** 0.5) for w, g, s in zip(weights, slope, scale)]
        return int(best - 1e-6) + 1 if best > 1e-6 else 0

    def bound(self):
        """Fewest changes any plan that meets the demand needs (the better of the two bounds)."""
        if self._bound is None:
            self._bound = max(self.lower_bound(), self.dual_bound())
        return self._bound

    def run(self, counts):
        self.best, self.best_counts = plan_cost(self.groups, counts, self.deficit), dict(counts)
        if self.vars:
            self._visit(0, len(self.groups[0].nodes), 0, self.deficit, 0, 0, [0] * len(self.vars))
        return self.best_counts

    def _record(self, cost, current):
        if cost < self.best:
            self.best = cost
            self.best_counts = dict((self.vars[i], x) for i, x in enumerate(current) if x)

    def _pruned(self, i, rem, deficit, changes, pods):
        gi = self.vars[i][0]
        gain = [rem * w + s for w, s in zip(self.wbest[i], self.gsum[gi + 1])]
        short = sum(max(0, d - g) for d, g in zip(deficit, gain))
        if short != self.best[0]:
            return short > self.best[0]
        most = [max(w if rem else 0, m) for w, m in zip(self.wbest[i], self.gmax[gi + 1])]
        needed = [_ceil_div(min(d, g), m) for d, g, m in zip(deficit, gain, most) if d > 0 and m > 0]
        return (changes + max(needed or [0]), pods) >= self.best[1:]

    def _visit(self, i, rem, used, deficit, changes, pods, current):
        self.steps += 1
        if self.steps > self.budget:
            self.complete = False
            return
        self._record((_shortfall(deficit), changes, pods), current)
        if i == len(self.vars) or self._pruned(i, rem, deficit, changes, pods):
            return
        gi, oi = self.vars[i]
        group, delta = self.groups[gi], self.groups[gi].options[oi][1]
        # more copies than the deficit can ever reach (later targets may still lower a resource) are no use
        loss = [rem * w + s for w, s in zip(self.wloss[i], self.lsum[gi + 1])]
        wanted = [_ceil_div(d + lost, e) for d, lost, e in zip(deficit, loss, delta) if d + lost > 0 and e > 0]
        top = min(rem, max(wanted or [0]))
        same = i + 1 < len(self.vars) and self.vars[i + 1][0] == gi
        for times in range(top, -1, -1):
            current[i] = times
            added = group.pod_prefix[used + times] - group.pod_prefix[used]
            if same:
                nxt = (rem - times, used + times)
            else:
                nxt = (len(self.groups[self.vars[i + 1][0]].nodes) if i + 1 < len(self.vars) else 0, 0)
            self._visit(i + 1, nxt[0], nxt[1], _apply(deficit, delta, times), changes + times, pods + added,
                        current)
            if not self.complete:
                break
        current[i] = 0
