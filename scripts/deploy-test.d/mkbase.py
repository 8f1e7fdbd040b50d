"""Writes a tar of a Debian root made of this machine's installed packages (and what they
depend on): the base image for the build stage of deploy/Containerfile where no registry can
be reached. Usage: mkbase OUT.tar PACKAGE..."""
import io, os, re, subprocess, sys, tarfile

def installed(p):
    r = subprocess.run(['dpkg-query', '-W', '-f=${Status}', p], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.endswith(' installed')

def closure(roots):
    seen, queue = set(), list(roots)
    while queue:
        p = queue.pop()
        if p in seen:
            continue
        if not installed(p):
            sys.exit(f'mkbase: package {p} is not installed on this machine')
        seen.add(p)
        out = subprocess.run(['dpkg-query', '-W', '-f=${Pre-Depends}, ${Depends}', p],
                             capture_output=True, text=True, check=True).stdout
        for group in out.split(','):
            for alt in group.split('|'):
                name = re.sub(r'\(.*?\)', '', alt).strip().split(':')[0]
                if name and installed(name):
                    queue.append(name)
                    break
    return sorted(seen)

out, roots = sys.argv[1], sys.argv[2:]
packages = closure(roots)
paths = set()
for p in packages:
    files = subprocess.run(['dpkg', '-L', p], capture_output=True, text=True, check=True).stdout
    for path in files.splitlines():
        if path.startswith('/') and os.path.lexists(path):
            # /bin, /lib, /sbin, /lib64 are links into /usr (merged /usr): file each path under
            # its real directory, and keep the links themselves as links.
            paths.add(os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path)))
paths.add('/etc/ssl/certs/ca-certificates.crt')
paths.discard('/')
with tarfile.open(out, 'w') as tar:
    for path in sorted(paths):
        tar.add(path, arcname=path.lstrip('/'), recursive=False)
    def text(name, body, mode=0o644):
        info = tarfile.TarInfo(name); data = body.encode(); info.size = len(data); info.mode = mode
        tar.addfile(info, io.BytesIO(data))
    names = {m for m in tar.getnames()}
    if 'etc/passwd' not in names:
        text('etc/passwd', 'root:x:0:0:root:/root:/bin/sh\n')
        text('etc/group', 'root:x:0:\n')
    for d, mode in (('tmp', 0o1777), ('root', 0o700)):
        if d not in names:
            info = tarfile.TarInfo(d); info.type = tarfile.DIRTYPE; info.mode = mode; tar.addfile(info)
    if 'usr/bin/awk' not in names and 'usr/bin/mawk' in names:
        info = tarfile.TarInfo('usr/bin/awk'); info.type = tarfile.SYMTYPE; info.linkname = 'mawk'; tar.addfile(info)
print(f'mkbase: {out}: {len(packages)} packages, {len(paths)} paths')
