"""The servers bench/api.py measures, and its HTTP client: the Cyborg 17
venv, cyborg_lite (bench/ours_server.py, on this tree or a --baseline
checkout), Cyborg (bench/cyborg_server.py), their Placements, the
process that scrapes /metrics, and the keep-alive client every
scenario sends through. bench/api.py's docstring says how a run uses
them."""
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from bench import common
from bench import seed
from cyborg_lite.cmd import placement_server
from cyborg_lite.cmd import processes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, 'ours_server.py')
CYBORG_VENV = os.path.join(HERE, '.cyborg-venv')
CYBORG_REQUIREMENT = 'openstack-cyborg==17.0.0'
HEADERS = {'X-Roles': 'admin,member',
           'X-Project-Id': '9b1deb4d3b7d4bad9bdd2b0d7b3dcb6d',
           'X-User-Id': '1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed',
           'Content-Type': 'application/json',
           'Accept': 'application/json',
           'OpenStack-API-Version': 'accelerator 2.3',
           # Cyborg binds only for a service (Nova); auth_token would set
           # this from the service token, noauth takes it as sent.
           'X-Service-Roles': 'service'}


# -- the Cyborg venv --------------------------------------------------------

def ensure_cyborg_venv(venv=CYBORG_VENV):
    """The python of a venv holding openstack-cyborg 17, cheroot and
    waitress."""
    python = os.path.join(venv, 'bin', 'python')
    marker = os.path.join(venv, '.bench-ready')
    if os.path.exists(marker):
        return python
    common.log('creating %s with %s (once; a few minutes)'
               % (venv, CYBORG_REQUIREMENT))
    if not os.path.exists(python):
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip',
                        venv], check=True)
        subprocess.run([python, '-m', 'ensurepip', '--upgrade'],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run([python, '-m', 'pip', 'install', '-q',
                    CYBORG_REQUIREMENT, 'cheroot', 'waitress'], check=True)
    with open(marker, 'w') as f:
        f.write(CYBORG_REQUIREMENT + '\n')
    return python


# -- servers ----------------------------------------------------------------

class Server:
    """A bench server subprocess; ``url`` once ready."""

    def __init__(self, name, argv, port, workdir, env=None, cwd=ROOT):
        self.name = name
        self.port = port
        self.url = 'http://127.0.0.1:%d' % port
        self.log_path = os.path.join(workdir, '%s.log' % name)
        self._log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout=300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('%s exited (%s); log:\n%s' % (
                    self.name, self.proc.returncode, self.tail()))
            try:
                status, _ = request(self.url, 'GET', '/v2')
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError('%s not ready; log:\n%s'
                           % (self.name, self.tail()))

    def tail(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()[-3000:]

    def stop(self):
        processes.stop(self.proc, 15)
        self._log.close()


def start_ours(workdir, devices, nova_url, http_server='cheroot',
               root=ROOT, name='ours', placement_url=None,
               publish_cards=0, extra=(), seeded=False):
    """bench/ours_server.py on the code of the checkout ``root``, over a
    new SQLite database that code migrated and seeded (its ``--child``);
    with ``placement_url``, publishing there, the hosts of the first
    ``publish_cards`` cards published before it is ready; ``extra``: more
    of its arguments. ``seeded``: the database is there already
    (``copy_db``)."""
    if not seeded:
        seed_db(workdir, devices, name, root,
                publish_cards if placement_url else 0)
    db = 'sqlite:///%s' % _db_path(workdir, name)
    port = placement_server.free_port()
    argv = [sys.executable, SCRIPT,
            '--db', db, '--port', str(port), '--nova-url', nova_url,
            '--server', http_server]
    if placement_url:
        argv += ['--placement-url', placement_url]
    argv += list(extra)
    return Server(name, argv, port, workdir, env=common.tree_env(root),
                  cwd=root)


def _db_path(workdir, name):
    return os.path.join(workdir, '%s.sqlite' % name)


def seed_db(workdir, devices, name, root=ROOT, publish_cards=0):
    """Side ``name``'s database, migrated and seeded by the code of
    ``root`` (ours_server.py --child)."""
    common.run_in_tree(root, SCRIPT, [
        '--db', 'sqlite:///%s' % _db_path(workdir, name),
        '--devices', str(devices), '--publish-cards', str(publish_cards)])


def copy_db(workdir, source, name):
    """Side ``name`` gets a byte copy of side ``source``'s database, which
    no process has open: the same rows as a seeding of its own, for the
    price of a file copy rather than a child's imports and migrations."""
    shutil.copyfile(_db_path(workdir, source), _db_path(workdir, name))


def start_placement(workdir, name):
    server = placement_server.PlacementServer(
        basedir=os.path.join(workdir, name),
        policy=placement_server.ADMIN_RESHAPES)
    os.makedirs(server.basedir, exist_ok=True)
    return server.start()


def check_published(placement_url, cards):
    """Refuse to measure unless Placement offers the region of each of
    the first ``cards`` cards (the publish before the run worked)."""
    for i in range(cards):
        if not placement_offers(placement_url, seed.row(i)['rp_uuid']):
            raise RuntimeError('%s does not offer the region of card %d'
                               % (placement_url, i))


def placement_offers(placement_url, rp_uuid):
    """Whether Placement offers any of the provider's inventory (its
    total above its reserved; the bench allocates nothing)."""
    status, body = request(placement_url, 'GET',
                           '/resource_providers/%s/inventories' % rp_uuid,
                           headers=common.PLACEMENT_HEADERS)
    _expect(status, body, (200,), 'GET inventories of %s' % rp_uuid)
    return any(inv['total'] > inv['reserved']
               for inv in body['inventories'].values())


def tree_commit(root):
    try:
        return subprocess.run(['git', '-C', root, 'rev-parse', 'HEAD'],
                              check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


CYBORG_LOGGERS = ('cyborg', 'oslo_messaging', 'keystoneauth', 'urllib3',
                  'stevedore', 'oslo_policy', 'openstack',
                  'oslo.privsep.daemon')
CYBORG_CONF = """[DEFAULT]
transport_url = fake://
host = bench-cyborg
log_file = {workdir}/cyborg-service.log
default_log_levels = {log_levels}
[database]
connection = sqlite:///{workdir}/cyborg.sqlite
[api]
api_paste_config = {paste}
[nova]
auth_type = none
endpoint_override = {nova}
[placement]
auth_type = admin_token
token = admin
endpoint_override = {placement}
"""


def start_cyborg(workdir, devices, nova_url, placement_url, python,
                 transport='inproc', http_server='cheroot'):
    from bench import cyborg_server
    conf = os.path.join(workdir, 'cyborg.conf')
    with open(conf, 'w') as f:
        f.write(CYBORG_CONF.format(
            log_levels=','.join('%s=WARNING' % n for n in CYBORG_LOGGERS),
            workdir=workdir, nova=nova_url, placement=placement_url,
            paste=cyborg_server.write_paste(workdir)))
    # NOTE: `cyborg-dbsync upgrade` fails on SQLite (a migration runs
    # ALTER TABLE ... ALTER COLUMN ... SET NOT NULL); create_schema is
    # Cyborg's own command for a fresh database (metadata.create_all +
    # stamp head), the schema its unit tests use.
    dbsync = os.path.join(os.path.dirname(python), 'cyborg-dbsync')
    subprocess.run([dbsync, '--config-file', conf, 'create_schema'],
                   check=True, capture_output=True)
    seed.seed_cyborg(os.path.join(workdir, 'cyborg.sqlite'), devices)
    port = placement_server.free_port()
    argv = [python, os.path.join(HERE, 'cyborg_server.py'),
            '--config-file', conf, '--port', str(port),
            '--server', http_server]
    if transport == 'inproc':
        # NOTE: the file says fake:// for cyborg-dbsync, which loads the
        # transport too; the server alone is told to use inproc://.
        argv += ['--inproc-dir', os.path.join(workdir, 'inproc-driver')]
    return Server('cyborg', argv, port, workdir)


def start_observed(workdir, args, nova_url):
    """Two cyborg_lite servers on the same data: "off" (no metrics, no
    notifications) and "on" (metrics, notifications through
    oslo.messaging's messagingv2 driver)."""
    on = ['--notifications', 'messagingv2']
    if args.notifications_url:
        on += ['--notifications-url', args.notifications_url]
    # One tree, one seed: "on" starts on a copy of "off"'s database.
    seed_db(workdir, args.devices, 'off')
    copy_db(workdir, 'off', 'on')
    return {'off': start_ours(workdir, args.devices, nova_url, args.server,
                              name='off', extra=['--no-metrics'],
                              seeded=True),
            'on': start_ours(workdir, args.devices, nova_url, args.server,
                             name='on', extra=on, seeded=True)}


# -- the client -------------------------------------------------------------

_local = threading.local()


def request(base, method, path, body=None, headers=HEADERS):
    """One request on this thread's keep-alive connection: (status, json)."""
    conns = getattr(_local, 'conns', None)
    if conns is None:
        conns = _local.conns = {}
    host = base.split('//', 1)[1]
    for attempt in (1, 2):
        conn = conns.get(host)
        if conn is None:
            conn = conns[host] = http.client.HTTPConnection(host, timeout=120)
        try:
            conn.request(method, path,
                         body=None if body is None else json.dumps(body),
                         headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            break
        except (http.client.HTTPException, ConnectionError):
            conn.close()
            conns.pop(host, None)
            if attempt == 2:
                raise
    return resp.status, (json.loads(data) if data else None)


def _expect(status, body, wanted, what):
    if status not in wanted:
        raise RuntimeError('%s: HTTP %s %s'
                           % (what, status, json.dumps(body)[:500]))
