"""Cost of signature verification for a large image, against the upload
and the programming it guards.

    .venv/bin/python -m bench.signatures [--size-mb 100] [--runs 3]
        [--algorithm ed25519|ecdsa-p256] [--output F]

One process, as the all-in-one runs (inproc:// messaging, SQLite): the
API's whole WSGI stack on cheroot on a loopback port, the conductor, and
an agent with the fake FPGA driver (``program_delay`` 0: the simulated
write costs nothing, so the ratio is against the software's own work,
the least favourable denominator; real hardware adds seconds). Per run,
with ``[bitstreams] signature_policy = enforce``:

- **upload**: ``POST /v2/bitstreams`` then ``PUT .../file`` of a
  ``--size-mb`` image over HTTP (streamed to the store and hashed: done
  with or without signatures);
- **signature at upload**: ``PUT .../signature``, timed whole (HTTP, form
  check, the verification, the row written), and the verification alone
  (``bitstreams/signatures.verify``, timed where the API calls it);
- **program**: ``POST /v2/programs`` until the job ``succeeded``; the
  agent's check (``agent/programming.check_signature``, over the digest of
  the bytes it fetched) is timed where the agent calls it.

Verification results are cached per process (they never change); here
every verification is timed uncached, key loading included, as a process
meeting the signature for the first time does (the conductor and the
agent are other processes in a real deployment). The conductor verifies
too (its check before the job); that is reported apart. For scale it
also times what one more pass of SHA-256 over the image costs: what a
check that read the image again, instead of trusting the digest already
computed while streaming, would add at each point. And the same job
under ``disabled`` (no check at all), for the A/B of the whole job.
"""
import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

import requests

from bench import common


class _Timed:
    """Wraps a module function, adding each call's seconds to a list,
    with the calling thread's name (an agent's job runs in ``job-*``).
    ``uncached``: call the function under its lru_cache, with the key
    cache emptied too, as a process meeting the signature first does."""

    def __init__(self, module, name, uncached=False):
        self.real = getattr(module, name)
        self.call = self.real.__wrapped__ if uncached else self.real
        self.uncached = uncached
        self.seconds = []
        setattr(module, name, self)

    def __call__(self, *args, **kwargs):
        if self.uncached:
            from cyborg_lite.bitstreams import signatures
            signatures._public_key.cache_clear()
        start = time.perf_counter()
        try:
            return self.call(*args, **kwargs)
        finally:
            self.seconds.append((threading.current_thread().name,
                                 time.perf_counter() - start))

    def __getattr__(self, attr):
        return getattr(self.real, attr)

    def take(self, agent=None):
        """Seconds since the last take: all, or only the agent's job
        threads' (``agent`` True) or only the others' (False)."""
        taken, self.seconds = self.seconds, []
        return sum(s for name, s in taken if agent is None or
                   name.startswith('job-') == agent)


class _Path(str):
    """What programming_env.configure takes (a pytest tmp_path)."""

    def __truediv__(self, name):
        return os.path.join(self, name)


def _image(size_mb):
    from tests.functional import programming_env as pe
    from tests.unit.bitstreams import builders
    payload = os.urandom(1024 * 1024) * size_mb
    return builders.build_gbs(builders.gbs_metadata(
        interface_uuid=builders.INTERFACE_UUID, afu_uuid=pe.NEW_AFU),
        payload=payload)


class _Api:
    def __init__(self, url, version):
        self.url = url + '/v2'
        self.session = requests.Session()
        self.headers = {'OpenStack-API-Version': 'accelerator ' + version}

    def call(self, method, path, expect, **kwargs):
        headers = dict(self.headers, **kwargs.pop('headers', {}))
        resp = self.session.request(method, self.url + path,
                                    headers=headers, timeout=600, **kwargs)
        if resp.status_code != expect:
            raise RuntimeError('%s %s -> %s %s' % (
                method, path, resp.status_code, resp.text[:500]))
        return resp.json() if resp.content else None


def _upload(api, image, name):
    made = api.call('POST', '/bitstreams', 201, json={
        'name': name, 'format': 'gbs', 'visibility': 'public'})
    with common.Timer() as timer:
        api.call('PUT', '/bitstreams/%s/file' % made['uuid'], 204,
                 data=image,
                 headers={'Content-Type': 'application/octet-stream'})
    return made['uuid'], timer.elapsed


def _program(api, env, bitstream_uuid):
    with common.Timer() as timer:
        job = api.call('POST', '/programs', 202, json={
            'deployable_uuid': env.region().uuid,
            'bitstream_uuid': bitstream_uuid})
        while job['state'] not in ('succeeded', 'failed', 'cancelled'):
            time.sleep(0.005)
            job = api.call('GET', '/programs/' + job['uuid'], 200)
    if job['state'] != 'succeeded':
        raise RuntimeError('job %s: %s' % (job['state'], job['error']))
    # Untimed: the agent's report of the region after the job (and the
    # conductor's publish of it) ends before the next job, which would
    # otherwise share the CPU with it.
    deadline = time.monotonic() + 60
    while not env.agent.jobs.idle() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.2)
    return timer.elapsed


def _one_run(api, env, conf, image, key, timers, i):
    from tests import signing_keys
    conf.set_override('signature_policy', 'enforce', group='bitstreams')
    uuid, upload_s = _upload(api, image, 'big-%d' % i)
    signature = signing_keys.sign(key, image)
    timers['verify'].take()
    with common.Timer() as put:
        shown = api.call('PUT', '/bitstreams/%s/signature' % uuid, 200,
                         json={'signature': signature})
    assert shown['signature_status'] == 'verified', shown
    at_upload = timers['verify'].take()

    def checked():
        conf.set_override('signature_policy', 'enforce',
                          group='bitstreams')
        timers['verify'].take()
        timers['agent'].take()
        seconds = _program(api, env, uuid)
        return seconds, timers['verify'].take(agent=False), \
            timers['agent'].take()

    def unchecked():
        # The same job without any check, on the same image (A/B).
        conf.set_override('signature_policy', 'disabled',
                          group='bitstreams')
        return _program(api, env, uuid)
    # Alternate which goes first: the first job of a run meets colder
    # caches.
    if i % 2:
        unchecked_s = unchecked()
        program_s, at_conductor, at_agent = checked()
    else:
        program_s, at_conductor, at_agent = checked()
        unchecked_s = unchecked()
    with common.Timer() as rehash:
        hashlib.sha256(image).hexdigest()
    return {'upload_s': upload_s, 'program_s': program_s,
            'signature_put_s': put.elapsed, 'verify_at_upload_s': at_upload,
            'verify_at_conductor_s': at_conductor,
            'check_at_agent_s': at_agent,
            'program_unchecked_s': unchecked_s,
            'sha256_pass_s': rehash.elapsed}


def run(args, workdir):
    from cyborg_lite.agent import programming as agent_programming
    from cyborg_lite.api import deploy
    from cyborg_lite.api import server as api_server
    from cyborg_lite.rpc import transport as rpc
    from cyborg_lite.bitstreams import signatures
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    from cyborg_lite.db.sql import session
    from tests import signing_keys
    from tests.functional import programming_env as pe

    common.quiet('cyborg_lite', 'oslo_messaging')
    CONF([], project='cyborg_lite', default_config_files=[])
    CONF.set_override('state_path', workdir)
    url = 'sqlite:///%s' % os.path.join(workdir, 'bench.sqlite')
    CONF.set_override('connection', url, group='database')
    migration.upgrade(url=url)
    pe.configure(CONF, _Path(workdir), program_delay=0.0)
    CONF.set_override('auth_strategy', 'noauth', group='api')
    CONF.set_override('max_size_mb', args.size_mb + 16, group='bitstreams')
    key = signing_keys.new_key('ecdsa' if args.algorithm == 'ecdsa-p256'
                               else 'ed25519')
    timers = {'verify': _Timed(signatures, 'verify', uncached=True),
              'agent': _Timed(agent_programming, 'check_signature')}
    env = pe.Env(CONF).start()
    server = api_server.Server(deploy.loadapp(CONF), '127.0.0.1', 0).start()
    try:
        env.trust(key)
        api = _Api('http://127.0.0.1:%d' % server.port,
                   signatures.MICROVERSION)
        image = _image(args.size_mb)
        runs = [_one_run(api, env, CONF, image, key, timers, i)
                for i in range(args.runs)]
    finally:
        server.stop()
        env.stop()
        rpc.cleanup()
        session.dispose_all()
    return _result(args, runs, len(image))


def _median(runs, field):
    return statistics.median(r[field] for r in runs)


def _pct(part, whole):
    return round(100.0 * part / whole, 4) if whole else None


def _result(args, runs, image_bytes):
    medians = {field: round(_median(runs, field), 6) for field in runs[0]}
    whole = medians['upload_s'] + medians['program_s']
    return {
        'bench': 'signatures', 'machine': common.machine(),
        'params': {'size_mb': args.size_mb, 'image_bytes': image_bytes,
                   'runs': args.runs, 'algorithm': args.algorithm},
        'runs': runs, 'median': medians,
        'upload_plus_program_s': round(whole, 4),
        'pct_of_upload_plus_program': {
            'verify_at_upload': _pct(medians['verify_at_upload_s'], whole),
            'signature_put_whole': _pct(medians['signature_put_s'], whole),
            'verify_at_conductor': _pct(medians['verify_at_conductor_s'],
                                        whole),
            'check_at_agent': _pct(medians['check_at_agent_s'], whole),
            'both_checks': _pct(medians['verify_at_upload_s'] +
                                medians['check_at_agent_s'], whole),
            'every_check': _pct(medians['verify_at_upload_s'] +
                                medians['verify_at_conductor_s'] +
                                medians['check_at_agent_s'], whole),
            'both_checks_if_each_rehashed': _pct(
                medians['verify_at_upload_s'] + medians['check_at_agent_s']
                + 2 * medians['sha256_pass_s'], whole),
        },
        'limit_pct': 5.0,
    }


def _table(result):
    m, pct = result['median'], result['pct_of_upload_plus_program']
    rows = [
        ('upload (PUT file, %d MB)' % result['params']['size_mb'],
         m['upload_s'], None),
        ('program (job, enforce)', m['program_s'], None),
        ('program (job, disabled)', m['program_unchecked_s'], None),
        ('verification at upload', m['verify_at_upload_s'],
         pct['verify_at_upload']),
        ('PUT signature, whole request', m['signature_put_s'],
         pct['signature_put_whole']),
        ('verifications by the conductor', m['verify_at_conductor_s'],
         pct['verify_at_conductor']),
        ('check on the agent', m['check_at_agent_s'],
         pct['check_at_agent']),
        ('one more SHA-256 pass (for scale)', m['sha256_pass_s'], None),
    ]
    lines = ['%-36s %12s %10s' % ('median of %d runs' % len(result['runs']),
                                  'ms', '% of u+p')]
    for name, seconds, share in rows:
        lines.append('%-36s %12.3f %10s' % (name, seconds * 1000,
                                            '' if share is None else share))
    lines.append('upload + agent checks: %s%% of upload + program (limit '
                 '%s%%); with the conductor\'s: %s%%; if each check read '
                 'the image again: %s%%' % (
                     pct['both_checks'], result['limit_pct'],
                     pct['every_check'],
                     pct['both_checks_if_each_rehashed']))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size-mb', type=int, default=100)
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--algorithm', choices=('ed25519', 'ecdsa-p256'),
                        default='ed25519')
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    if args.size_mb < 1 or args.runs < 1:
        parser.error('--size-mb and --runs must be at least 1')
    workdir = tempfile.mkdtemp(prefix='bench-signatures-')
    try:
        result = run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    common.log(_table(result))
    common.emit(result, args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
