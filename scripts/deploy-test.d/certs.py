"""Makes the certificates a deployment of deploy/kubernetes/ needs, with openssl, as
docs/ops/deploy.md says to: the cluster certificate (self-signed, so it is its own CA and
followers trust nothing else: `*.snowdrift-headless.NAMESPACE.svc` for the pods, `snowdrift`
and `snowdrift.NAMESPACE.svc` for clients) and its key, and a throwaway etcd CA with a server
certificate for an etcd reached as `etcd` (these a real cluster already has).

Writes into DIR the files of the Secret snowdrift-tls (tls.crt, tls.key, etcd-ca.crt) and
etcd's own (etcd/server.crt, etcd/server.key).

Usage: certs.py DIR [NAMESPACE]   (default namespace: default)
"""
import pathlib, subprocess, sys


def openssl(*args):
    r = subprocess.run(['openssl', *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f'openssl {" ".join(args)} failed:\n{r.stderr}')


def cluster_certificate(out, namespace):
    """The command docs/ops/deploy.md gives, word for word but the paths."""
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650',
            '-subj', '/CN=snowdrift', '-keyout', str(out / 'tls.key'), '-out', str(out / 'tls.crt'),
            '-addext', f'subjectAltName=DNS:*.snowdrift-headless.{namespace}.svc,DNS:snowdrift,DNS:snowdrift.{namespace}.svc',
            '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'extendedKeyUsage=serverAuth')


def etcd_certificates(out):
    etcd = out / 'etcd'
    etcd.mkdir(parents=True, exist_ok=True)
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30',
            '-subj', '/CN=etcd test CA', '-keyout', str(etcd / 'ca.key'), '-out', str(out / 'etcd-ca.crt'),
            '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign')
    openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
            '-subj', '/CN=etcd', '-keyout', str(etcd / 'server.key'), '-out', str(etcd / 'server.csr'))
    (etcd / 'server.ext').write_text('subjectAltName=DNS:etcd,DNS:localhost,IP:127.0.0.1\n'
                                     'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n')
    openssl('x509', '-req', '-in', str(etcd / 'server.csr'), '-CA', str(out / 'etcd-ca.crt'),
            '-CAkey', str(etcd / 'ca.key'), '-CAserial', str(etcd / 'ca.srl'), '-CAcreateserial', '-days', '30',
            '-extfile', str(etcd / 'server.ext'), '-out', str(etcd / 'server.crt'))


def make(out, namespace='default'):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cluster_certificate(out, namespace)
    etcd_certificates(out)
    return out


if __name__ == '__main__':
    make(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else 'default')
