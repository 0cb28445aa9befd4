# Escape probes for the Sandbox tests: each tries one thing a sandboxed command must not do and
# records "ok" or the errno name. The tests run it inside a Sandbox and, as the positive
# control, outside, so a probe cannot pass where the action was impossible anyway.
#   python3 sandbox-probe.py SPEC_JSON OUT_JSON
import errno, json, os, re, socket, subprocess, sys, uuid

spec = json.loads(sys.argv[1])
out = {}

def probe(name, fn):
    try:
        fn()
        out[name] = 'ok'
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))

def create_and_remove(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    os.unlink(path)

tag = uuid.uuid4().hex
probe('write_home', lambda: create_and_remove(os.path.join(spec['home'], '.layerfs-probe-' + tag)))
probe('write_etc', lambda: create_and_remove('/etc/layerfs-probe-' + tag))
# O_APPEND without writing: proves write access without changing the Store.
probe('write_store', lambda: os.close(os.open(spec['store'], os.O_WRONLY | os.O_APPEND)))
probe('read_store', lambda: open(spec['store'], 'rb').read(16))
probe('read_other_workspace', lambda: os.listdir(spec['otherWorkspace']))

def connect_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    finally:
        s.close()
probe('daemon_socket', lambda: connect_unix(spec['socket']))
probe('signal_host_process', lambda: os.kill(spec['hostPid'], 0))
probe('see_host_process', lambda: os.stat('/proc/%d' % spec['hostPid']))

def connect_tcp(host, port):
    s = socket.create_connection((host, port), timeout=3)
    s.close()
probe('tcp_loopback', lambda: connect_tcp('127.0.0.1', spec['tcpPort']))
if spec.get('tcpExternal'):
    probe('tcp_external', lambda: connect_tcp(spec['tcpExternal'], spec['tcpPort']))

def setuid_gain():
    # chmod of another user's file needs CAP_FOWNER, which only the setuid bit could grant.
    code = 'import os,sys\nos.chmod(sys.argv[1], 0o600)'
    r = subprocess.run(spec['suidPrefix'] + [spec['suid'], '-c', code, spec['chownTarget']], capture_output=True, text=True)
    if r.returncode != 0:
        err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'exit %d' % r.returncode
        m = re.search(r'\[Errno (\d+)\]', err)
        raise OSError(int(m.group(1)) if m else errno.EIO, err)
probe('setuid_chmod', setuid_gain)
probe('read_shadow', lambda: open('/etc/shadow', 'rb').read(1))

with open(sys.argv[2], 'w') as f:
    json.dump(out, f)
