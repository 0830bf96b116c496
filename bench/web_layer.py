"""Per-request cost of the API's web layer, in process (no sockets).

    .venv/bin/python -m bench.web_layer --output web.json
    # defaults: --requests 2000 --rounds 5 --profiles 5
    .venv/bin/python -m bench.web_layer --baseline main   # compare

Drives the complete WSGI application (``deploy.loadapp``: request id,
fault wrap, body limit, noauth, microversion, routing, context, handler)
by calling it with a WSGI environ and reading the whole body, over a
seeded SQLite database, and reports microseconds per request for:

- ``GET /``: the version document, no database (the web layer alone);
- ``GET /v2/devices/{uuid}``: one row;
- ``GET /v2/device_profiles``: ``--profiles`` rows.

``--baseline REV`` also measures the code of git revision REV (its
``cyborg_lite/`` and ``db/`` are extracted into a temporary directory):
each side runs in its own worker process, and the rounds alternate
between them, so a busy machine slows both alike. The baseline needs
whatever its code imports (pecan for revisions before handler.py).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

from bench import common

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICES = 16
HEADERS = {'X-Roles': 'admin', 'X-Project-Id': 'bench-project',
           'X-User-Id': 'bench'}
SCENARIOS = ('version_document', 'show_device', 'list_profiles')


# --- worker: one code tree, one database, one application -------------

def _setup(workdir, profiles):
    """(app, {scenario: environ}) over a fresh, seeded SQLite database."""
    from cyborg_lite.api import deploy
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration

    from bench import seed

    config.parse_args([], default_config_files=[])
    url = 'sqlite:///%s' % os.path.join(workdir, 'web.sqlite')
    CONF.set_override('state_path', workdir)
    CONF.set_override('connection', url, group='database')
    CONF.set_override('auth_strategy', 'noauth', group='api')
    common.quiet()
    migration.upgrade(url=url)
    seed.seed_ours(url, DEVICES)
    app = deploy.loadapp(CONF, conductor_factory=lambda: None)
    for index in range(profiles):
        body = json.dumps([{'name': 'bench-dp-%d' % index, 'groups': [
            {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'}]}])
        status, _ = call(app, _environ('POST', '/v2/device_profiles',
                                       body.encode()))
        assert status.startswith('201'), status
    device = seed.row(0)['device_uuid']
    return app, {
        'version_document': _environ('GET', '/'),
        'show_device': _environ('GET', '/v2/devices/' + device),
        'list_profiles': _environ('GET', '/v2/device_profiles'),
    }


def _environ(method, path, body=b''):
    import webob
    req = webob.Request.blank(path, method=method, headers=HEADERS)
    if body:
        req.content_type = 'application/json'
        req.body = body
    return req.environ


def call(app, template):
    """(status, body) of one request; the environ is copied (a handler
    may change it) and its input rewound."""
    import io
    environ = dict(template)
    body = template['wsgi.input'].getvalue() \
        if hasattr(template['wsgi.input'], 'getvalue') else b''
    environ['wsgi.input'] = io.BytesIO(body)
    seen = []

    def start_response(status, headers, exc_info=None):
        seen.append(status)
        return lambda data: None

    app_iter = app(environ, start_response)
    try:
        data = b''.join(app_iter)
    finally:
        if hasattr(app_iter, 'close'):
            app_iter.close()
    return seen[0], data


def _measure(app, template, n):
    status, _ = call(app, template)   # warm, and check it works
    if not status.startswith('200'):
        return {'error': status}
    start = time.perf_counter()
    for _ in range(n):
        call(app, template)
    elapsed = time.perf_counter() - start
    return {'us_per_request': round(elapsed / n * 1e6, 1)}


def worker(tree, profiles):
    """Answer 'scenario n' lines on stdin with one JSON line each."""
    # Only the answers go to stdout; anything the code under test prints
    # (migrations log there) goes to stderr.
    answers = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if tree:
        sys.path.insert(0, tree)
    with tempfile.TemporaryDirectory(prefix='web-layer-') as workdir:
        app, environs = _setup(workdir, profiles)
        import cyborg_lite
        print(json.dumps({'ready': os.path.dirname(cyborg_lite.__file__)}),
              file=answers, flush=True)
        for line in sys.stdin:
            scenario, n = line.split()
            print(json.dumps(_measure(app, environs[scenario], int(n))),
                  file=answers, flush=True)
    return 0


# --- driver ---------------------------------------------------------------

class Side:
    def __init__(self, name, tree, profiles):
        self.name = name
        cmd = [sys.executable, '-m', 'bench.web_layer', '--worker',
               '--profiles', str(profiles)]
        if tree:
            cmd += ['--tree', tree]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        ready = self._read()
        self.code = ready['ready']

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('the %s worker died (see its error above)'
                               % self.name)
        return json.loads(line)

    def run(self, scenario, n):
        self.proc.stdin.write('%s %d\n' % (scenario, n))
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _extract(rev, into):
    """The package and migrations (db/) of git revision ``rev``."""
    archive = subprocess.run(['git', 'archive', '--format=tar', rev,
                              'cyborg_lite', 'db'], cwd=ROOT, check=True,
                             capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(into)
    return into


def _summary(samples):
    if not samples:
        return {'error': 'no sample'}
    return {'median_us': round(statistics.median(samples), 1),
            'min_us': round(min(samples), 1), 'rounds': samples}


def drive(sides, requests, rounds):
    samples = {s.name: {name: [] for name in SCENARIOS} for s in sides}
    errors = []
    for index in range(rounds):
        # Alternate which side goes first, scenario by scenario.
        order = sides if index % 2 == 0 else list(reversed(sides))
        for scenario in SCENARIOS:
            for side in order:
                result = side.run(scenario, requests)
                if 'error' in result:
                    errors.append([side.name, scenario, result['error']])
                else:
                    samples[side.name][scenario].append(
                        result['us_per_request'])
    return samples, errors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--requests', type=int, default=2000,
                        help='requests per scenario and round')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--profiles', type=int, default=5,
                        help='rows of GET /v2/device_profiles')
    parser.add_argument('--baseline', metavar='REV',
                        help='also measure the code of this git revision')
    parser.add_argument('--output')
    parser.add_argument('--worker', action='store_true',
                        help=argparse.SUPPRESS)
    parser.add_argument('--tree', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.tree, args.profiles)

    machine = common.machine()
    with tempfile.TemporaryDirectory(prefix='web-layer-base-') as tmp:
        sides = [Side('current', None, args.profiles)]
        try:
            if args.baseline:
                sides.append(Side('baseline', _extract(args.baseline, tmp),
                                  args.profiles))
            samples, errors = drive(sides, args.requests, args.rounds)
        finally:
            for side in sides:
                side.close()
    result = {
        'bench': 'web_layer', 'machine': machine,
        'params': {'requests': args.requests, 'rounds': args.rounds,
                   'profiles': args.profiles, 'devices': DEVICES,
                   'baseline': args.baseline},
        'errors': errors,
        'sides': {s.name: {name: _summary(samples[s.name][name])
                           for name in SCENARIOS} for s in sides},
    }
    _table(result)
    common.emit(result, args.output)
    return 1 if errors else 0


def _table(result):
    sides = result['sides']
    names = list(sides)
    header = ''.join('%16s' % ('%s us' % n) for n in names)
    print('%-18s %s' % ('scenario', header), file=sys.stderr)
    for scenario in SCENARIOS:
        print('%-18s %s' % (scenario, ''.join(
            '%16s' % sides[n][scenario].get('median_us') for n in names)),
            file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main())
