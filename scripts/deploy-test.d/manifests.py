"""Reads deploy/kubernetes/ as a cluster would and checks what the schemas cannot: that the
pieces fit together and fit the server (probe paths and ports, the config's path and port,
the Secret's name, the user of the image, the grace period against shutdown_timeout, the
worker IDs' source). Also gives what a pod of the StatefulSet would see (its config and
environment), for `snowdrift serve --check-config` and for scripts/deploy-test.d/pods.py.

Usage: manifests.py check
       manifests.py toml                 the ConfigMap's snowdrift.toml
       manifests.py env ORDINAL [SECRETS.json]   a pod's SNOWDRIFT_ variables, NAME=VALUE lines
"""
import json, pathlib, re, sys, tomllib
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
KUBE = ROOT / 'deploy' / 'kubernetes'
NAMESPACE = 'default'


class Misfit(Exception):
    pass


def load():
    docs = []
    for path in sorted(KUBE.glob('*.yaml')) + sorted((KUBE / 'secret').glob('*.yaml')):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.relative_to(ROOT), doc))
    return docs


def one(docs, kind, name=None):
    found = [d for _, d in docs if d['kind'] == kind and (name is None or d['metadata']['name'] == name)]
    if len(found) != 1:
        raise Misfit(f'expected one {kind}{" named " + name if name else ""} in deploy/kubernetes, found {len(found)}')
    return found[0]


def container(sts):
    cs = sts['spec']['template']['spec']['containers']
    return next(c for c in cs if c['name'] == 'snowdrift')


def config_map(docs, sts):
    vols = sts['spec']['template']['spec']['volumes']
    vol = next((v for v in vols if 'configMap' in v), None)
    if vol is None:
        raise Misfit('the StatefulSet mounts no ConfigMap')
    return vol, one(docs, 'ConfigMap', vol['configMap']['name'])


def duration_seconds(text):
    m = re.fullmatch(r'(\d+)(ms|s|m|h)', text)
    if not m:
        raise Misfit(f'cannot read the duration {text!r}')
    n, unit = int(m[1]), m[2]
    return n / 1000 if unit == 'ms' else n * {'s': 1, 'm': 60, 'h': 3600}[unit]


def check(docs):
    sts = one(docs, 'StatefulSet')
    spec, pod = sts['spec'], sts['spec']['template']['spec']
    labels = spec['template']['metadata']['labels']
    c = container(sts)
    ports = {p['name']: p['containerPort'] for p in c['ports']}

    def selects(selector, what):
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            raise Misfit(f'{what} selects {selector}, which is not the pods\' labels {labels}')

    selects(spec['selector']['matchLabels'], 'the StatefulSet')
    headless = one(docs, 'Service', spec['serviceName'])
    if headless['spec'].get('clusterIP') != 'None':
        raise Misfit(f'the StatefulSet\'s serviceName {spec["serviceName"]} must be headless (clusterIP: None)')
    if not headless['spec'].get('publishNotReadyAddresses'):
        raise Misfit('the headless Service must publish pods that are not ready: a tso leader that is not ready must still be reached by its followers')
    clients = [d for _, d in docs if d['kind'] == 'Service' and d['spec'].get('clusterIP') != 'None']
    if not clients:
        raise Misfit('no Service for clients (one that is not headless)')
    for svc in [headless] + clients:
        selects(svc['spec']['selector'], f'Service {svc["metadata"]["name"]}')
        for p in svc['spec']['ports']:
            if p['targetPort'] not in ports and p['targetPort'] not in ports.values():
                raise Misfit(f'Service {svc["metadata"]["name"]} targets port {p["targetPort"]!r}, which the container does not have ({ports})')
    pdb = one(docs, 'PodDisruptionBudget')
    selects(pdb['spec']['selector']['matchLabels'], 'the PodDisruptionBudget')

    # Probes: readiness on /readyz, liveness on /healthz, on the port the server listens on.
    vol, cm = config_map(docs, sts)
    config = tomllib.loads(cm['data']['snowdrift.toml'])
    listen_port = int(config['server']['listen'].rsplit(':', 1)[1])
    for probe, path in (('readinessProbe', '/readyz'), ('livenessProbe', '/healthz')):
        get = c.get(probe, {}).get('httpGet')
        if not get or get['path'] != path:
            raise Misfit(f'the container\'s {probe} must GET {path}, not {get}')
        port = ports.get(get['port'], get['port'])
        if port != listen_port:
            raise Misfit(f'the {probe} checks port {port}, the server listens on {listen_port}')

    # The config file the server reads is the ConfigMap's.
    env = {e['name']: e.get('value') for e in c.get('env', [])}
    mount = next((m for m in c['volumeMounts'] if m['name'] == vol['name']), None)
    if mount is None or env.get('SNOWDRIFT_CONFIG') != mount['mountPath'].rstrip('/') + '/snowdrift.toml':
        raise Misfit(f'SNOWDRIFT_CONFIG ({env.get("SNOWDRIFT_CONFIG")}) is not the ConfigMap\'s snowdrift.toml as mounted ({mount and mount["mountPath"]})')
    # A tso leader is reached at the URL it advertises: its name under the headless Service.
    want = f'http://$(POD_NAME).{spec["serviceName"]}:{listen_port}'
    if env.get('SNOWDRIFT_SERVER__ADVERTISE') != want:
        raise Misfit(f'the pods advertise {env.get("SNOWDRIFT_SERVER__ADVERTISE")!r}; the tso followers reach a leader at {want!r}')
    secret = one(docs, 'Secret')
    refs = [s['secretRef']['name'] for s in c.get('envFrom', []) if 'secretRef' in s]
    if refs != [secret['metadata']['name']]:
        raise Misfit(f'the container takes its variables from Secrets {refs}, the Secret is {secret["metadata"]["name"]}')
    if not any(k.startswith('SNOWDRIFT_AUTH__TOKEN__') for k in secret['stringData']):
        raise Misfit('the Secret holds no [[auth.token]]: a server listening beyond loopback refuses to start without one')

    # Worker IDs: the ordinal, or a coordinator.
    worker = config.get('worker', {})
    if not (worker.get('registry') == 'derived' and worker.get('derive') == 'statefulset') \
            and worker.get('registry') not in ('etcd', 'zookeeper', 'sql', 'redis'):
        raise Misfit(f'pods must take worker IDs from their ordinal (registry = "derived", derive = "statefulset") or a coordinator, not {worker}')
    if worker.get('registry') == 'derived' and not worker.get('verify_with'):
        raise Misfit('derived worker IDs without worker.verify_with are locked on one machine only: a second live pod with the same ordinal would go unnoticed')
    if not any(g.get('kind') == 'tso' and g.get('url', '').startswith(('etcd://', 'http://', 'https://')) for g in config.get('generator', [])):
        raise Misfit('no tso generator on etcd in the ConfigMap')

    # Termination: the kubelet's SIGKILL must come after the preStop sleep and the server's drain.
    grace = pod.get('terminationGracePeriodSeconds', 30)
    pre_stop = c.get('lifecycle', {}).get('preStop', {}).get('sleep', {}).get('seconds', 0)
    shutdown = duration_seconds(config['server'].get('shutdown_timeout', '10s'))
    if grace < pre_stop + shutdown + 1:
        raise Misfit(f'terminationGracePeriodSeconds {grace} leaves the server less than its shutdown_timeout ({shutdown:g} s) after the preStop sleep ({pre_stop} s)')

    # The user: non-root, the image's.
    image_user = re.search(r'^USER\s+(\d+):(\d+)', (ROOT / 'deploy' / 'Containerfile').read_text(), re.M)
    sc = pod.get('securityContext', {})
    if not sc.get('runAsNonRoot') or (sc.get('runAsUser'), sc.get('runAsGroup')) != (int(image_user[1]), int(image_user[2])):
        raise Misfit(f'the pods must run as the image\'s user {image_user[1]}:{image_user[2]} with runAsNonRoot, not {sc}')
    csc = c.get('securityContext', {})
    if csc.get('allowPrivilegeEscalation') is not False or not csc.get('readOnlyRootFilesystem') \
            or csc.get('capabilities', {}).get('drop') != ['ALL']:
        raise Misfit(f'the container must drop every capability, forbid privilege escalation and keep its root read-only, not {csc}')


def pod_env(docs, ordinal, secret_values=None):
    """The variables the kubelet would give pod ORDINAL: env (with $(VAR) expanded and the
    downward API's fields) and envFrom the Secret (its placeholders replaced by SECRET_VALUES)."""
    sts = one(docs, 'StatefulSet')
    c = container(sts)
    pod_name = f'{sts["metadata"]["name"]}-{ordinal}'
    fields = {'metadata.name': pod_name, 'metadata.namespace': NAMESPACE}
    env = {}
    for src in c.get('envFrom', []):
        secret = one(docs, 'Secret', src['secretRef']['name'])
        env.update(secret.get('stringData', {}))
        env.update(secret_values or {})
    for e in c.get('env', []):
        if 'value' in e:
            env[e['name']] = re.sub(r'\$\((\w+)\)', lambda m: env.get(m[1], m[0]), e['value'])
        elif 'fieldRef' in e.get('valueFrom', {}):
            env[e['name']] = fields[e['valueFrom']['fieldRef']['fieldPath']]
        else:
            raise Misfit(f'the test does not know how to give the pod {e}')
    return pod_name, env


if __name__ == '__main__':
    docs = load()
    try:
        if sys.argv[1] == 'check':
            check(docs)
            print('manifests: the StatefulSet, Services, PDB, ConfigMap and Secret fit together and fit the server')
        elif sys.argv[1] == 'toml':
            sts = one(docs, 'StatefulSet')
            print(config_map(docs, sts)[1]['data']['snowdrift.toml'], end='')
        elif sys.argv[1] == 'env':
            values = json.loads(pathlib.Path(sys.argv[3]).read_text()) if len(sys.argv) > 3 else None
            for k, v in pod_env(docs, int(sys.argv[2]), values)[1].items():
                print(f'{k}={v}')
    except Misfit as e:
        sys.exit(f'deploy/kubernetes: {e}')
