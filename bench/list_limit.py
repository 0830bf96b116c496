"""GET of a long list against the limit: stdlib sqlite3 + json, in process.

    .venv/bin/python -m bench.list_limit [--devices 10000] [--requests 20]
        [--output limit.json]

One SQLite file holds ``--devices`` cards (bench/seed.py: a device, a
deployable with two attributes and an attach handle each) and as many
ARQs (half Bound). cyborg_lite serves it (bench/ours_server.py: cheroot,
8 threads, ``[api] max_limit = 10000``), and one client reads each list
in one page over a keep-alive connection: the time from sending the
request to the last byte of the body (not parsing it).

The limit: the same process reads the same rows from the same file with
the stdlib ``sqlite3`` module (one connection, kept open, as the service
keeps its pool) and encodes the same body with the stdlib ``json``
module: one query selecting the body's columns in the list's order, the
timestamps and hrefs formatted in that SQL, a dict per row,
``json.dumps``. Before timing, both bodies are parsed and must be equal.
The two are timed alternately, request by request (which goes first
alternates too), so a busy machine slows both; the figure is the ratio of
the medians, ours / limit (≤ 1.0: no slower than the limit).
"""
import argparse
import functools
import http.client
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

from bench import api_servers
from bench import common
from bench import fake_nova
from bench import seed

TIME = "REPLACE(SUBSTR({0}, 1, 19), ' ', 'T') || '+00:00'"


def _time(column):
    return TIME.format(column)


class Limit:
    """The stdlib read-and-encode of each list (see the module docstring)."""

    def __init__(self, path, base_url):
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.base = base_url

    def devices(self):
        rows = self.db.execute(
            'SELECT uuid, type, vendor, model, std_board_info, '
            'vendor_board_info, hostname, ? || uuid, status, %s, %s '
            'FROM devices ORDER BY created_at, id'
            % (_time('created_at'), _time('updated_at')),
            (self.base + '/v2/devices/',))
        return json.dumps({'devices': [{
            'uuid': r[0], 'type': r[1], 'vendor': r[2], 'model': r[3],
            'std_board_info': r[4], 'vendor_board_info': r[5],
            'hostname': r[6], 'links': [{'href': r[7], 'rel': 'self'}],
            'status': r[8], 'created_at': r[9], 'updated_at': r[10]}
            for r in rows]}).encode()

    def deployables(self):
        attrs = {}
        for dep_id, key, value in self.db.execute(
                'SELECT deployable_id, key, value FROM attributes '
                'ORDER BY key'):
            attrs.setdefault(dep_id, []).append((key, value))
        rows = self.db.execute(
            'SELECT uuid, name, parent_id, root_id, device_id, '
            'num_accelerators, id, rp_uuid, driver_name, bitstream_id, '
            'region_type, function_id, function_name, local_memory_mb, '
            '? || uuid, %s, %s FROM deployables ORDER BY created_at, id'
            % (_time('created_at'), _time('updated_at')),
            (self.base + '/v2/deployables/',))
        return json.dumps({'deployables': [{
            'uuid': r[0], 'name': r[1], 'parent_id': r[2], 'root_id': r[3],
            'device_id': r[4], 'num_accelerators': r[5],
            'attributes_list': _attributes_list(tuple(attrs.get(r[6], ()))),
            'rp_uuid': r[7], 'driver_name': r[8], 'bitstream_id': r[9],
            'region_type': r[10], 'function_id': r[11],
            'function_name': r[12], 'local_memory_mb': r[13],
            'links': [{'href': r[14], 'rel': 'self'}],
            'created_at': r[15], 'updated_at': r[16]}
            for r in rows]}).encode()

    def arqs(self):
        rows = self.db.execute(
            'SELECT a.uuid, a.state, p.name, a.device_profile_group_id, '
            'a.hostname, a.device_rp_uuid, a.instance_uuid, h.attach_type, '
            'h.uuid, h.attach_info, a.error, ? || a.uuid, a.project_id, '
            '%s, %s '
            'FROM accelerator_requests a JOIN device_profiles p '
            'ON p.id = a.device_profile_id LEFT JOIN attach_handles h '
            'ON h.id = a.attach_handle_id ORDER BY a.created_at, a.id'
            % (_time('a.created_at'), _time('a.updated_at')),
            (self.base + '/v2/accelerator_requests/',))
        return json.dumps({'arqs': [{
            'uuid': r[0], 'state': r[1], 'device_profile_name': r[2],
            'device_profile_group_id': r[3], 'hostname': r[4],
            'device_rp_uuid': r[5], 'instance_uuid': r[6],
            'attach_handle_type': r[7] or '', 'attach_handle_uuid': r[8],
            'attach_handle_info': json.loads(r[9]) if r[9] else {},
            'error': r[10], 'links': [{'href': r[11], 'rel': 'self'}],
            'project_id': r[12], 'created_at': r[13], 'updated_at': r[14]}
            for r in rows]}).encode()


@functools.lru_cache(maxsize=1024)
def _attributes_list(pairs):
    # The same cache as the API's: the limit gets every trick ours has.
    return json.dumps([{k: v} for k, v in pairs])


RESOURCES = {'devices': '/v2/devices', 'deployables': '/v2/deployables',
             'arqs': '/v2/accelerator_requests'}


class Client:
    """One keep-alive connection; ``get`` returns the body's bytes."""

    def __init__(self, url):
        self.conn = http.client.HTTPConnection(url.split('//', 1)[1],
                                               timeout=120)

    def get(self, path):
        self.conn.request('GET', path, headers=api_servers.HEADERS)
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError('GET %s: HTTP %s %s' % (path, resp.status,
                                                       body[:300]))
        return body


def _timed(func, *args):
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def measure(client, limit, requests, count):
    report = {}
    for name, path in RESOURCES.items():
        reference = getattr(limit, name)
        ours_body, limit_body = client.get(path), reference()
        ours_doc, limit_doc = json.loads(ours_body), json.loads(limit_body)
        key = name
        # NOTE: a full page also links to the next one; the lists must match.
        if len(ours_doc[key]) != count or ours_doc[key] != limit_doc[key]:
            raise RuntimeError('%s: the two bodies differ (%d rows here, '
                               '%d in the limit)' % (
                                   name, len(ours_doc[key]),
                                   len(limit_doc[key])))
        ours, lim = [], []
        for i in range(requests):
            pair = [(ours, client.get, (path,)), (lim, reference, ())]
            for into, func, args in (pair if i % 2 == 0 else pair[::-1]):
                into.append(_timed(func, *args))
        report[name] = {
            'bytes': len(ours_body), 'rows': count,
            'ours_ms': _stats(ours), 'limit_ms': _stats(lim),
            'ratio_of_medians': round(statistics.median(ours)
                                      / statistics.median(lim), 3)}
        common.log('%-12s ours %7.1f ms  limit %7.1f ms  ratio %.3f' % (
            name, report[name]['ours_ms']['median'],
            report[name]['limit_ms']['median'],
            report[name]['ratio_of_medians']))
    return report


def _stats(seconds):
    return {'median': round(statistics.median(seconds) * 1000, 2),
            'min': round(min(seconds) * 1000, 2),
            'max': round(max(seconds) * 1000, 2)}


def prepare(workdir, devices):
    """The seeded SQLite file (path, url) of the module docstring."""
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    from cyborg_lite.db.sql import session
    path = os.path.join(workdir, 'ours.sqlite')
    url = 'sqlite:///' + path
    config.parse_args([], default_config_files=[])
    common.quiet()
    CONF.set_override('connection', url, group='database')
    migration.upgrade()
    seed.seed_ours(url, devices)
    seed.seed_ours_arqs(url, devices, api_servers.HEADERS['X-Project-Id'])
    session.dispose_all()
    return path, url


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--devices', type=int, default=10000)
    parser.add_argument('--requests', type=int, default=20,
                        help='timed requests per list and side')
    parser.add_argument('--output')
    args = parser.parse_args(argv)

    workdir = tempfile.mkdtemp(prefix='bench-limit-')
    nova = fake_nova.FakeNova().start()
    server = None
    try:
        path, url = prepare(workdir, args.devices)
        from cyborg_lite.cmd import placement_server
        port = placement_server.free_port()
        server = api_servers.Server('ours', [
            sys.executable, '-m', 'bench.ours_server', '--db', url,
            '--port', str(port), '--nova-url', nova.url], port, workdir)
        server.wait_ready()
        report = measure(Client(server.url), Limit(path, server.url),
                         args.requests, args.devices)
        common.emit({'bench': 'list_limit', 'machine': common.machine(),
                     'params': {'devices': args.devices,
                                'requests': args.requests},
                     'lists': report}, args.output)
    finally:
        if server is not None:
            server.stop()
        nova.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
