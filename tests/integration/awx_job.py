"""Run playbooks the way AWX/AAP runs a job template: ansible-runner with a private data directory
(project/, inventory/, env/extravars, env/envvars, env/cmdline), the cluster reached only through the
K8S_AUTH_* variables AWX's "OpenShift or Kubernetes API Bearer Token" credential injects
(awx/main/models/credential/injectors.py: K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL and the CA
written to a private file named by K8S_AUTH_SSL_CA_CERT), and the job template's playbook, extra vars and
survey taken from extensions/awx/job_templates.yml."""

import base64
import dataclasses
import glob
import json
import os
import shutil
import subprocess
import sys

import jinja2
import jinja2.sandbox
import yaml

from ansible_collections.gpuops.gpu.tests.unit.extensions.awx_files import Unsafe, load_awx

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWX = os.path.join(REPO, 'extensions', 'awx')


def _awx_vars(name):
    with open(os.path.join(AWX, name)) as handle:
        return load_awx(handle)


def _render(value, context):
    """What infra.aap_configuration stores in AWX: the definitions templated once with its variables, except the
    !unsafe ones (Jinja the job itself evaluates), sent as written."""
    if isinstance(value, Unsafe):
        return str(value)
    if isinstance(value, str):
        return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(value).render(context)
    if isinstance(value, list):
        return [_render(v, context) for v in value]
    if isinstance(value, dict):
        return dict((k, _render(v, context)) for k, v in value.items())
    return value


def job_template(playbook):
    """The job template (as AWX would store it) that runs ``playbook`` (e.g. 'playbooks/report.yml')."""
    settings = _awx_vars('settings.yml')
    matches = [t for t in _awx_vars('job_templates.yml')['controller_templates'] if t['playbook'] == playbook]
    assert len(matches) == 1, 'no single job template for %s' % playbook
    return _render(matches[0], settings)


def bearer_token_credential(kubeconfig, token):
    """(host, CA PEM) of the cluster in ``kubeconfig``; the token is the ServiceAccount's."""
    with open(kubeconfig) as handle:
        cluster = yaml.safe_load(handle)['clusters'][0]['cluster']
    ca = cluster.get('certificate-authority-data')
    if ca:
        ca = base64.b64decode(ca).decode()
    else:
        with open(cluster['certificate-authority']) as handle:
            ca = handle.read()
    return {'host': cluster['server'], 'bearer_token': token, 'verify_ssl': True, 'ssl_ca_cert': ca}


@dataclasses.dataclass
class Job:
    rc: int
    status: str
    stdout: str
    events: list
    private_data_dir: str

    def results(self):
        """{task name: result} of the localhost task results (ok, failed, skipped)."""
        out = {}
        for event in self.events:
            if event.get('event') in ('runner_on_ok', 'runner_on_failed', 'runner_on_skipped'):
                data = event['event_data']
                res = dict(data.get('res') or {})
                res['failed'] = event['event'] == 'runner_on_failed' or res.get('failed', False)
                out[data.get('task')] = res
        return out

    def changed_tasks(self):
        return sorted(n for n, r in self.results().items() if r.get('changed'))


def account_token(testbed, core, name, namespace, access, cluster_roles=None):
    """The token of ServiceAccount ``namespace/name`` bound to the gpuops.gpu ``access`` accounts (a list:
    report, rollout, install), made the way an admin does: roles/rbac, run once with the cluster's kubeconfig
    (``cluster_roles``: the ClusterRoles it writes, default ``access``)."""
    from ansible_run import run_role
    from conftest import wait_until

    rc, _results, raw = run_role(testbed.kubeconfig, 'rbac', {
        'rbac_operator_namespace': testbed.config['cluster'].get('operator_namespace', 'gpu-operator'),
        'rbac_cluster_roles': list(cluster_roles or access),
        'rbac_service_accounts': [{'name': name, 'namespace': namespace, 'access': list(access),
                                   'token_secret': True}]})
    assert rc == 0, raw[-3000:]
    return wait_until('the token of ServiceAccount %s/%s' % (namespace, name), lambda: base64.b64decode(
        core.read_namespaced_secret(name + '-token', namespace).data.get('token') or b'').decode(), 60)


def kubeconfig_credential(kubeconfig_text, context=None):
    """The inputs of a gpuops.gpu kubeconfig credential (extensions/awx/credential_types.yml): the whole
    kubeconfig and, optionally, the context the playbooks use."""
    inputs = {'kubeconfig': kubeconfig_text}
    if context:
        inputs['context'] = context
    return {'type': 'gpuops.gpu kubeconfig', 'inputs': inputs}


def inject(pdd, type_name, inputs):
    """The environment AWX gives a job for a credential of the custom type ``type_name`` with ``inputs``, as AWX
    builds it (awx/main/models/credential: CredentialType.inject_credential): every file injector rendered with
    Jinja's immutable sandbox into a private file under ``pdd``/env, its path as ``tower.filename.<label>``, then
    every env injector rendered with the same namespace. An input left empty renders as an empty string."""
    ctype = next(t for t in _awx_vars('credential_types.yml')['controller_credential_types'] if t['name'] == type_name)
    sandbox = jinja2.sandbox.ImmutableSandboxedEnvironment()
    namespace = dict(inputs)
    files = {}
    for label, template in (ctype['injectors'].get('file') or {}).items():
        path = os.path.join(pdd, 'env', label.split('.', 1)[1])
        with open(path, 'w') as handle:
            handle.write(sandbox.from_string(str(template)).render(**namespace))
        os.chmod(path, 0o600)
        files[label.split('.', 1)[1]] = path
    namespace['tower'] = {'filename': files}
    return dict((env, sandbox.from_string(str(template)).render(**namespace))
                for env, template in (ctype['injectors'].get('env') or {}).items())


def _credential_env(pdd, credential):
    """The variables ``credential`` injects (its private files written under ``pdd``/env)."""
    if 'type' in credential:
        return inject(pdd, credential['type'], credential['inputs'])
    ca_file = os.path.join(pdd, 'env', 'k8s_ca.crt')
    with open(ca_file, 'w') as handle:
        handle.write(credential['ssl_ca_cert'])
    os.chmod(ca_file, 0o600)
    return {'K8S_AUTH_HOST': credential['host'], 'K8S_AUTH_API_KEY': credential['bearer_token'],
            'K8S_AUTH_VERIFY_SSL': str(credential['verify_ssl']), 'K8S_AUTH_SSL_CA_CERT': ca_file}


def run_job(workdir, template, credential, survey=None, launch_vars=None, job_type='run', diff=False,
            timeout=900, ident='job', project_files=None, home=None, path=None, inventory_files=None):
    """Run ``template`` (from job_template()) in a fresh private data directory under ``workdir``.

    ``survey``: answers by variable (unanswered questions get their default, as AWX does);
    ``launch_vars``: prompted extra vars (only when the template asks for variables on launch);
    ``credential``: bearer_token_credential() or kubeconfig_credential();
    ``project_files``: more files of the project checkout (path relative to project/ -> text);
    ``home``: the job's HOME (where ~/.kube/config, the kubernetes client's last fallback, is read).
    ``inventory_files``: more inventory sources next to localhost (file name under inventory/ -> text), e.g.
    an inventory plugin's configuration (an AWX inventory source).
    ``path``: the job's whole PATH (e.g. ee_tools.ee_tool_dir(): the execution environment's programs only);
    default: the test's PATH after the virtualenv's bin.
    """
    pdd = os.path.join(str(workdir), ident)
    shutil.rmtree(pdd, ignore_errors=True)
    for sub in ('project', 'inventory', 'env'):
        os.makedirs(os.path.join(pdd, sub))
    # the project checkout: the playbooks (the collection itself comes from the execution environment)
    shutil.copytree(os.path.join(REPO, 'playbooks'), os.path.join(pdd, 'project', 'playbooks'))
    for rel, text in (project_files or {}).items():
        with open(os.path.join(pdd, 'project', rel), 'w') as handle:
            handle.write(text)
    host_vars = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    with open(os.path.join(pdd, 'inventory', 'hosts.json'), 'w') as handle:
        json.dump({'all': {'hosts': {'localhost': host_vars}}}, handle)
    for name, text in (inventory_files or {}).items():
        os.makedirs(os.path.dirname(os.path.join(pdd, 'inventory', name)), exist_ok=True)
        with open(os.path.join(pdd, 'inventory', name), 'w') as handle:
            handle.write(text)

    extravars = dict(template.get('extra_vars') or {})
    if launch_vars:
        assert template.get('ask_variables_on_launch'), '%s does not prompt for variables' % template['name']
        extravars.update(launch_vars)
    questions = dict((q['variable'], q) for q in (template.get('survey_spec') or {}).get('spec') or []) \
        if template.get('survey_enabled') else {}
    unknown = set(survey or {}) - set(questions)
    assert not unknown, 'no survey question for %s in %s' % (sorted(unknown), template['name'])
    for variable, question in questions.items():
        answer = (survey or {}).get(variable, question.get('default'))
        if answer in (None, '') and not question.get('required'):
            continue
        if question['type'] == 'integer':
            answer = int(answer)
        if question['type'] == 'multiplechoice':
            assert answer in question['choices'], (variable, answer)
        extravars[variable] = answer
    with open(os.path.join(pdd, 'env', 'extravars'), 'w') as handle:
        yaml.safe_dump(extravars, handle)

    # the credential's injection
    envvars = dict(_credential_env(pdd, credential), ANSIBLE_LOCALHOST_WARNING='false',
                   ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_NOCOLOR='1')
    with open(os.path.join(pdd, 'env', 'envvars'), 'w') as handle:
        yaml.safe_dump(envvars, handle)
    cmdline = []
    if job_type == 'check':
        cmdline.append('--check')
    if diff:
        cmdline.append('--diff')
    if cmdline:
        with open(os.path.join(pdd, 'env', 'cmdline'), 'w') as handle:
            handle.write(' '.join(cmdline))
    with open(os.path.join(pdd, 'env', 'settings'), 'w') as handle:
        yaml.safe_dump({'job_timeout': int(template.get('timeout') or timeout), 'suppress_ansible_output': False},
                       handle)

    runner = os.path.join(os.path.dirname(sys.executable), 'ansible-runner')
    assert os.path.exists(runner), 'ansible-runner is not installed next to %s (tests/requirements-dev.txt)' % sys.executable
    # nothing of the test's own cluster access leaks into the job: only the credential above
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG')
    env['PATH'] = path or os.path.dirname(sys.executable) + os.pathsep + env.get('PATH', '')
    if home:
        env['HOME'] = home
    proc = subprocess.run([runner, 'run', pdd, '-p', template['playbook'], '--ident', ident], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    artifacts = os.path.join(pdd, 'artifacts', ident)
    events = []
    for path in sorted(glob.glob(os.path.join(artifacts, 'job_events', '*.json')),
                       key=lambda p: int(os.path.basename(p).split('-', 1)[0])):
        with open(path) as handle:
            events.append(json.load(handle))

    def _read(name, default=''):
        try:
            with open(os.path.join(artifacts, name)) as handle:
                return handle.read().strip()
        except OSError:
            return default

    rc = _read('rc')
    return Job(rc=int(rc) if rc else proc.returncode, status=_read('status', 'unknown'),
               stdout=_read('stdout') or proc.stdout, events=events, private_data_dir=pdd)
