"""The cluster's certificates (openssl CLI, EC P-256) and its admin kubeconfig."""
from __future__ import annotations

import base64
import os
import shutil

import yaml

from .common import die
from .processes import run
from .state import State

APISERVER_EXT = (
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
    "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,"
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
    "DNS:kubernetes.default.svc.cluster.local\n"
)
CLIENT_EXT = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"


def make_pki(st: State) -> None:
    """CA, apiserver serving cert, admin client cert (system:masters) and the service-account
    key pair under <state>/pki; kept once made."""
    pki = st.path("pki")
    if os.path.exists(os.path.join(pki, "admin.crt")):
        return
    os.makedirs(pki, exist_ok=True)
    p = lambda *x: os.path.join(pki, *x)  # noqa: E731
    ossl = shutil.which("openssl") or die("openssl not found")

    def key(name):
        run([ossl, "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", p(f"{name}.key")])

    def leaf(name, subj, ext):
        key(name)
        run([ossl, "req", "-new", "-key", p(f"{name}.key"), "-subj", subj, "-out", p(f"{name}.csr")])
        with open(p(f"{name}.ext"), "w") as f:
            f.write(ext)
        run([ossl, "x509", "-req", "-in", p(f"{name}.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"),
             "-CAcreateserial", "-days", "3650", "-extfile", p(f"{name}.ext"), "-out", p(f"{name}.crt")])

    key("ca")
    run([ossl, "req", "-x509", "-new", "-key", p("ca.key"), "-subj", "/CN=gpuops-testbed-ca",
         "-days", "3650", "-out", p("ca.crt")])
    leaf("apiserver", "/CN=kube-apiserver", APISERVER_EXT)
    leaf("admin", "/O=system:masters/CN=kubernetes-admin", CLIENT_EXT)
    key("sa")
    run([ossl, "ec", "-in", p("sa.key"), "-pubout", "-out", p("sa.pub")])


def write_kubeconfig(st: State) -> str:
    """<state>/kubeconfig: the admin user, certificates inline; returns its path."""
    pki = st.path("pki")

    def b64(name):
        with open(os.path.join(pki, name), "rb") as f:
            return base64.b64encode(f.read()).decode()

    kc = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": st.name, "cluster": {
            "server": f"https://127.0.0.1:{st.data['ports']['apiserver']}",
            "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": f"{st.name}-admin", "user": {
            "client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
        "contexts": [{"name": st.name, "context": {"cluster": st.name, "user": f"{st.name}-admin"}}],
        "current-context": st.name,
    }
    path = st.path("kubeconfig")
    with open(path + ".tmp", "w") as f:
        yaml.safe_dump(kc, f)
    os.replace(path + ".tmp", path)
    return path
