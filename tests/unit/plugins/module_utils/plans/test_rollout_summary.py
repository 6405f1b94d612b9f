# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a rollout did (plans/rollout_summary.py): the summary table the rollout roles print and the set_stats
artifact, directly and through the filters rollout_summary_table and rollout_stats."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.rollout import rollout_stats, rollout_summary_table
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import rollout_summary as rs


def done_node(name, **extra):
    st = {'node': name, 'from': 'all-disabled', 'to': 'all-1g.5gb', 'phase': 'done', 'changed': True,
          'evicted': ['ml/a', 'ml/b'], 'duration_s': 75.4, 'detail': 'x', 'cycled': False}
    st.update(extra)
    return st


@pytest.mark.parametrize('seconds, words', [(0, '0s'), (9.4, '9s'), (65.2, '1m05s'), (3725, '1h02m05s'),
                                            (None, '0s')])
def test_duration_words(seconds, words):
    assert rs.duration_words(seconds) == words


class TestSummary(object):
    def test_one_row_per_node_aligned_with_totals(self):
        held = done_node('node-b', phase='failed', reason='stuck after 600s: pending', evicted=[], duration_s=601)
        lines = rs.summary_table({'nodes': [done_node('node-a'), held], 'untouched': ['node-c']}, title='MIG rollout')
        assert lines == [
            'MIG rollout: 2 node(s)',
            'NODE    FROM -> TO                  DURATION  EVICTED  RESULT',
            'node-a  all-disabled -> all-1g.5gb  1m15s     2        done',
            'node-b  all-disabled -> all-1g.5gb  10m01s    0        held: stuck after 600s: pending',
            'done 1, held 1, gone 0, not started 1',
            'not started (untouched): node-c']

    def test_several_results_skipped_ones_left_out(self):
        lines = rs.summary_table([{'nodes': [done_node('a')]}, {'skipped': True}, {'nodes': [
            done_node('b', phase='gone', reason='node deleted during the rollout')]}])
        assert lines[2].startswith('a ') and lines[3].endswith('gone: node deleted during the rollout')
        assert lines[-1] == 'done 1, held 0, gone 1, not started 0'

    def test_check_mode_lists_the_plan(self):
        plan = [{'batch': 1, 'nodes': [{'node': 'n1', 'from': None, 'to': 'v2', 'resume': True,
                                        'pods_to_evict': ['ml/p'], 'blocking_pdbs': []}]}]
        lines = rs.summary_table({'nodes': [], 'plan': plan})
        assert lines[2].split() == ['n1', '-', '->', 'v2', '-', '1', 'planned', '(resumes', 'an', 'unfinished', 'run)']
        assert lines[-1] == 'planned 1 (check mode: nothing was changed)'

    def test_nothing_to_change(self):
        assert rs.summary_table({'nodes': [], 'plan': []}, title='T') == ['T: nothing to change']
        assert rs.summary_table([]) == ['GPU rollout: nothing to change']

    @pytest.mark.parametrize('bad, words', [('text', 'item 0 is str'), ([{}, 3], 'item 1 is int'),
                                            ({'nodes': 'n1'}, 'nodes must be a list')])
    def test_bad_input_says_what_is_expected(self, bad, words):
        with pytest.raises(ValueError, match=words):
            rs.summary_table(bad)
        with pytest.raises(AnsibleFilterError, match='rollout_summary_table: .*' + words):
            rollout_summary_table(bad)
        with pytest.raises(AnsibleFilterError, match='rollout_stats: .*' + words):
            rollout_stats(bad, 'mig')


class TestStats(object):
    def test_keeps_what_the_next_job_needs(self):
        a = done_node('a', timeline={'started': '2026-11-24T10:00:00.000Z', 'uncordoned': '2026-11-24T10:01:00.000Z'})
        b = done_node('b', timeline={'started': '2026-11-24T09:59:00.000Z', 'cordoned': '2026-11-24T10:02:00.000Z'})
        out = rollout_stats([{'changed': False, 'nodes': [a]}, {'changed': True, 'nodes': [b], 'untouched': ['c']}],
                            'reset')
        assert (out['kind'], out['changed'], out['untouched']) == ('reset', True, ['c'])
        assert (out['started'], out['ended']) == ('2026-11-24T09:59:00.000Z', '2026-11-24T10:02:00.000Z')
        assert set(out['nodes'][0]) == {'node', 'from', 'to', 'phase', 'changed', 'evicted', 'duration_s', 'timeline'}

    def test_no_nodes(self):
        assert rollout_stats({'nodes': []}, 'mig') == {'kind': 'mig', 'changed': False, 'nodes': [], 'untouched': [],
                                                       'started': None, 'ended': None}
