"""The AWX objects of extensions/awx/ loaded by its loader (extensions/awx/configure.yml, the real awx.awx modules of
its requirements.yml) on every ansible-core the collection supports, and once through AAP's gateway: what would
reach AWX's API is recorded at a stand-in on loopback (awx_recorder.py; AWX itself cannot run here) and compared
with what the YAML says. No virtual cluster.

The loader reads the files as vars_files (with a vault file holding a dummy value per vault_* variable) and hands
each list to one awx.awx module: a loop over the list, each option given as ``"{{ item.<option> | default(omit) }}"``,
so the list is templated by the loop and the option once more by the task, on the ansible-core that runs it. The
options are the object's own keys (the files use the module's option names, tests/unit/extensions/test_awx_argspec.py),
for:

| list                          | awx.awx module       | objects run                                                |
|-------------------------------|----------------------|------------------------------------------------------------|
| controller_credential_types   | credential_type      | all (injectors: AWX-side Jinja)                            |
| controller_credentials        | credential           | all (inputs: the vault values; no_log)                     |
| controller_execution_environments | execution_environment | all                                                  |
| controller_projects           | project              | all                                                        |
| controller_inventories        | inventory            | all (variables)                                            |
| controller_inventory_sources  | inventory_source     | all                                                        |
| controller_hosts              | host                 | all (variables: AWX-side Jinja)                            |
| controller_notifications      | notification_template| all (messages: AWX-side Jinja; the vaulted URL, password)  |
| controller_templates          | job_template         | those holding AWX-side Jinja, those the workflow and the   |
|                               |                      | schedules run                                              |
| controller_workflows          | workflow_job_template| the MIG, upgrade, DRA cutover and DRA change window        |
|                               |                      | workflows, with their workflow_nodes                       |
| controller_schedules          | schedule             | the nightly report and the nightly GPU health report       |

(the loader's gpuops_awx_load_only names them). The stand-in seeds the organization and AWX's managed bearer-token
credential type, and answers a new project with no update running (awx.awx.project waits for the SCM update a real
AWX starts). How a module sends an option: under the same name in the POST body, except names resolved to ids
(organization, project, inventory, execution_environment, credential_type, unified_job_template,
default_environment, source_project, credential), lists posted as associations (credentials,
notification_templates_*), survey_spec posted to the template's survey_spec, extra_vars / variables as JSON text,
workflow_nodes as workflow_job_template_nodes (an approval as its create_approval_template)."""

import json
import os
import re
import subprocess
import sys

import jinja2
import pytest
import yaml

from awx_recorder import AwxRecorder

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.dirname(os.path.dirname(HERE))
AWX_DIR = os.path.join(COLLECTION, 'extensions', 'awx')
sys.path.insert(0, os.path.join(COLLECTION, 'tests', 'compat'))
import venvs  # noqa: E402  pylint: disable=wrong-import-position

LOADER = os.path.join(AWX_DIR, 'configure.yml')
with open(LOADER) as _handle:
    FILES = tuple(yaml.safe_load(_handle)[0]['vars_files'])
# list -> (module, objects to run: None = all, a list = these names ({cluster}: settings.yml's gpuops_awx_cluster),
# 'templates' = templates_to_run), in creation order
PLAN = (('controller_credential_types', 'credential_type', None),
        ('controller_credentials', 'credential', None),
        ('controller_execution_environments', 'execution_environment', None),
        ('controller_projects', 'project', None),
        ('controller_inventories', 'inventory', None),
        ('controller_inventory_sources', 'inventory_source', None),
        ('controller_hosts', 'host', None),
        ('controller_notifications', 'notification_template', None),
        ('controller_templates', 'job_template', 'templates'),
        ('controller_workflows', 'workflow_job_template', ['gpuops.gpu {cluster} mig workflow',
                                                           'gpuops.gpu {cluster} upgrade workflow',
                                                           'gpuops.gpu {cluster} DRA cutover workflow',
                                                           'gpuops.gpu {cluster} DRA change window workflow']),
        ('controller_schedules', 'schedule', ['gpuops.gpu {cluster} nightly report',
                                              'gpuops.gpu {cluster} nightly gpu health']))
# the option -> the collection its name is resolved in (sent as an id)
REFERENCES = {'organization': 'organizations', 'project': 'projects', 'inventory': 'inventories',
              'execution_environment': 'execution_environments', 'credential_type': 'credential_types',
              'unified_job_template': 'job_templates', 'default_environment': 'execution_environments',
              'source_project': 'projects', 'credential': 'credentials'}
ASSOCIATIONS = ('credentials', 'notification_templates_started', 'notification_templates_success',
                'notification_templates_error', 'notification_templates_approvals')
KIND = {'credential_type': 'credential_types', 'credential': 'credentials', 'inventory': 'inventories',
        'project': 'projects', 'inventory_source': 'inventory_sources',
        'execution_environment': 'execution_environments', 'host': 'hosts', 'schedule': 'schedules',
        'notification_template': 'notification_templates', 'job_template': 'job_templates',
        'workflow_job_template': 'workflow_job_templates'}


# ------------------------------------------------------------------------------ what the YAML says

class Unsafe(str):
    """A ``!unsafe`` string: Ansible never templates it."""


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor('!unsafe', lambda loader, node: Unsafe(loader.construct_scalar(node)))


def _load(name):
    with open(os.path.join(AWX_DIR, name)) as handle:
        return yaml.load(handle, Loader=_Loader) or {}  # noqa: S506 - a SafeLoader with one more tag


def vault():
    """A dummy value per vault_* variable the files name, each unlike any other string."""
    names = set()
    for name in FILES:
        with open(os.path.join(AWX_DIR, name)) as handle:
            names.update(re.findall(r'\bvault_\w+', handle.read()))
    return dict((n, 'S3CRET-%s' % n) for n in sorted(names))


def intended(value, context):
    """The value AWX should store: a ``!unsafe`` string as written, any other string templated once (a lone
    expression keeping its type), as infra.aap_configuration documents its variables."""
    if isinstance(value, dict):
        return dict((k, intended(v, context)) for k, v in value.items())
    if isinstance(value, list):
        return [intended(v, context) for v in value]
    if isinstance(value, Unsafe) or not isinstance(value, str) or '{{' not in value:
        return str(value) if isinstance(value, Unsafe) else value
    lone = re.match(r'^\s*\{\{((?:(?!\{\{|\}\}).)*)\}\}\s*$', value, re.S)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    if lone:
        return env.compile_expression(lone.group(1).strip())(**context)
    return env.from_string(value).render(context)


def expected_objects(cluster=None):
    """{list: [object as AWX should get it]} of the objects the loader runs (for ``cluster``, else settings.yml's)."""
    context = dict(_load('settings.yml'), **vault())
    context['gpuops_awx_cluster'] = cluster or context['gpuops_awx_cluster']
    lists = {}
    for name in FILES:
        lists.update((k, intended(v, context)) for k, v in _load(name).items() if k.startswith('controller_'))
    chosen = dict((v, [n.format(cluster=context['gpuops_awx_cluster']) for n in names] if isinstance(names, list)
                   else names) for v, _m, names in PLAN)
    workflows = [w for w in lists['controller_workflows'] if w['name'] in chosen['controller_workflows']]
    schedules = [s for s in lists['controller_schedules'] if s['name'] in chosen['controller_schedules']]
    chosen['controller_templates'] = templates_to_run(lists['controller_templates'], workflows, schedules)
    return dict((v, [o for o in lists[v] if names is None or o['name'] in names]) for v, names in chosen.items())


def templates_to_run(templates, workflows, schedules=()):
    """Job templates holding AWX-side Jinja (a '{{' left after templating), and those ``workflows`` and
    ``schedules`` run."""
    run = set(n['unified_job_template']['name'] for w in workflows for n in w['workflow_nodes']
              if n['unified_job_template']['type'] == 'job_template')
    run.update(s['unified_job_template'] for s in schedules)
    return [t['name'] for t in templates if t['name'] in run or '{{' in json.dumps(t)]


# ------------------------------------------------------------------------------ the loader's run

def loader_vars(url, expected, platform, **more):
    """The loader's variables for a run against the stand-in at ``url``: the objects of ``expected`` only."""
    return dict({'gpuops_awx_host': url, 'gpuops_awx_token': 'not-checked', 'gpuops_awx_validate_certs': False,
                 'gpuops_awx_platform': platform,
                 'gpuops_awx_load_only': sorted(set(o['name'] for objects in expected.values() for o in objects))},
                **more)


@pytest.fixture(scope='module')
def collections(tmp_path_factory):
    return venvs.collections_root(str(tmp_path_factory.mktemp('awx-loader')), COLLECTION)


# the virtualenvs: main (ansible-core 2.19), oldest (2.16), newest (2.21), core-2.17, -2.18, -2.20
# (tests/compat/venvs.py); 'aap': the main one against AAP 2.5's API path behind the gateway
RUNS = ('main',) + venvs.NAMES + venvs.CORE_ONLY + ('aap',)


@pytest.fixture(scope='module', params=RUNS)
def loaded(request, collections, tmp_path_factory):
    """(the stand-in after the run, the run's exit status, its output, the expected objects) for one ansible-core:
    the main virtualenv's or a matrix one's (tests/compat/venvs.py)."""
    main = request.param in ('main', 'aap')
    vbin = os.path.dirname(sys.executable) if main else venvs.ensure(request.param)
    work = tmp_path_factory.mktemp('awx-' + request.param)
    expected = expected_objects()
    (work / 'vault.yml').write_text(yaml.safe_dump(vault()))
    platform = 'aap' if request.param == 'aap' else 'awx'
    with AwxRecorder(prefix='/api/controller/v2/' if platform == 'aap' else '/api/v2/') as awx:
        awx.seed('organizations', name='Default')
        awx.seed('credential_types', name='OpenShift or Kubernetes API Bearer Token', kind='cloud', managed=True)
        (work / 'loader.yml').write_text(yaml.safe_dump(loader_vars(awx.url, expected, platform)))
        rc, output = run_loader(vbin, collections, work / 'vault.yml', work / 'loader.yml')
    return awx, rc, output, expected


def run_loader(vbin, collections, *var_files):
    """(exit status, output) of extensions/awx/configure.yml run by ``vbin``'s ansible-playbook with ``var_files``."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_PYTHON_INTERPRETER=os.path.join(vbin, 'python'))
    command = [os.path.join(vbin, 'ansible-playbook'), LOADER]
    for path in var_files:
        command += ['-e', '@%s' % path]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    return proc.returncode, proc.stdout + proc.stderr


# what a further cluster loads (docs/awx.md, "Several clusters")
CLUSTER_LISTS = ['controller_credentials', 'controller_inventories', 'controller_inventory_sources', 'controller_hosts',
                 'controller_workflows', 'controller_schedules']


def test_a_further_cluster_loads_its_own_objects_and_leaves_the_shared_ones(collections, tmp_path):
    """A second cluster's run (gpuops_awx_lists): its accounts, inventories, workflows and schedules are created
    and bound to it; nothing shared (credential types, the project, job templates, notifications) is written, so
    the job templates keep the first cluster's accounts; the first cluster's workflows are untouched."""
    vbin = os.path.dirname(sys.executable)
    (tmp_path / 'vault.yml').write_text(yaml.safe_dump(vault()))
    first, second = expected_objects(), expected_objects('prod-b')
    with AwxRecorder() as awx:
        awx.seed('organizations', name='Default')
        awx.seed('credential_types', name='OpenShift or Kubernetes API Bearer Token', kind='cloud', managed=True)
        (tmp_path / 'first.yml').write_text(yaml.safe_dump(loader_vars(awx.url, first, 'awx')))
        rc, output = run_loader(vbin, collections, tmp_path / 'vault.yml', tmp_path / 'first.yml')
        assert rc == 0, output[-4000:]
        templates = dict((t['name'], awx.linked(t, 'credentials')) for t in awx.objects['job_templates'])
        graphs = dict((w['name'], _graph(awx, w)) for w in awx.objects['workflow_job_templates'])
        before = len(awx.requests)
        # the names of both runs: gpuops_awx_lists alone keeps the shared objects of the first out
        both = dict((k, first[k] + (second[k] if k in CLUSTER_LISTS else [])) for k in first)
        (tmp_path / 'second.yml').write_text(yaml.safe_dump(loader_vars(
            awx.url, both, 'awx', gpuops_awx_cluster='prod-b', gpuops_awx_lists=CLUSTER_LISTS)))
        rc, output = run_loader(vbin, collections, tmp_path / 'vault.yml', tmp_path / 'second.yml')
        assert rc == 0, output[-4000:]
    written = set(r['path'].split('/')[3] for r in awx.requests[before:] if r['method'] in ('POST', 'PATCH', 'PUT'))
    assert written <= {'credentials', 'inventories', 'inventory_sources', 'hosts', 'workflow_job_templates',
                       'workflow_job_template_nodes', 'schedules'}, written
    assert dict((t['name'], awx.linked(t, 'credentials')) for t in awx.objects['job_templates']) == templates
    for workflow in second['controller_workflows']:
        graph = _graph(awx, awx.find('workflow_job_templates', workflow['name']))
        accounts = set(c for node in graph.values() for c in node[2])
        assert accounts and all(c.startswith('gpuops.gpu prod-b ') for c in accounts), (workflow['name'], accounts)
        inventories = set(awx.by_id('inventories', n['inventory'])['name'] for n in awx.objects['workflow_job_template_nodes']
                          if n['workflow_job_template'] == awx.find('workflow_job_templates', workflow['name'])['id']
                          and n.get('inventory'))
        assert inventories == {'gpuops.gpu prod-b'}, (workflow['name'], inventories)
    assert dict((name, _graph(awx, awx.find('workflow_job_templates', name))) for name in graphs) == graphs
    for schedule in second['controller_schedules']:
        made = awx.find('schedules', schedule['name'])
        assert awx.by_id('inventories', made['inventory'])['name'] == 'gpuops.gpu prod-b', schedule['name']


@pytest.mark.parametrize('change, words', [
    ({'controller_hosts': [{'name': 'localhost', 'inventory': 'gpuops.gpu localhost', 'varaibles': {}}]},
     'controller_hosts sets varaibles, which this loader does not pass to AWX'),
    ({'gpuops_awx_host': 'awx.example.com'}, 'Set gpuops_awx_host to AWX'),
    ({'gpuops_awx_platform': 'tower'}, 'gpuops_awx_platform to awx or aap')],
    ids=['unknown-option', 'host-not-a-url', 'unknown-platform'])
def test_the_loader_refuses_bad_input_before_any_request(collections, tmp_path, change, words):
    """An option the loader would drop, a host that is no URL, an unknown platform: refused with what to fix, and
    nothing reaches AWX."""
    (tmp_path / 'vault.yml').write_text(yaml.safe_dump(vault()))
    with AwxRecorder() as awx:
        (tmp_path / 'loader.yml').write_text(yaml.safe_dump(dict(loader_vars(awx.url, {}, 'awx'), **change)))
        rc, output = run_loader(os.path.dirname(sys.executable), collections, tmp_path / 'vault.yml',
                                tmp_path / 'loader.yml')
    assert rc != 0 and words in ' '.join(output.split()), output[-3000:]
    assert awx.requests == []


# ------------------------------------------------------------------------------ what reached the API

def sent(awx, kind, objects):
    """[(expected object, the stand-in's object created from it)] in creation order."""
    created = [o for o in awx.objects.get(kind, []) if o['id'] not in awx.seeded]
    assert [o.get('name') for o in created] == [o['name'] for o in objects], kind
    return list(zip(objects, created))


# options a module uses to find things and does not store on the object
LOOKUP_ONLY = {'schedule': ('organization',)}


def mismatches(awx, module, wanted, got):
    """How the object AWX would store differs from the YAML's, option by option (the table at the top)."""
    out = []
    for key, value in wanted.items():
        if key in LOOKUP_ONLY.get(module, ()) or key == 'workflow_nodes':
            continue
        if key in REFERENCES:
            target = awx.by_id(REFERENCES[key], got.get(key)) or {}
            actual, value = target.get('name'), value['name'] if isinstance(value, dict) else value
        elif key in ASSOCIATIONS:
            kinds = 'notification_templates' if key.startswith('notification') else 'credentials'
            actual = [awx.by_id(kinds, i)['name'] for i in awx.linked(got, key)]
        elif key == 'survey_spec':
            actual = awx.specs.get(got['url'])
        elif key in ('extra_vars', 'variables'):
            actual = json.loads(got[key]) if key in got else None
        else:
            actual = got.get(key, '<not sent>')
        if actual != value:
            out.append('%s %s.%s: AWX gets %r, the YAML says %r' % (module, wanted['name'], key, actual, value))
    return out


def test_the_loader_runs_and_prints_no_secret(loaded):
    _awx, rc, output, _expected = loaded
    assert rc == 0, output[-6000:]
    leaked = [v for v in vault().values() if v in output]
    assert not leaked, leaked


@pytest.mark.parametrize('variable, module', [(v, m) for v, m, _n in PLAN if v != 'controller_workflows'])
def test_every_option_reaches_awx_as_the_yaml_says(loaded, variable, module):
    awx, _rc, _output, expected = loaded
    pairs = sent(awx, KIND[module], expected[variable])
    assert pairs
    errors = [e for wanted, got in pairs for e in mismatches(awx, module, wanted, got)]
    assert not errors, '\n'.join(errors)


def test_every_request_reaches_the_api_of_its_platform(loaded):
    """AWX serves its API at /api/v2/, AAP 2.5 and later at /api/controller/v2/ behind the gateway (the stand-in
    answers 404 elsewhere)."""
    awx, _rc, _output, _expected = loaded
    stray = sorted(set(r['path'] for r in awx.requests if not r['path'].startswith(awx.prefix) and r['path'] != '/api/'))
    assert not stray, stray
    assert len(awx.requests) > 100


def test_awx_side_jinja_arrives_untouched(loaded):
    awx, _rc, _output, _expected = loaded
    ngc = awx.find('credential_types', 'gpuops.gpu NGC API key')
    assert ngc['injectors'] == {'env': {'GPUOPS_NGC_API_KEY': '{{ ngc_api_key }}'}}
    kubeconfig = awx.find('credential_types', 'gpuops.gpu kubeconfig')['injectors']
    assert kubeconfig['env']['K8S_AUTH_KUBECONFIG'] == '{{ tower.filename.kubeconfig }}'
    mirror = json.loads(awx.find('job_templates', 'gpuops.gpu mirror')['extra_vars'])
    assert mirror['mirror_registry_auth_host'] == (
        "{{ lookup('ansible.builtin.env', 'GPUOPS_REGISTRY_SERVER', default='') }}")
    assert mirror['mirror_registry_password_env'] == ['GPUOPS_REGISTRY_PASSWORD']
    vgpu = json.loads(awx.find('job_templates', 'gpuops.gpu vgpu')['extra_vars'])
    assert vgpu['vgpu_registry_username'].startswith("{{ '$oauthtoken' if lookup('ansible.builtin.env', ")
    host = json.loads(awx.objects['hosts'][0]['variables'])
    assert host == {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    email = awx.find('notification_templates', 'gpuops.gpu failure email')['messages']['error']
    assert email['message'] == "gpuops.gpu: {{ job_friendly_name }} '{{ job.name }}' {{ job.status }}"
    timeout = awx.find('job_templates', 'gpuops.gpu mig')['timeout']
    assert isinstance(timeout, int) and timeout > 0, 'a lone expression keeps its type'


def test_vaulted_values_only_in_their_credential_inputs(loaded):
    awx, _rc, _output, _expected = loaded
    secrets = vault()
    for request in awx.requests:
        body = json.dumps(request['body'])
        found = [n for n, v in secrets.items() if v in body]
        if request['path'].endswith(('/credentials/', '/notification_templates/')) and request['method'] == 'POST':
            where = request['body'].get('inputs') or request['body'].get('notification_configuration') or {}
            found = [n for n in found if secrets[n] not in where.values()]
        assert not found, '%s %s carries %s' % (request['method'], request['path'], found)
    report = awx.find('credentials', 'gpuops.gpu gpu-cluster report account')['inputs']
    assert report['bearer_token'] == secrets['vault_gpuops_report_token']


def test_the_workflow_nodes_as_the_yaml_says(loaded):
    awx, _rc, _output, expected = loaded
    pairs = sent(awx, 'workflow_job_templates', expected['controller_workflows'])
    assert len(pairs) == 4
    for wanted, got in pairs:
        assert not mismatches(awx, 'workflow_job_template', wanted, got)
        _nodes_as_the_yaml_says(awx, wanted, got)


def _nodes_as_the_yaml_says(awx, wanted, got):
    nodes = dict((n['identifier'], n) for n in awx.objects['workflow_job_template_nodes']
                 if n['workflow_job_template'] == got['id'])
    ids = dict((n['id'], i) for i, n in nodes.items())
    assert list(nodes) == [n['identifier'] for n in wanted['workflow_nodes']]
    for node in wanted['workflow_nodes']:
        made = nodes[node['identifier']]
        template = node['unified_job_template']
        kind = 'workflow_approval_templates' if template['type'] == 'workflow_approval' else 'job_templates'
        stored = awx.by_id(kind, made['unified_job_template'])
        assert stored['name'] == template['name'], node['identifier']
        if kind == 'workflow_approval_templates':
            assert (stored['timeout'], stored['description']) == (template['timeout'], template['description'])
        else:
            assert (made['job_type'], made.get('diff_mode')) == (node['job_type'], node.get('diff_mode'))
            assert awx.by_id('inventories', made['inventory'])['name'] == node['inventory']['name']
        for link, targets in (node.get('related') or {}).items():
            linked = awx.linked(made, link)
            if link == 'credentials':
                assert [awx.by_id('credentials', i)['name'] for i in linked] == [t['name'] for t in targets]
            else:
                assert [ids[i] for i in linked] == [t['identifier'] for t in targets], (node['identifier'], link)


def _graph(awx, workflow):
    """{identifier: (job type or 'approval', template name, credentials, {link: [identifiers]})} of ``workflow``'s
    nodes as AWX stores them."""
    nodes = [n for n in awx.objects['workflow_job_template_nodes'] if n['workflow_job_template'] == workflow['id']]
    ident = dict((n['id'], n['identifier']) for n in nodes)
    out = {}
    for node in nodes:
        approval = awx.by_id('workflow_approval_templates', node['unified_job_template'])
        template = approval or awx.by_id('job_templates', node['unified_job_template'])
        edges = dict((link, [ident[i] for i in awx.linked(node, link)])
                     for link in ('success_nodes', 'failure_nodes', 'always_nodes') if awx.linked(node, link))
        out[node['identifier']] = ('approval' if approval else node['job_type'], template['name'],
                                   [awx.by_id('credentials', i)['name'] for i in awx.linked(node, 'credentials')],
                                   edges)
    return out


def test_the_upgrade_workflow_and_survey_as_loaded(loaded):
    """The upgrade workflow as AWX would hold it: plan (check, --diff) -> approval -> apply -> validate -> report,
    the upgrade jobs with the install account, a failed apply still reported; its template's survey."""
    awx, _rc, _output, _expected = loaded
    cluster = _load('settings.yml')['gpuops_awx_cluster']
    workflow = awx.find('workflow_job_templates', 'gpuops.gpu %s upgrade workflow' % cluster)
    assert (workflow['ask_inventory_on_launch'], workflow['ask_variables_on_launch']) == (False, True)
    install, report = ['gpuops.gpu %s %s account' % (cluster, a) for a in ('install', 'report')]
    assert _graph(awx, workflow) == {
        'plan': ('check', 'gpuops.gpu upgrade', [install], {'success_nodes': ['approve']}),
        'approve': ('approval', 'gpuops.gpu %s upgrade workflow approval' % cluster, [], {'success_nodes': ['apply']}),
        'apply': ('run', 'gpuops.gpu upgrade', [install], {'success_nodes': ['validate'], 'failure_nodes': ['report']}),
        'validate': ('run', 'gpuops.gpu validate', [install], {'always_nodes': ['report']}),
        'report': ('run', 'gpuops.gpu report', [report], {})}
    plan = next(n for n in awx.objects['workflow_job_template_nodes']
                if n['workflow_job_template'] == workflow['id'] and n['identifier'] == 'plan')
    assert plan['diff_mode'] is True
    approval = awx.find('workflow_approval_templates', 'gpuops.gpu %s upgrade workflow approval' % cluster)
    assert approval['timeout'] == 86400 and 'versions from -> to' in approval['description']
    template = awx.find('job_templates', 'gpuops.gpu upgrade')
    assert template['survey_enabled'] is True and template['playbook'] == 'playbooks/upgrade.yml'
    questions = dict((q['variable'], q) for q in awx.specs[template['url']]['spec'])
    assert list(questions) == [
        'upgrade_method', 'upgrade_gpu_operator_csv', 'upgrade_nfd_csv', 'upgrade_gpu_operator_namespace',
        'upgrade_gpu_operator_helm_chart_version', 'upgrade_nfd_helm_chart_version', 'upgrade_driver_version',
        'upgrade_driver_repository', 'upgrade_driver_image', 'upgrade_driver_on_failure',
        'upgrade_driver_state_timeout', 'upgrade_lock_timeout']
    choices = dict((v, (q['choices'], q['default'])) for v, q in questions.items() if q['type'] == 'multiplechoice')
    assert choices == {'upgrade_method': (['olm', 'helm'], 'olm'),
                       'upgrade_driver_on_failure': (['stop', 'pause'], 'stop')}
    assert [v for v, q in questions.items() if q['type'] == 'text' and q['default'] == ''] == [
        'upgrade_gpu_operator_csv', 'upgrade_nfd_csv', 'upgrade_gpu_operator_helm_chart_version',
        'upgrade_nfd_helm_chart_version', 'upgrade_driver_version', 'upgrade_driver_repository',
        'upgrade_driver_image'], 'the defaults upgrade nothing'
    timeout = questions['upgrade_driver_state_timeout']
    assert (timeout['type'], timeout['default'], timeout['min'], timeout['max']) == ('integer', 900, 60, 86400)


def test_the_dra_cutover_and_window_workflows_and_survey_as_loaded(loaded):
    """The DRA cutover and change window workflows as AWX would hold them: plan (check, --diff) -> approval ->
    cutover (window) -> validate -> report, the cutover jobs with the rollout account and dra_parts [cutover] only,
    the window's with the install account and dra_parts [window] only, validation through DRA, a failed run still
    reported; their template's survey (defaults: to DRA, one node at a time, no group)."""
    awx, _rc, _output, _expected = loaded
    cluster = _load('settings.yml')['gpuops_awx_cluster']
    for kind in ('DRA cutover', 'DRA change window'):
        workflow = awx.find('workflow_job_templates', 'gpuops.gpu %s %s workflow' % (cluster, kind))
        assert (workflow['ask_inventory_on_launch'], workflow['ask_variables_on_launch']) == (False, True)
    rollout, install, report = ['gpuops.gpu %s %s account' % (cluster, a) for a in ('rollout', 'install', 'report')]
    dra = 'gpuops.gpu DRA resources'
    # the cutover with the rollout account; the change window (the operator's resources) with the install account
    for kind, step, account in (('DRA cutover', 'cutover', rollout), ('DRA change window', 'window', install)):
        workflow = awx.find('workflow_job_templates', 'gpuops.gpu %s %s workflow' % (cluster, kind))
        assert _graph(awx, workflow) == {
            'plan': ('check', dra, [account], {'success_nodes': ['approve']}),
            'approve': ('approval', 'gpuops.gpu %s %s workflow approval' % (cluster, kind), [],
                        {'success_nodes': [step]}),
            step: ('run', dra, [account], {'success_nodes': ['validate'], 'failure_nodes': ['report']}),
            'validate': ('run', 'gpuops.gpu validate', [install], {'always_nodes': ['report']}),
            'report': ('run', 'gpuops.gpu report', [report], {})}
        made = dict((n['identifier'], n) for n in awx.objects['workflow_job_template_nodes']
                    if n['workflow_job_template'] == workflow['id'])
        assert made['plan']['diff_mode'] is True
        extra = dict((i, _as_dict(n.get('extra_data'))) for i, n in made.items())
        assert extra == {'plan': {'dra_parts': [step]}, 'approve': {}, step: {'dra_parts': [step]},
                         'validate': {'smoke_test_mode': 'dra'}, 'report': {}}
        approval = awx.find('workflow_approval_templates', 'gpuops.gpu %s %s workflow approval' % (cluster, kind))
        assert approval['timeout'] == 86400
    for words in ('batches', 'GPU pods each evicts', 'would not stay schedulable on DRA'):
        assert words in awx.find('workflow_approval_templates', 'gpuops.gpu %s DRA cutover workflow approval'
                                 % cluster)['description'], words
    template = awx.find('job_templates', dra)
    assert template['survey_enabled'] is True and template['playbook'] == 'playbooks/dra.yml'
    assert [awx.by_id('credentials', i)['name'] for i in awx.linked(template, 'credentials')] == [install]
    assert (template['ask_credential_on_launch'], template['ask_variables_on_launch']) == (True, True)
    settings = _load('settings.yml')
    assert int(template['timeout']) == (-(-int(settings['gpuops_awx_rollout_nodes'])
                                          // int(settings['gpuops_awx_rollout_max_unavailable']))
                                        * int(settings['gpuops_awx_rollout_batch_seconds'])
                                        + int(settings['gpuops_awx_rollout_margin_seconds']))
    questions = dict((q['variable'], q) for q in awx.specs[template['url']]['spec'])
    assert list(questions) == [
        'dra_cutover_stack', 'dra_cutover_node_selector', 'dra_cutover_max_unavailable', 'dra_cutover_drain_timeout',
        'dra_cutover_state_timeout', 'dra_cutover_operator_namespace', 'dra_cutover_lock_timeout']
    assert (questions['dra_cutover_stack']['choices'], questions['dra_cutover_stack']['default']) == (
        ['dra', 'device-plugin'], 'dra')
    assert [(v, q['type'], q['default']) for v, q in questions.items() if v != 'dra_cutover_stack'] == [
        ('dra_cutover_node_selector', 'text', ''), ('dra_cutover_max_unavailable', 'text', '1'),
        ('dra_cutover_drain_timeout', 'integer', 300), ('dra_cutover_state_timeout', 'integer', 300),
        ('dra_cutover_operator_namespace', 'text', 'nvidia-gpu-operator'),
        ('dra_cutover_lock_timeout', 'integer', 0)]


def _as_dict(value):
    """A node's extra_data as the stand-in holds it (a mapping, or the JSON / YAML text a module sent)."""
    if not value:
        return {}
    return value if isinstance(value, dict) else yaml.safe_load(value)
