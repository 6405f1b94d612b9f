# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OLM v0 (Operator Lifecycle Manager) decisions. Pure, no I/O.

What an operator install through OLM needs to decide, from objects already read:

* is the CatalogSource READY (``status.connectionState.lastObservedState``);
* does the catalog's PackageManifest have the package, the channel and the pinned CSV, and do the
  channel head's ``installModes`` support the OperatorGroup we are about to create;
* which OperatorGroup install mode a ``targetNamespaces`` list asks for;
* the Subscription spec we want and the merge patch that gets an existing one there;
* which InstallPlan may be approved: with ``installPlanApproval: Manual`` ONLY a plan whose
  ``spec.clusterServiceVersionNames`` contains the pinned CSV, never the newer one OLM offers
  as soon as the pinned version is installed;
* what a ClusterServiceVersion's phase means (Succeeded, still installing, failed for good);
* the ``alm-examples`` annotation (JSON text) and ``spec.relatedImages`` of a CSV.

The cluster side (reads, writes, waits) is ``ops/olm.py``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_subdomain, label_key_errors, label_value_errors, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import toleration_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError

APPROVALS = ('Automatic', 'Manual')
INSTALL_MODES = ('OwnNamespace', 'SingleNamespace', 'MultiNamespace', 'AllNamespaces')
CSV_SUCCEEDED = 'Succeeded'
CSV_FAILED = 'Failed'
# CSV phases from which OLM does not recover by itself: the OperatorGroup (or the CSV) must be
# fixed first (operator-lifecycle-manager pkg/controller/operators/olm/operatorgroup.go, operator.go).
FATAL_CSV_REASONS = ('NoOperatorGroup', 'TooManyOperatorGroups', 'UnsupportedOperatorGroup',
                     'InterOperatorGroupOwnerConflict', 'InvalidInstallModes', 'OperatorGroupNotSupported',
                     'InvalidStrategy', 'CSVReasonInvalidStrategy')
SUBSCRIPTION_CONFIG_KEYS = ('tolerations', 'nodeSelector', 'env', 'envFrom', 'resources', 'volumes',
                            'volumeMounts', 'selector', 'affinity', 'annotations')


class OlmError(InputError, ValueError):
    """A decision that cannot be made from what the cluster says (message says what to fix)."""


# --- input validation -----------------------------------------------------------------------

def input_errors(params):
    """Check the module's inputs that need no cluster. Returns a list of messages."""
    errors = []
    for key in ('namespace', 'source_namespace'):
        if not is_dns_subdomain(params.get(key) or '') or len(params.get(key) or '') > 63:
            errors.append("%s '%s' is not a valid namespace name (lowercase letters, digits and '-')"
                          % (key, params.get(key)))
    for key in ('package', 'source'):
        if not is_dns_subdomain(params.get(key) or ''):
            errors.append("%s '%s' is not a valid object name" % (key, params.get(key)))
    if params.get('approval') not in APPROVALS:
        errors.append("approval must be Manual or Automatic, got '%s'" % params.get('approval'))
    for key, value in sorted((params.get('namespace_labels') or {}).items()):
        errors.extend('namespace_labels key %s %s' % (key, e) for e in label_key_errors(key))
        errors.extend('namespace_labels.%s %s' % (key, e) for e in label_value_errors(value))
    targets = params.get('target_namespaces')
    if targets is not None:
        for target in targets:
            if not is_dns_subdomain(target or ''):
                errors.append("target_namespaces: '%s' is not a valid namespace name" % target)
    config = params.get('config') or {}
    if not isinstance(config, dict):
        errors.append('config must be a mapping (Subscription spec.config), got %s' % type_name(config))
    else:
        errors.extend(unknown_key_errors(config, SUBSCRIPTION_CONFIG_KEYS, 'config (Subscription spec.config)'))
        errors.extend(toleration_errors(config.get('tolerations'), 'config.tolerations'))
        selector = config.get('nodeSelector')
        if selector is not None and not isinstance(selector, dict):
            errors.append('config.nodeSelector must be a mapping of label to value, got %s' % type_name(selector))
        for key, value in sorted((selector or {}).items() if isinstance(selector, dict) else []):
            errors.extend('config.nodeSelector key %s %s' % (key, e) for e in label_key_errors(key))
            errors.extend('config.nodeSelector.%s %s' % (key, e) for e in label_value_errors(value))
    csv = params.get('starting_csv')
    if csv and (not is_dns_subdomain(csv) or '.' not in csv or re.match(r'^v?[0-9]', csv)):
        errors.append("starting_csv '%s' does not look like a CSV name such as "
                      "'gpu-operator-certified.v25.10.1' (<package>.v<version>)" % csv)
    return errors


# --- OperatorGroup --------------------------------------------------------------------------

def install_mode(targets, namespace):
    """The InstallModeType an OperatorGroup with ``targetNamespaces: targets`` asks for."""
    targets = [t for t in (targets or []) if t]
    if not targets:
        return 'AllNamespaces'
    if len(targets) == 1:
        return 'OwnNamespace' if targets[0] == namespace else 'SingleNamespace'
    return 'MultiNamespace'


def operator_group_targets(operator_group):
    spec = operator_group.get('spec') or {}
    return [t for t in spec.get('targetNamespaces') or [] if t]


def supported_install_modes(csv_spec):
    return [m.get('type') for m in (csv_spec or {}).get('installModes') or [] if m.get('supported')]


def install_mode_error(mode, supported, csv_name):
    """A message when ``mode`` is not among ``supported`` (None when it is, or unknown)."""
    if not supported or mode in supported:
        return None
    advice = {
        'AllNamespaces': 'set target_namespaces to [the operator namespace] (OwnNamespace)',
        'OwnNamespace': 'this operator must watch other namespaces; set target_namespaces accordingly',
    }.get(mode, 'use one of the supported modes')
    return ('%s supports install modes %s, not %s; %s' % (csv_name, ', '.join(supported), mode, advice))


def desired_operator_group(name, namespace, targets):
    spec = {'targetNamespaces': list(targets)} if targets else {}
    return {'apiVersion': 'operators.coreos.com/v1', 'kind': 'OperatorGroup',
            'metadata': {'name': name, 'namespace': namespace}, 'spec': spec}


# --- CatalogSource and PackageManifest ------------------------------------------------------

def catalog_state(catalog_source):
    """``status.connectionState.lastObservedState`` ('READY', 'CONNECTING', ...) or None."""
    status = (catalog_source or {}).get('status') or {}
    return (status.get('connectionState') or {}).get('lastObservedState')


def catalog_ready(catalog_source):
    return catalog_state(catalog_source) == 'READY'


def package_channel(manifest, channel, starting_csv=None):
    """Check a PackageManifest for ``channel`` (None/'' = the default channel) and ``starting_csv``.

    Returns ``(channel name, channel dict)``; raises OlmError with the available choices.
    """
    status = manifest.get('status') or {}
    name = status.get('packageName') or manifest['metadata']['name']
    channels = status.get('channels') or []
    names = [c.get('name') for c in channels]
    wanted = channel or status.get('defaultChannel')
    chosen = next((c for c in channels if c.get('name') == wanted), None)
    if chosen is None:
        raise OlmError("package %s has no channel '%s' in catalog %s; its channels are %s (default %s)"
                       % (name, wanted, status.get('catalogSource'), ', '.join(sorted(n for n in names if n)),
                          status.get('defaultChannel')))
    if starting_csv:
        entries = [e.get('name') for e in chosen.get('entries') or []]
        known = entries or [chosen.get('currentCSV')]
        if starting_csv not in known and entries:
            raise OlmError("channel %s of package %s has no CSV %s; it has %s"
                           % (wanted, name, starting_csv, ', '.join(entries)))
    return wanted, chosen


def channel_install_modes(channel):
    return supported_install_modes((channel or {}).get('currentCSVDesc') or {})


def channel_alm_examples(channel):
    """alm-examples of a PackageManifest channel head (what check mode can show before install)."""
    annotations = ((channel or {}).get('currentCSVDesc') or {}).get('annotations') or {}
    return parse_alm_examples(annotations.get('alm-examples'))


# --- Subscription ---------------------------------------------------------------------------

def desired_subscription_spec(params):
    """The Subscription spec the module's parameters ask for (channel only when given: an empty
    channel means the package's default channel, resolved by OLM)."""
    spec = {'name': params['package'], 'source': params['source'],
            'sourceNamespace': params['source_namespace'],
            'installPlanApproval': params['approval']}
    if params.get('channel'):
        spec['channel'] = params['channel']
    if params.get('starting_csv'):
        spec['startingCSV'] = params['starting_csv']
    if params.get('config'):
        spec['config'] = params['config']
    return spec


def spec_patch(current, desired):
    """Merge patch taking ``current`` to ``desired`` for the keys ``desired`` names (dicts merge
    recursively, everything else is compared and replaced whole). {} when nothing differs."""
    patch = {}
    for key, value in desired.items():
        have = (current or {}).get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            sub = spec_patch(have, value)
            if sub:
                patch[key] = sub
        elif have != value:
            patch[key] = value
    return patch


def subscription_conflicts(subscriptions, name, package):
    """Other Subscriptions in the namespace for the same package (OLM would refuse to resolve)."""
    return sorted(s['metadata']['name'] for s in subscriptions
                  if s['metadata']['name'] != name and (s.get('spec') or {}).get('name') == package)


def condition(obj, ctype):
    for cond in (obj.get('status') or {}).get('conditions') or []:
        if cond.get('type') == ctype:
            return cond
    return None


def true_condition_message(obj, ctype, default=None):
    """The message (else the reason, else ``default``) of the condition ``ctype`` of ``obj`` when it is
    True, else None."""
    cond = condition(obj, ctype)
    if cond and cond.get('status') == 'True':
        return cond.get('message') or cond.get('reason') or default
    return None


def resolution_error(subscription):
    """The ResolutionFailed message of a Subscription (unknown package/channel/CSV), or None."""
    return true_condition_message(subscription, 'ResolutionFailed', 'ResolutionFailed')


def catalog_unhealthy(subscription):
    return true_condition_message(subscription, 'CatalogSourcesUnhealthy')


def install_plan_failed(subscription):
    return true_condition_message(subscription, 'InstallPlanFailed', 'InstallPlanFailed')


# --- InstallPlans ---------------------------------------------------------------------------

def plan_csvs(plan):
    return list((plan.get('spec') or {}).get('clusterServiceVersionNames') or [])


def plan_phase(plan):
    return (plan.get('status') or {}).get('phase') or ''


def plan_owned_by(plan, subscription_name):
    return any(ref.get('kind') == 'Subscription' and ref.get('name') == subscription_name
               for ref in meta_of(plan).get('ownerReferences') or [])


def subscription_plans(plans, subscription):
    """The InstallPlans of a Subscription: owned by it, or the one its status references."""
    name = subscription['metadata']['name']
    ref = ((subscription.get('status') or {}).get('installPlanRef') or {}).get('name')
    return [p for p in plans if plan_owned_by(p, name) or p['metadata']['name'] == ref]


def pinned_csv(params, subscription):
    """The CSV this run may install: ``starting_csv``; else (Manual) the CSV OLM resolved for the
    first install, and once installed the installed one (so no upgrade is ever approved)."""
    if params.get('starting_csv'):
        return params['starting_csv']
    status = (subscription or {}).get('status') or {}
    return status.get('installedCSV') or status.get('currentCSV')


def plans_to_approve(plans, pinned):
    """Manual plans not yet approved whose CSV list contains ``pinned`` (and only those).

    Returns ``(approve, held)``: ``held`` are the unapproved plans left alone, each
    ``{'name', 'csvs'}``, e.g. the upgrade to the channel head OLM offers after the pinned CSV.
    """
    approve, held = [], []
    for plan in sorted(plans, key=lambda p: p['metadata']['name']):
        spec = plan.get('spec') or {}
        if spec.get('approved') or plan_phase(plan) in ('Complete', 'Failed'):
            continue
        if spec.get('approval') == 'Automatic':
            continue
        entry = {'name': plan['metadata']['name'], 'csvs': plan_csvs(plan)}
        if pinned and pinned in entry['csvs']:
            approve.append(entry)
        else:
            held.append(entry)
    return approve, held


def plan_for_csv(plans, csv_name):
    """Name of the InstallPlan that installed (or installs) ``csv_name``, Complete ones first."""
    matching = [p for p in plans if csv_name in plan_csvs(p)]
    matching.sort(key=lambda p: (plan_phase(p) != 'Complete', p['metadata']['name']))
    return matching[0]['metadata']['name'] if matching else None


# --- ClusterServiceVersion ------------------------------------------------------------------

def csv_phase(csv):
    """``(phase, reason, message)`` of a CSV ('' for each when absent)."""
    status = (csv or {}).get('status') or {}
    return status.get('phase') or '', status.get('reason') or '', status.get('message') or ''


def csv_outcome(csv):
    """'succeeded', 'failed' (for good: needs a fix), or 'waiting' (installing or retrying)."""
    phase, reason, _message = csv_phase(csv)
    if phase == CSV_SUCCEEDED:
        return 'succeeded'
    if phase == CSV_FAILED and reason in FATAL_CSV_REASONS:
        return 'failed'
    return 'waiting'


def parse_alm_examples(text):
    """The ``alm-examples`` annotation (a JSON list) as a list; [] when absent. Raises OlmError
    when it is not JSON."""
    if text in (None, ''):
        return []
    if isinstance(text, list):
        return text
    try:
        examples = json.loads(text)
    except ValueError as exc:
        raise OlmError('the CSV alm-examples annotation is not valid JSON: %s' % exc)
    if isinstance(examples, dict):
        examples = [examples]
    if not isinstance(examples, list):
        raise OlmError('the CSV alm-examples annotation is a %s, not a list' % type_name(examples))
    return examples


def csv_alm_examples(csv):
    annotations = annotations_of(csv)
    return parse_alm_examples(annotations.get('alm-examples'))


def csv_related_images(csv):
    """``spec.relatedImages`` as [{'name', 'image'}] (what oc-mirror / mirroring needs)."""
    out = []
    for item in ((csv or {}).get('spec') or {}).get('relatedImages') or []:
        if isinstance(item, dict) and item.get('image'):
            out.append({'name': item.get('name') or '', 'image': item['image']})
    return out


def example_of_kind(examples, kind):
    """The first example of ``kind`` in an alm-examples list, or None."""
    for example in examples or []:
        if isinstance(example, dict) and example.get('kind') == kind:
            return example
    return None


def describe_wait(subscription, plans, csv):
    """One line saying where an install stands (for timeout messages)."""
    status = (subscription or {}).get('status') or {}
    parts = ['Subscription state %s' % (status.get('state') or 'unknown')]
    if status.get('currentCSV'):
        parts.append('currentCSV %s' % status['currentCSV'])
    if status.get('installedCSV'):
        parts.append('installedCSV %s' % status['installedCSV'])
    for cond in status.get('conditions') or []:
        if cond.get('status') == 'True':
            parts.append('condition %s (%s)%s' % (cond.get('type'), cond.get('reason') or '',
                                                  ': ' + cond['message'] if cond.get('message') else ''))
    for plan in plans or []:
        parts.append('InstallPlan %s %s for %s%s' % (
            plan['metadata']['name'], plan_phase(plan) or 'without phase', ', '.join(plan_csvs(plan)),
            '' if (plan.get('spec') or {}).get('approved') else ' (not approved)'))
    if csv is not None:
        phase, reason, message = csv_phase(csv)
        parts.append('CSV %s phase %s%s%s' % (csv['metadata']['name'], phase or 'unknown',
                                              ' (%s)' % reason if reason else '',
                                              ': ' + message if message else ''))
    return '; '.join(parts)
