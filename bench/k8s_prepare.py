"""NodePrepareResources latency, without and with programming.

    .venv/bin/python -m bench.k8s_prepare [--claims 30]
        [--program-delay 0] [--clean-delay 0] [--output F]

One process (inproc:// messaging, SQLite): the real conductor and an agent
with the fake FPGA driver serving the kubelet plugin on unix sockets, a
test client playing the kubelet, and the kube-apiserver stand-in holding
the ResourceClaims (tests/functional/kubernetes/wired_env.py). Each claim
is prepared, then unprepared, one after the other:

- ``plain``: a claim with no config (the region is held for it and the
  CDI spec written; no job);
- ``programming``: each claim asks for a bitstream the region lacks (two
  images alternate), so each prepare runs a whole programming job: check,
  queue, cast to the agent, image from the store, the fake driver's write
  (``--program-delay`` seconds of simulated hardware), progress back.

It prints p50/p99/max of Prepare and of Unprepare per kind.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

from bench import common
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.functional.kubernetes import wired_env
from tests.functional import programming_env as pe
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import resource_claims as rc

OTHER_AFU = '0b0e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f7'


def _claim(apiserver, i, device, bitstream=None):
    config = [rc.fpga_config(bitstreamID=bitstream)] if bitstream else []
    claim = rc.allocated_claim('claim-%d' % i, [('fpga', device)],
                               pool=pe.HOST, config=config)
    apiserver.put_claim(claim)
    return claim


def _cycle(env, kubelet, claim, region):
    """(Prepare seconds, Unprepare seconds); then waits, untimed, until
    the region's wipe ended."""
    uid = claim['metadata']['uid']
    start = time.perf_counter()
    prepared = kubelet.prepare('v1', [rc.ref(claim)]).claims[uid]
    middle = time.perf_counter()
    unprepared = kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid]
    end = time.perf_counter()
    if prepared.error or unprepared.error:
        raise RuntimeError(prepared.error or unprepared.error)
    deadline = time.monotonic() + 60
    while env.region(region).device_state != 'available':
        if time.monotonic() > deadline:
            raise RuntimeError('region %s was not wiped within 60 s'
                               % region)
        time.sleep(0.02)
    return middle - start, end - middle


def _summary(pairs, wall):
    return {'prepare': common.latency_summary([p for p, _ in pairs], wall),
            'unprepare': common.latency_summary([u for _, u in pairs],
                                                wall)}


def run(args, workdir, short_dir):
    from cyborg_lite.rpc import transport as rpc
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    from cyborg_lite.db import programming_jobs as jobs_db
    from cyborg_lite.db.sql import session

    common.quiet('cyborg_lite', 'oslo_messaging', 'kubernetes')
    CONF([], project='cyborg_lite', default_config_files=[])
    CONF.set_override('state_path', workdir)
    url = 'sqlite:///%s' % os.path.join(workdir, 'bench.sqlite')
    CONF.set_override('connection', url, group='database')
    migration.upgrade(url=url)
    wired_env.configure(CONF, _Path(workdir), short_dir)
    CONF.set_override('program_delay', args.program_delay,
                      group='fake_driver')
    CONF.set_override('clean_delay', args.clean_delay, group='fake_driver')
    apiserver = fake_apiserver.FakeKubeApiServer().start()
    env = wired_env.K8sEnv(CONF, apiserver).start()
    kubelet = kubelet_mod.TestKubelet(short_dir + '/reg')
    try:
        kubelet.register()
        images = [env.add_bitstream().uuid,
                  env.add_bitstream(image=pe.new_image(OTHER_AFU),
                                    function_id=pe.builders.hex32(
                                        OTHER_AFU)).uuid]
        kinds = {}
        with common.Timer() as timer:
            plain = [_cycle(env, kubelet,
                            _claim(apiserver, i, wired_env.REGION1),
                            'region1') for i in range(args.claims)]
        kinds['plain'] = _summary(plain, timer.elapsed)
        with common.Timer() as timer:
            programmed = [_cycle(env, kubelet, _claim(
                apiserver, 10000 + i, wired_env.REGION0,
                images[(i + 1) % 2]), 'region0')
                for i in range(args.claims)]
        kinds['programming'] = _summary(programmed, timer.elapsed)
        jobs = jobs_db.list_jobs()
        kinds['programming']['jobs_succeeded'] = sum(
            j.state == 'succeeded' for j in jobs)
    finally:
        kubelet.close()
        env.stop()
        apiserver.stop()
        rpc.cleanup()
        session.dispose_all()
    return {'bench': 'k8s_prepare', 'machine': common.machine(),
            'params': {'claims': args.claims,
                       'program_delay_s': args.program_delay,
                       'clean_delay_s': args.clean_delay},
            'kinds': kinds}


class _Path(str):
    """What programming_env.configure takes (a pytest tmp_path)."""

    def __truediv__(self, name):
        return os.path.join(self, name)


def _table(result):
    lines = ['%-12s %-10s %8s %8s %8s' % ('kind', 'call', 'p50 ms',
                                          'p99 ms', 'max ms')]
    for kind, calls in result['kinds'].items():
        for call in ('prepare', 'unprepare'):
            r = calls[call]
            lines.append('%-12s %-10s %8s %8s %8s' % (
                kind, call, r['p50_ms'], r['p99_ms'], r['max_ms']))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--claims', type=int, default=30)
    parser.add_argument('--program-delay', type=float, default=0.0)
    parser.add_argument('--clean-delay', type=float, default=0.0)
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='bench-k8s-')
    short_dir = tempfile.mkdtemp(prefix='dra', dir='/tmp')
    try:
        result = run(args, workdir, short_dir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(short_dir, ignore_errors=True)
    print(_table(result), file=sys.stderr)
    common.emit(result, args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
