"""Reads deploy/kubernetes/ as a cluster would and checks what the schemas cannot: that the
pieces fit together and fit the server (probe paths, ports and scheme, the config's path and
port, the Secrets' names, the TLS Secret's files where the config reads them, the user of the
image, the grace period against shutdown_timeout, the worker IDs' source, etcd over TLS with
a user, the NetworkPolicy in front of etcd, no insecure switch). Also gives what a pod of the
StatefulSet would see (its config and environment), for `snowdrift serve --check-config` and
for scripts/deploy-test.d/pods.py.

Usage: manifests.py check
       manifests.py toml [--at DIR]               the ConfigMap's snowdrift.toml
       manifests.py env ORDINAL [SECRETS.json] [--at DIR]
                                                  a pod's SNOWDRIFT_ variables, NAME=VALUE lines
       manifests.py tls-files DIR                 the TLS Secret as the example ships it, as
                                                  files in DIR (its placeholders)
  --at DIR: the TLS Secret's files are in DIR, not at the StatefulSet's mount path (for
            --check-config on this machine): the mount path is rewritten to DIR.
"""
import json, pathlib, re, sys, tomllib, urllib.parse
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


def tls_volume(docs, sts):
    """The Secret volume of the cluster certificate: (volume, its mount, the Secret)."""
    vols = [v for v in sts['spec']['template']['spec']['volumes'] if 'secret' in v]
    if len(vols) != 1:
        raise Misfit(f'the StatefulSet must mount one Secret (the cluster certificate and etcd\'s CA), not {len(vols)}')
    vol = vols[0]
    mount = next((m for m in container(sts)['volumeMounts'] if m['name'] == vol['name']), None)
    if mount is None:
        raise Misfit(f'the container does not mount the volume {vol["name"]} of Secret {vol["secret"]["secretName"]}')
    return vol, mount, one(docs, 'Secret', vol['secret']['secretName'])


def secret_keys(secret):
    return set(secret.get('stringData', {})) | set(secret.get('data', {}))


def env_secret(docs, sts):
    refs = [s['secretRef']['name'] for s in container(sts).get('envFrom', []) if 'secretRef' in s]
    if len(refs) != 1:
        raise Misfit(f'the container must take its variables from one Secret, not {refs}')
    return one(docs, 'Secret', refs[0])


def relocate(text, docs, at):
    """TEXT with the TLS Secret's mount path replaced by AT (its files on this machine)."""
    if not at:
        return text
    sts = one(docs, 'StatefulSet')
    mount = tls_volume(docs, sts)[1]['mountPath'].rstrip('/')
    return text.replace(mount + '/', str(pathlib.Path(at).resolve()) + '/')


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

    # Probes: readiness on /readyz, liveness and startup on /healthz, on the port the server
    # listens on, over HTTPS as it serves.
    vol, cm = config_map(docs, sts)
    config = tomllib.loads(cm['data']['snowdrift.toml'])
    listen_port = int(config['server']['listen'].rsplit(':', 1)[1])
    for probe, path in (('readinessProbe', '/readyz'), ('livenessProbe', '/healthz'), ('startupProbe', '/healthz')):
        get = c.get(probe, {}).get('httpGet')
        if not get or get['path'] != path:
            raise Misfit(f'the container\'s {probe} must GET {path}, not {get}')
        port = ports.get(get['port'], get['port'])
        if port != listen_port:
            raise Misfit(f'the {probe} checks port {port}, the server listens on {listen_port}')
        if get.get('scheme') != 'HTTPS':
            raise Misfit(f'the {probe} asks over {get.get("scheme", "HTTP")}; the server serves HTTPS (scheme: HTTPS)')

    # TLS: the cluster certificate and its key are files of the TLS Secret, where it is mounted.
    tls_vol, tls_mount, tls_secret = tls_volume(docs, sts)
    tls_files = {i['path']: i['key'] for i in tls_vol['secret']['items']} if 'items' in tls_vol['secret'] \
        else {k: k for k in secret_keys(tls_secret)}
    tls_dir = tls_mount['mountPath'].rstrip('/')

    def tls_file(path, what):
        if not path or not path.startswith(tls_dir + '/') or path[len(tls_dir) + 1:] not in tls_files:
            raise Misfit(f'{what} is {path!r}, not a file of the Secret {tls_secret["metadata"]["name"]} as mounted ({tls_dir}/ holds {sorted(tls_files)})')

    tls_file(config['server'].get('tls_cert'), 'server.tls_cert')
    tls_file(config['server'].get('tls_key'), 'server.tls_key')
    if not tls_mount.get('readOnly'):
        raise Misfit(f'the TLS Secret is mounted writable at {tls_dir}')
    mode = tls_vol['secret'].get('defaultMode', 0o644)
    if mode & 0o007:
        raise Misfit(f'the TLS Secret\'s files (the key among them) are readable by every user in the pod (defaultMode {mode:o}): 0440 with fsGroup')

    # The config file the server reads is the ConfigMap's.
    env = {e['name']: e.get('value') for e in c.get('env', [])}
    mount = next((m for m in c['volumeMounts'] if m['name'] == vol['name']), None)
    if mount is None or env.get('SNOWDRIFT_CONFIG') != mount['mountPath'].rstrip('/') + '/snowdrift.toml':
        raise Misfit(f'SNOWDRIFT_CONFIG ({env.get("SNOWDRIFT_CONFIG")}) is not the ConfigMap\'s snowdrift.toml as mounted ({mount and mount["mountPath"]})')
    # A tso leader is reached at the URL it advertises: its name under the headless Service,
    # over TLS (the name the cluster certificate carries: *.snowdrift-headless.NAMESPACE.svc).
    want = f'https://$(POD_NAME).{spec["serviceName"]}.$(POD_NAMESPACE).svc:{listen_port}'
    if env.get('SNOWDRIFT_SERVER__ADVERTISE') != want:
        raise Misfit(f'the pods advertise {env.get("SNOWDRIFT_SERVER__ADVERTISE")!r}; the tso followers reach a leader at {want!r}')
    fields = {e['name']: e.get('valueFrom', {}).get('fieldRef', {}).get('fieldPath') for e in c.get('env', [])}
    if (fields.get('POD_NAME'), fields.get('POD_NAMESPACE')) != ('metadata.name', 'metadata.namespace'):
        raise Misfit(f'POD_NAME and POD_NAMESPACE must come from metadata.name and metadata.namespace, not {fields}')
    secret = env_secret(docs, sts)
    if secret is tls_secret:
        raise Misfit('the variables and the certificates come from one Secret')
    if not any(k.startswith('SNOWDRIFT_AUTH__TOKEN__') for k in secret['stringData']):
        raise Misfit('the Secret holds no [[auth.token]]: a server listening beyond loopback refuses to start without one')

    # Worker IDs: the ordinal, or a coordinator.
    worker = config.get('worker', {})
    if not (worker.get('registry') == 'derived' and worker.get('derive') == 'statefulset') \
            and worker.get('registry') not in ('etcd', 'zookeeper', 'sql', 'redis'):
        raise Misfit(f'pods must take worker IDs from their ordinal (registry = "derived", derive = "statefulset") or a coordinator, not {worker}')
    # etcd, as the pod sees it (the ConfigMap under the Secret's variables): over TLS with a
    # user, checked against the CA of the TLS Secret.
    pod_vars = secret['stringData']
    urls = {}
    verify_with = pod_vars.get('SNOWDRIFT_WORKER__VERIFY_WITH', worker.get('verify_with'))
    if worker.get('registry') == 'derived' and not verify_with:
        raise Misfit('derived worker IDs without worker.verify_with are locked on one machine only: a second live pod with the same ordinal would go unnoticed')
    if verify_with:
        urls['worker.verify_with'] = verify_with
    for i, g in enumerate(config.get('generator', [])):
        if g.get('kind') == 'tso':
            urls[f'generator {g.get("name")!r} url'] = pod_vars.get(f'SNOWDRIFT_GENERATOR__{i}__URL', g.get('url', ''))
    if not any(k.startswith('generator') for k in urls):
        raise Misfit('no tso generator in the ConfigMap')
    etcd_ports = set()
    for what, url in urls.items():
        u = urllib.parse.urlsplit(url)
        ca = urllib.parse.parse_qs(u.query).get('ca', [None])[0]
        if u.scheme != 'https' or not u.username or not u.password:
            raise Misfit(f'{what} is {u.scheme}://{u.hostname}:{u.port}: etcd must be reached over TLS (https://) as a user (USER:PASSWORD@), or anyone who reaches it can forge a lease or a tso leader')
        tls_file(ca, f'the CA of {what} (ca=)')
        etcd_ports.add(u.port or 2379)

    # Nothing lets the server run on an open coordinator or send a token in cleartext.
    for i, g in enumerate(config.get('generator', [])):
        for key in ('insecure_coordinator', 'forward_plaintext'):
            if key in g or f'SNOWDRIFT_GENERATOR__{i}__{key.upper()}' in pod_vars:
                raise Misfit(f'generator {g.get("name")!r} sets {key}: the kit\'s etcd has users and TLS and its pods serve over TLS, so nothing needs it')
    if config['server'].get('insecure_bind') or 'SNOWDRIFT_SERVER__INSECURE_BIND' in pod_vars:
        raise Misfit('server.insecure_bind is set: the pods listen beyond loopback and must have auth on')

    # A NetworkPolicy in front of etcd: its client port takes only snowdrift's pods.
    def selects_pods(peer):
        sel = peer.get('podSelector', {}).get('matchLabels')
        return set(peer) == {'podSelector'} and bool(sel) and all(labels.get(k) == v for k, v in sel.items()) \
            and not peer['podSelector'].get('matchExpressions')

    policies = [d for _, d in docs if d['kind'] == 'NetworkPolicy']
    guarded = set()
    for pol in policies:
        ps = pol['spec'].get('podSelector', {})
        sel = ps.get('matchLabels', {})
        if not sel or all(labels.get(k) == v for k, v in sel.items()) or 'Ingress' not in pol['spec'].get('policyTypes', []):
            continue  # not one in front of etcd
        for port in etcd_ports:
            admitting = [r for r in pol['spec'].get('ingress', [])
                         if not r.get('ports') or any(p.get('port') == port and p.get('protocol', 'TCP') == 'TCP' for p in r['ports'])]
            for r in admitting:
                if not r.get('from') or not all(selects_pods(peer) for peer in r['from']):
                    raise Misfit(f'NetworkPolicy {pol["metadata"]["name"]} admits {r.get("from", "everyone")} to etcd\'s port {port}; only the snowdrift pods ({labels}) may reach it')
            if admitting:
                guarded.add(port)
    if guarded != etcd_ports:
        raise Misfit(f'no NetworkPolicy selects etcd\'s pods and admits the snowdrift pods alone to its port {sorted(etcd_ports - guarded)}')

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
    args, at = sys.argv[1:], None
    if '--at' in args:
        i = args.index('--at')
        at, args = args[i + 1], args[:i] + args[i + 2:]
    try:
        if args[0] == 'check':
            check(docs)
            print('manifests: the StatefulSet, Services, PDB, NetworkPolicy, ConfigMap and both Secrets fit together and fit the server')
        elif args[0] == 'toml':
            sts = one(docs, 'StatefulSet')
            print(relocate(config_map(docs, sts)[1]['data']['snowdrift.toml'], docs, at), end='')
        elif args[0] == 'env':
            values = json.loads(pathlib.Path(args[2]).read_text()) if len(args) > 2 else None
            for k, v in pod_env(docs, int(args[1]), values)[1].items():
                print(f'{k}={relocate(v, docs, at)}')
        elif args[0] == 'tls-files':
            secret = tls_volume(docs, one(docs, 'StatefulSet'))[2]
            out = pathlib.Path(args[1])
            out.mkdir(parents=True, exist_ok=True)
            for k, v in secret.get('stringData', {}).items():
                (out / k).write_text(v)
    except Misfit as e:
        sys.exit(f'deploy/kubernetes: {e}')
