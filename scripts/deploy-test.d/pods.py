"""Runs the image as deploy/kubernetes/ would run it, with podman: an etcd (TLS, a user for
snowdrift whose role has the prefix /snowdrift alone, auth enabled, as docs/ops/deploy.md
sets it up with etcdctl) and a Redis (the store) on a network of their own, and two pods of the
StatefulSet (snowdrift-0 and -1), each with its host name and its name under the headless
Service, the ConfigMap's snowdrift.toml and the TLS Secret (the cluster certificate made as
docs/ops/deploy.md says, scripts/deploy-test.d/certs.py) mounted where the StatefulSet mounts
them, the environment the kubelet would give it (the Secret's variables with real tokens and
etcd's password), its user, a read-only root, no capabilities, no privilege escalation, and
writable emptyDirs. Then checks what the manifests promise: etcd refuses a client without a
user from inside the network (so a tso could start without insecure_coordinator), both pods
become ready on the readiness probe's path, port and scheme (HTTPS, the certificate checked
against the cluster certificate for the pod's advertised name), each issues as the worker ID
of its ordinal, the tso answers on both (the follower forwards over https to the leader at
the URL it advertises, the headless Service's name), tokens are required, a third pod with
an ordinal already live is refused at start (the ID is claimed on etcd), and a pod stopped
as the kubelet stops it exits 0 within its grace period.

Usage: pods.py PODMAN_GLOBAL_ARGS RUN_ARGS IMAGE BIN WORKDIR (JSON lists; run by scripts/deploy-test)   (run by scripts/deploy-test)
"""
import http.client, json, os, pathlib, secrets, socket, ssl, subprocess, sys, time, tomllib
import certs, manifests

podman_args, run_args = json.loads(sys.argv[1]), json.loads(sys.argv[2])
image, binary, workdir = sys.argv[3], sys.argv[4], pathlib.Path(sys.argv[5]).resolve()
NET = 'dep-test-net'
started = []


def podman(*args, check=True, capture=True):
    if args[0] == 'run':
        args = ('run', *run_args, *args[1:])
    r = subprocess.run(['podman', *podman_args, *args], text=True,
                       stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None)
    if check and r.returncode != 0:
        raise SystemExit(f'podman {" ".join(args)} failed ({r.returncode}):\n{r.stdout}')
    return r


def fail(msg, *containers):
    for c in containers:
        print(f'--- logs of {c} ---\n{podman("logs", c, check=False).stdout}', file=sys.stderr)
    raise SystemExit(f'pods: {msg}')


def command(name):
    path = subprocess.run(['sh', '-c', f'command -v {name}'], capture_output=True, text=True).stdout.strip()
    if not path:
        raise SystemExit(f'pods: {name} is missing (scripts/services installs it)')
    return path


def helper_image(tag, *binaries):
    """An image of binaries of this machine and the libraries they link (etcd, redis-server)."""
    root = workdir / tag.split('/')[-1].replace(':', '-')
    subprocess.run(['rm', '-rf', str(root)], check=True)
    files = list(binaries)
    for b in binaries:
        files += [l.split()[2] if '=>' in l else l.split()[0]
                  for l in subprocess.run(['ldd', b], capture_output=True, text=True).stdout.splitlines()
                  if '/' in l and ('=>' not in l or len(l.split()) > 2)]
    for f in files:
        dest = root / f.lstrip('/')
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(['cp', '-L', f, str(dest)], check=True)
    (root / 'tmp').mkdir(mode=0o1777, exist_ok=True)
    (root / 'data').mkdir(exist_ok=True)
    tar = subprocess.run(['tar', '-C', str(root), '-c', '.'], capture_output=True, check=True).stdout
    r = subprocess.run(['podman', *podman_args, 'import', '-', tag], input=tar, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f'podman import {tag}: {r.stderr.decode()}')


class PodConnection(http.client.HTTPSConnection):
    """HTTPS to a pod's address, its certificate checked for the pod's advertised name
    (which resolves only inside the network)."""

    def __init__(self, name, address, port, context, timeout):
        super().__init__(name, port, timeout=timeout, context=context)
        self.address, self.tls = address, context

    def connect(self):
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)


def get(pod, path, token=None, timeout=3):
    """GET PATH of POD (name, address, port, TLS context): (status, body), or (None, why)."""
    name, address, port, context = pod
    conn = PodConnection(name, address, port, context, timeout)
    try:
        conn.request('GET', path, headers={'Authorization': f'Bearer {token}'} if token else {})
        r = conn.getresponse()
        return r.status, r.read().decode()
    except (OSError, http.client.HTTPException) as e:
        return None, str(e)
    finally:
        conn.close()


def ip(name):
    return podman('inspect', name, '--format', f'{{{{(index .NetworkSettings.Networks "{NET}").IPAddress}}}}').stdout.strip()


def token(name, generators):
    out = subprocess.run([binary, 'token', 'create', '--name', name, '--role', 'read', '--generators', generators],
                         capture_output=True, text=True, check=True).stdout
    return next(w for w in out.split() if w.startswith('sd_')), next(w.strip('"') for w in out.split() if w.startswith('"sha256:'))


def cleanup():
    for c in reversed(started):
        podman('rm', '-f', '-t', '0', c, check=False)
    podman('network', 'rm', '-f', NET, check=False)


def etcdctl(*args, user=None, check=True):
    """etcdctl in etcd's container, as an operator runs it (kubectl exec): over TLS to its
    own client port."""
    cmd = ['exec', 'dep-etcd', '/usr/bin/etcdctl', '--endpoints', 'https://localhost:2379', '--cacert', '/tls/ca.crt']
    return podman(*cmd, *(['--user', user] if user else []), *args, check=check)


def main():
    docs = manifests.load()
    sts = manifests.one(docs, 'StatefulSet')
    pod_spec = sts['spec']['template']['spec']
    c = manifests.container(sts)
    vol, cm = manifests.config_map(docs, sts)
    tls_vol, tls_mount, tls_secret = manifests.tls_volume(docs, sts)
    config = tomllib.loads(cm['data']['snowdrift.toml'])
    port = int(config['server']['listen'].rsplit(':', 1)[1])
    grace = pod_spec.get('terminationGracePeriodSeconds', 30)

    # The certificates, as docs/ops/deploy.md makes them; etcd gets its own in /tls.
    made = certs.make(workdir / 'certs', manifests.NAMESPACE)
    etcd_tls = made / 'etcd'
    (etcd_tls / 'ca.crt').write_bytes((made / 'etcd-ca.crt').read_bytes())

    helper_image('localhost/dep-etcd:test', command('etcd'), command('etcdctl'))
    helper_image('localhost/dep-redis:test', command('redis-server'))
    cleanup()
    podman('network', 'create', NET)
    # The names the ConfigMap and the Secret use for etcd and the store. etcd serves TLS only.
    started.append('dep-etcd')
    podman('run', '-d', '--name', 'dep-etcd', '--network', NET, '--network-alias', 'etcd',
           '-v', f'{etcd_tls}:/tls:ro', 'localhost/dep-etcd:test',
           '/usr/bin/etcd', '--data-dir', '/data/etcd', '--listen-client-urls', 'https://0.0.0.0:2379',
           '--advertise-client-urls', 'https://etcd:2379', '--cert-file', '/tls/server.crt', '--key-file', '/tls/server.key',
           '--listen-peer-urls', 'http://127.0.0.1:2380',
           '--initial-advertise-peer-urls', 'http://127.0.0.1:2380', '--initial-cluster', 'default=http://127.0.0.1:2380')
    started.append('dep-redis')
    podman('run', '-d', '--name', 'dep-redis', '--network', NET, '--network-alias', 'redis', 'localhost/dep-redis:test',
           '/usr/bin/redis-server', '--bind', '0.0.0.0', '--protected-mode', 'no', '--save', '', '--appendonly', 'no')

    # etcd's users, as docs/ops/deploy.md sets them up: root, and snowdrift with readwrite on
    # the prefix /snowdrift alone; then authentication on.
    deadline = time.monotonic() + 30
    while etcdctl('endpoint', 'health', check=False).returncode != 0:
        if time.monotonic() > deadline:
            fail('etcd did not answer over TLS within 30 s', 'dep-etcd')
        time.sleep(0.2)
    root_password, etcd_password = secrets.token_hex(16), secrets.token_hex(16)
    for step in (['role', 'add', 'root'], ['user', 'add', f'root:{root_password}'], ['user', 'grant-role', 'root', 'root'],
                 ['role', 'add', 'snowdrift'], ['role', 'grant-permission', 'snowdrift', '--prefix=true', 'readwrite', '/snowdrift'],
                 ['user', 'add', f'snowdrift:{etcd_password}'], ['user', 'grant-role', 'snowdrift', 'snowdrift'],
                 ['auth', 'enable']):
        etcdctl(*step)
    # From inside the network, what anyone who reaches etcd can do: nothing without a user (a
    # put of a forged tso leader key), and the snowdrift user nothing outside /snowdrift.
    # So the tso starts without insecure_coordinator (it refuses an etcd that takes this).
    anonymous = podman('run', '--rm', '--network', NET, '-v', f'{etcd_tls}/ca.crt:/ca.crt:ro', 'localhost/dep-etcd:test',
                       '/usr/bin/etcdctl', '--endpoints', 'https://etcd:2379', '--cacert', '/ca.crt',
                       'put', '/snowdrift/tso/ts/leader', 'https://forged:8080', check=False)
    if anonymous.returncode == 0 or 'user name is empty' not in anonymous.stdout:
        fail(f'etcd took (or did not refuse for want of a user) an anonymous put from inside the network: {anonymous.stdout.strip()}', 'dep-etcd')
    outside = etcdctl('put', '/elsewhere', 'x', user=f'snowdrift:{etcd_password}', check=False)
    if outside.returncode == 0 or 'permission denied' not in outside.stdout:
        fail(f'the snowdrift user may write outside /snowdrift: {outside.stdout.strip()}', 'dep-etcd')
    said = lambda r: r.stdout.strip().splitlines()[-1]
    print(f'pods: etcd serves TLS with auth on; from inside the network an anonymous put is refused ({said(anonymous)}), '
          f'the snowdrift user may not write outside /snowdrift ({said(outside)})')

    apps, apps_hash = token('apps', '*')
    fwd, fwd_hash = token('tso-forward', 'ts')
    tls_dir = tls_mount['mountPath'].rstrip('/')
    etcd_url = f'https://snowdrift:{etcd_password}@etcd:2379?ca={tls_dir}/etcd-ca.crt'
    pod_secrets = {'SNOWDRIFT_STORE__URL': 'redis://redis:6379', 'SNOWDRIFT_AUTH__TOKEN__0__HASH': apps_hash,
                   'SNOWDRIFT_AUTH__TOKEN__1__HASH': fwd_hash, 'SNOWDRIFT_GENERATOR__1__FORWARD_TOKEN': fwd,
                   'SNOWDRIFT_WORKER__VERIFY_WITH': etcd_url, 'SNOWDRIFT_GENERATOR__1__URL': etcd_url}
    config_dir = workdir / 'configmap'
    subprocess.run(['rm', '-rf', str(config_dir)], check=True)
    config_dir.mkdir(parents=True)
    (config_dir / 'snowdrift.toml').write_text(cm['data']['snowdrift.toml'])
    # The TLS Secret's volume as the kubelet makes it: its keys as files, root:fsGroup, defaultMode.
    fs_group = pod_spec['securityContext']['fsGroup']
    secret_dir = workdir / f'secret-{tls_secret["metadata"]["name"]}'
    subprocess.run(['rm', '-rf', str(secret_dir)], check=True)
    secret_dir.mkdir(parents=True)
    for key in manifests.secret_keys(tls_secret):
        f = secret_dir / key
        f.write_bytes((made / key).read_bytes())
        os.chown(f, 0, fs_group)
        f.chmod(tls_vol['secret'].get('defaultMode', 0o644))
    # A mount inside the ConfigMap's volume needs its mount point there, which the kubelet
    # creates (the volume is read-only to the runtime).
    config_mount = next(m['mountPath'].rstrip('/') for m in c['volumeMounts'] if m['name'] == vol['name'])
    for m in c['volumeMounts']:
        if m['mountPath'].startswith(config_mount + '/'):
            (config_dir / m['mountPath'][len(config_mount) + 1:]).mkdir(parents=True, exist_ok=True)
    # Clients and followers trust the cluster certificate alone.
    cluster_tls = ssl.create_default_context(cafile=str(made / 'tls.crt'))
    advertised = {}

    def start_pod(ordinal, name=None):
        pod_name, env = manifests.pod_env(docs, ordinal, pod_secrets)
        name = name or pod_name
        advertised[name] = env['SNOWDRIFT_SERVER__ADVERTISE']
        host = advertised[name].split('://', 1)[1].rsplit(':', 1)[0]
        sc, csc = pod_spec['securityContext'], c['securityContext']
        args = ['run', '-d', '--name', name, '--hostname', pod_name, '--network', NET,
                '--network-alias', host,
                '--user', f'{sc["runAsUser"]}:{sc["runAsGroup"]}', '--group-add', str(sc['fsGroup'])]
        if csc.get('readOnlyRootFilesystem'):
            args.append('--read-only')
        if csc.get('capabilities', {}).get('drop') == ['ALL']:
            args.append('--cap-drop=all')
        if csc.get('allowPrivilegeEscalation') is False:
            args += ['--security-opt', 'no-new-privileges']
        for m in c['volumeMounts']:
            if m['name'] == vol['name']:
                args += ['-v', f'{config_dir}:{m["mountPath"]}:ro']
            elif m['name'] == tls_vol['name']:
                args += ['-v', f'{secret_dir}:{m["mountPath"]}:ro']
            else:  # emptyDir: world-writable as the kubelet makes it, owned by fsGroup
                d = workdir / f'{name}-{m["name"]}'
                d.mkdir(parents=True, exist_ok=True)
                os.chown(d, 0, sc['fsGroup'])
                d.chmod(0o2777)
                args += ['-v', f'{d}:{m["mountPath"]}']
        for k, v in env.items():
            args += ['-e', f'{k}={v}']
        started.append(name)
        podman(*args, image, *c.get('args', []))
        return name

    pods = [start_pod(0), start_pod(1)]
    for p in pods:
        if podman('inspect', p, '--format', '{{.State.Running}}').stdout.strip() != 'true':
            fail(f'{p} exited at start with code {podman("inspect", p, "--format", "{{.State.ExitCode}}").stdout.strip()}', p)
    # The probes' scheme, and the pod's certificate checked (more than the kubelet does)
    # against the cluster certificate for the name the pod advertises.
    addr = {p: (advertised[p].split('://', 1)[1].rsplit(':', 1)[0], ip(p), port, cluster_tls) for p in pods}
    ready_path = c['readinessProbe']['httpGet']['path']
    live_path = c['livenessProbe']['httpGet']['path']
    for probe in ('readinessProbe', 'livenessProbe', 'startupProbe'):
        if c[probe]['httpGet'].get('scheme') != 'HTTPS':
            fail(f'the {probe} is not HTTPS, and the pods serve HTTPS only')
    deadline = time.monotonic() + 60
    for p in pods:
        while True:
            status, body = get(addr[p], ready_path)
            if status == 200:
                break
            if podman('inspect', p, '--format', '{{.State.Running}}').stdout.strip() != 'true':
                fail(f'{p} exited before it was ready', p)
            if time.monotonic() > deadline:
                fail(f'{p} did not become ready on {ready_path} within 60 s (last: {status} {body})', p)
            time.sleep(0.5)
        status, _ = get(addr[p], live_path)
        if status != 200:
            fail(f'{p}: liveness probe {live_path} answered {status}', p)
    print(f'pods: {", ".join(pods)} ready on {ready_path}, alive on {live_path}, over HTTPS with the cluster certificate for their advertised names')

    # Each pod issues as the worker ID of its ordinal, registered on etcd.
    for ordinal, p in enumerate(pods):
        status, body = get(addr[p], '/v1/generators', apps)
        if status != 200:
            fail(f'{p}: /v1/generators answered {status}: {body}', p)
        gens = json.loads(body)
        gens = gens.get('generators', gens) if isinstance(gens, dict) else gens
        sf = next(g for g in gens if g.get('name') == 'snowflake')
        worker = sf.get('worker', {})
        if worker.get('worker_id') != ordinal or worker.get('verified') is not True:
            fail(f'{p}: snowflake worker is {worker}, expected ID {ordinal} verified on etcd', p)
        user = podman('top', p, 'user', 'group').stdout.split()
        if user[2:4] != ['snowdrift', 'snowdrift']:
            fail(f'{p} runs as {user[2:]}, not the image\'s user snowdrift', p)
    print('pods: each pod issues as the worker ID of its ordinal, verified on etcd, as user snowdrift')

    # Tokens are required; the tso answers on both pods, one forwarding to the other, in order.
    status, _ = get(addr[pods[0]], '/v1/ids/snowflake')
    if status != 401:
        fail(f'an ID without a token answered {status}, not 401', pods[0])
    last = 0
    for i in range(20):
        p = pods[i % 2]
        status, body = get(addr[p], '/v1/ids/ts?count=5', apps, timeout=10)
        if status != 200:
            fail(f'{p}: /v1/ids/ts answered {status}: {body}', *pods)
        ids = [int(x) for x in json.loads(body)['ids']]
        if ids[0] <= last or ids != sorted(ids):
            fail(f'tso IDs out of order: {ids} after {last}', *pods)
        last = ids[-1]
    roles, forwards, leaders = [], [], []
    for p in pods:
        gens = json.loads(get(addr[p], '/v1/generators', apps)[1])
        gens = gens.get('generators', gens) if isinstance(gens, dict) else gens
        tso = next(g for g in gens if g.get('name') == 'ts').get('tso', {})
        roles.append(tso.get('role'))
        forwards.append(tso.get('forwards', 0))
        leaders.append(tso.get('leader'))
    if sorted(map(str, roles)) != ['follower', 'leader']:
        fail(f'tso roles are {roles}, expected one leader and one follower', *pods)
    follower, leader = roles.index('follower'), roles.index('leader')
    if forwards[follower] < 10:
        fail(f'the follower forwarded {forwards[follower]} requests to the leader, expected its 10', *pods)
    if leaders[follower] != advertised[pods[leader]] or not leaders[follower].startswith('https://'):
        fail(f'the follower forwards to {leaders[follower]}, not the leader\'s advertised https URL {advertised[pods[leader]]}', *pods)
    print(f'pods: 20 tso requests alternating between the pods strictly increase; roles {roles}, the follower forwarded its 10 to {leaders[follower]}')

    # A second live pod with ordinal 1 (a force-deleted pod still running) is refused.
    dup = start_pod(1, name='dep-dup-1')
    deadline = time.monotonic() + 30
    while podman('inspect', dup, '--format', '{{.State.Running}}').stdout.strip() == 'true':
        if time.monotonic() > deadline:
            fail('a second pod with ordinal 1 is still running after 30 s: the worker ID was not refused', dup)
        time.sleep(0.5)
    logs = podman('logs', dup).stdout
    if 'held' not in logs:
        fail(f'the second pod with ordinal 1 stopped without saying the worker ID is held', dup)
    print('pods: a second live pod with ordinal 1 is refused at start: ' + next(l for l in logs.splitlines() if 'held' in l)[:160])

    # Stopped as the kubelet stops it (SIGTERM, SIGKILL after the grace period): exits 0 in time.
    t0 = time.monotonic()
    podman('stop', '-t', str(grace), pods[0])
    took = time.monotonic() - t0
    code = podman('inspect', pods[0], '--format', '{{.State.ExitCode}}').stdout.strip()
    if code != '0' or took >= grace:
        fail(f'{pods[0]} stopped with exit code {code} after {took:.1f} s (grace {grace} s)', pods[0])
    print(f'pods: {pods[0]} stopped on SIGTERM with exit code 0 in {took:.1f} s (grace {grace} s)')


try:
    main()
finally:
    cleanup()
