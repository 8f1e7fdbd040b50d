"""Runs the image as deploy/kubernetes/ would run it, with podman: an etcd and a Redis (the
store) on a network of their own, and two pods of the StatefulSet (snowdrift-0 and -1),
each with its host name, the ConfigMap's snowdrift.toml mounted where the StatefulSet mounts
it, the environment the kubelet would give it (the Secret's variables with real tokens), its
user, a read-only root, no capabilities, no privilege escalation, and writable emptyDirs.
Then checks what the manifests promise: both pods become ready on the readiness probe's path
and port, each issues as the worker ID of its ordinal, the tso answers on both (the follower
forwards to the leader at the URL it advertises, the headless Service's name), tokens are
required, a third pod with an ordinal already live is refused at start (the ID is claimed on
etcd), and a pod stopped as the kubelet stops it exits 0 within its grace period.

Usage: pods.py PODMAN_GLOBAL_ARGS RUN_ARGS IMAGE BIN WORKDIR (JSON lists; run by scripts/deploy-test)   (run by scripts/deploy-test)
"""
import json, os, pathlib, subprocess, sys, time, tomllib, urllib.request, urllib.error
import manifests

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


def helper_image(tag, binary_path):
    """An image of one binary of this machine and the libraries it links (etcd, redis-server)."""
    root = workdir / tag.split('/')[-1].replace(':', '-')
    subprocess.run(['rm', '-rf', str(root)], check=True)
    files = [binary_path] + [l.split()[2] if '=>' in l else l.split()[0]
                             for l in subprocess.run(['ldd', binary_path], capture_output=True, text=True).stdout.splitlines()
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


def get(url, token=None, timeout=3):
    req = urllib.request.Request(url, headers={'Authorization': f'Bearer {token}'} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


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


def main():
    docs = manifests.load()
    sts = manifests.one(docs, 'StatefulSet')
    pod_spec = sts['spec']['template']['spec']
    c = manifests.container(sts)
    vol, cm = manifests.config_map(docs, sts)
    config = tomllib.loads(cm['data']['snowdrift.toml'])
    port = int(config['server']['listen'].rsplit(':', 1)[1])
    headless = sts['spec']['serviceName']
    grace = pod_spec.get('terminationGracePeriodSeconds', 30)

    helper_image('localhost/dep-etcd:test', subprocess.run(['sh', '-c', 'command -v etcd'], capture_output=True, text=True).stdout.strip())
    helper_image('localhost/dep-redis:test', subprocess.run(['sh', '-c', 'command -v redis-server'], capture_output=True, text=True).stdout.strip())
    cleanup()
    podman('network', 'create', NET)
    # The names the ConfigMap and the Secret use for etcd and the store.
    started.append('dep-etcd')
    podman('run', '-d', '--name', 'dep-etcd', '--network', NET, '--network-alias', 'etcd', 'localhost/dep-etcd:test',
           '/usr/bin/etcd', '--data-dir', '/data/etcd', '--listen-client-urls', 'http://0.0.0.0:2379',
           '--advertise-client-urls', 'http://etcd:2379', '--listen-peer-urls', 'http://127.0.0.1:2380',
           '--initial-advertise-peer-urls', 'http://127.0.0.1:2380', '--initial-cluster', 'default=http://127.0.0.1:2380')
    started.append('dep-redis')
    podman('run', '-d', '--name', 'dep-redis', '--network', NET, '--network-alias', 'redis', 'localhost/dep-redis:test',
           '/usr/bin/redis-server', '--bind', '0.0.0.0', '--protected-mode', 'no', '--save', '', '--appendonly', 'no')

    apps, apps_hash = token('apps', '*')
    fwd, fwd_hash = token('tso-forward', 'ts')
    secrets = {'SNOWDRIFT_STORE__URL': 'redis://redis:6379', 'SNOWDRIFT_AUTH__TOKEN__0__HASH': apps_hash,
               'SNOWDRIFT_AUTH__TOKEN__1__HASH': fwd_hash, 'SNOWDRIFT_GENERATOR__1__FORWARD_TOKEN': fwd}
    config_dir = workdir / 'configmap'
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / 'snowdrift.toml').write_text(cm['data']['snowdrift.toml'])

    def start_pod(ordinal, name=None):
        pod_name, env = manifests.pod_env(docs, ordinal, secrets)
        name = name or pod_name
        sc, csc = pod_spec['securityContext'], c['securityContext']
        args = ['run', '-d', '--name', name, '--hostname', pod_name, '--network', NET,
                '--network-alias', f'{pod_name}.{headless}',
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
    addr = {p: f'http://{ip(p)}:{port}' for p in pods}
    ready_path = c['readinessProbe']['httpGet']['path']
    live_path = c['livenessProbe']['httpGet']['path']
    deadline = time.monotonic() + 60
    for p in pods:
        while True:
            status, body = get(addr[p] + ready_path)
            if status == 200:
                break
            if podman('inspect', p, '--format', '{{.State.Running}}').stdout.strip() != 'true':
                fail(f'{p} exited before it was ready', p)
            if time.monotonic() > deadline:
                fail(f'{p} did not become ready on {ready_path} within 60 s (last: {status} {body})', p)
            time.sleep(0.5)
        status, _ = get(addr[p] + live_path)
        if status != 200:
            fail(f'{p}: liveness probe {live_path} answered {status}', p)
    print(f'pods: {", ".join(pods)} ready on {ready_path}, alive on {live_path}')

    # Each pod issues as the worker ID of its ordinal, registered on etcd.
    for ordinal, p in enumerate(pods):
        status, body = get(addr[p] + '/v1/generators', apps)
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
    status, _ = get(addr[pods[0]] + '/v1/ids/snowflake')
    if status != 401:
        fail(f'an ID without a token answered {status}, not 401', pods[0])
    last, leader_seen = 0, set()
    for i in range(20):
        p = pods[i % 2]
        status, body = get(addr[p] + '/v1/ids/ts?count=5', apps, timeout=10)
        if status != 200:
            fail(f'{p}: /v1/ids/ts answered {status}: {body}', *pods)
        ids = [int(x) for x in json.loads(body)['ids']]
        if ids[0] <= last or ids != sorted(ids):
            fail(f'tso IDs out of order: {ids} after {last}', *pods)
        last = ids[-1]
    roles, forwards = [], []
    for p in pods:
        gens = json.loads(get(addr[p] + '/v1/generators', apps)[1])
        gens = gens.get('generators', gens) if isinstance(gens, dict) else gens
        tso = next(g for g in gens if g.get('name') == 'ts').get('tso', {})
        roles.append(tso.get('role'))
        forwards.append(tso.get('forwards', 0))
    if sorted(map(str, roles)) != ['follower', 'leader']:
        fail(f'tso roles are {roles}, expected one leader and one follower', *pods)
    if forwards[roles.index('follower')] < 10:
        fail(f'the follower forwarded {forwards[roles.index("follower")]} requests to the leader, expected its 10', *pods)
    print(f'pods: 20 tso requests alternating between the pods strictly increase; roles {roles}, the follower forwarded its 10 to the leader\'s advertised name')

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
