# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the upgrade role's Helm method: the plan from what the role read, the variables' errors, and the
versions a chart repository's index offers.

Thin wrappers over module_utils.plans.helm_upgrade; documentation in helm_upgrade_plan.yml,
helm_upgrade_input_errors.yml and helm_chart_versions.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def _by_operator(results):
    """{operator: result} of a loop's results (each ``item`` a release or a pull of the plan)."""
    return dict((r['item']['operator'], r) for r in results or [] if isinstance(r, dict) and 'item' in r)


def _pull_error(result):
    if result is None or not (result.get('failed') or result.get('rc')):
        return None
    return (result.get('stderr') or result.get('msg') or 'helm pull failed').strip()


def _release(rel, reads, infos, computed, pulls, refusals):
    out = dict(rel, info=infos.get(rel['operator']) or {},
               computed=((computed.get(rel['operator']) or {}).get('status') or {}).get('values') or {},
               offered=(reads.get('offered') or {}).get(rel['operator']))
    if rel['operator'] in pulls:
        out['pull_error'] = _pull_error(pulls[rel['operator']])
        out['chart'] = (reads.get('charts') or {}).get(rel['operator'])
        out['crd_refusals'] = refusals.get(rel['operator'], [])
    return out


def helm_upgrade_plan(reads):
    """The Helm upgrade's plan (module_utils.plans.helm_upgrade.helm_upgrade_plan) from the role's reads."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import helm_upgrade
    if not isinstance(reads, dict) or not isinstance(reads.get('releases'), list):
        raise AnsibleFilterError('helm_upgrade_plan: expects a mapping with the list releases')
    infos, computed, pulls = (_by_operator(reads.get(key)) for key in ('infos', 'computed', 'pulls'))
    lock = reads.get('lock')
    refusals = helm_upgrade.crd_refusals(reads.get('crd_checks'))
    request = dict(reads, lock=lock.get('lock') if isinstance(lock, dict) else None,
                   releases=[_release(rel, reads, infos, computed, pulls, refusals) for rel in reads['releases']])
    try:
        return helm_upgrade.helm_upgrade_plan(request)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError('helm_upgrade_plan: %s' % exc)


def helm_upgrade_input_errors(request):
    """The errors of the Helm upgrade's variables (the releases to upgrade and the options)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import helm_upgrade
    if not isinstance(request, dict) or not isinstance(request.get('releases'), list):
        raise AnsibleFilterError('helm_upgrade_input_errors: expects a mapping with the list releases')
    return helm_upgrade.input_errors(request)


def helm_chart_versions(index, chart_ref):
    """The versions of chart ``chart_ref`` a repository index (index.yaml, parsed) lists; None without an index."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import helm_upgrade
    if not isinstance(index, dict):
        return None
    entries = (index.get('entries') or {}).get(helm_upgrade.chart_name(chart_ref)) or []
    return [str(e['version']) for e in entries if isinstance(e, dict) and e.get('version') is not None]


class FilterModule(object):
    """gpuops.gpu Helm upgrade filters."""

    def filters(self):
        return plain_filters({'helm_upgrade_plan': helm_upgrade_plan,
                              'helm_upgrade_input_errors': helm_upgrade_input_errors,
                              'helm_chart_versions': helm_chart_versions})
