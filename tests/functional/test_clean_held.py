"""A region released while its function is still with vfio-pci (issue 46)
waits for it, on the real conductor, Placement, Kubernetes sink and API,
the agent's real scans over the simulated host
(tests/functional/host_env.py).

libvirt with managed='no', or a guest that crashed, leaves the VF (or the
whole GPU) bound to vfio-pci when Nova deletes or unbinds the ARQ: the
host driver does not see the region, so nothing can wipe it, and another
holder may still have its function. The region stays pending_cleaning,
not offered in Placement nor the slices, nothing touched, its history
saying why, across scans, the conductor's periodic task, a conductor
restart and an agent restart; once the function is back with its host
driver the agent's next scan starts its clean, and it is offered again.
Before, the clean ran at once, failed, and left the region in error for
an operator to clean again.
"""
import os

import pytest
import webtest

from cyborg_lite.api import deploy
from cyborg_lite.api import policy
from cyborg_lite.conductor import report
from cyborg_lite.conductor import service as conductor_service
from tests import waiting
from tests.functional import host_env as he
from tests.functional.host_env import make_host_env  # noqa: F401

ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'admin-project',
         'X-User-Id': 'admin', 'OpenStack-API-Version': 'accelerator 2.9'}
SCANS = 6
TENANT_DATA = 'tenant data'
# What a clean of the region ends in, as its device's history shows it.
CLEAN_ENDS = ('deployable.clean.wait', 'deployable.clean.error',
              'deployable.clean.end')


@pytest.fixture
def api(conf):
    """make(env) -> the API (WSGI, no auth) over env's conductor."""
    conf.set_override('auth_strategy', 'noauth', group='api')
    policy.reset()
    yield lambda env: webtest.TestApp(deploy.loadapp(conf))
    policy.reset()


class Held:
    """The region ``name`` of ``identity`` bound, its function then handed
    to vfio-pci; what the test looks at."""

    def __init__(self, env, app, name, identity):
        self.env, self.app = env, app
        self.name, self.identity = name, identity
        self.row = env.deployable(name, identity)
        self.others = {d.rp_uuid for d in env.regions()
                       if d.uuid != self.row.uuid}
        assert env.candidates() == self.others | {self.row.rp_uuid}
        self.arq = env.bind(name, identity)
        if env.kind == 'fpga':
            os.makedirs(os.path.dirname(self.memory_file()), exist_ok=True)
            with open(self.memory_file(), 'w') as f:
                f.write(TENANT_DATA)
        self.address = env.attach(self.arq)
        # The region's history once it waits.
        self.waited = None

    def memory_file(self):
        """The simulated local memory of the FPGA region (its port N is
        region N's of the one card), there while the port is not."""
        return os.path.join(self.env.conf.fake_driver.state_dir,
                            'local_memory', 'dfl-port.%s' % self.name[-1])

    def memory(self):
        with open(self.memory_file()) as f:
            return f.read()

    def shown(self):
        return self.app.get('/v2/deployables/%s' % self.row.uuid,
                            headers=ADMIN).json

    def history(self):
        """(event, state, reason) of the region's rows in its device's
        history, as the API shows it."""
        rows = self.app.get('/v2/devices/%s/history' % self.env.device(
            self.identity).uuid, headers=ADMIN).json['history']
        return [(r['event'], r['state'], r['reason']) for r in rows
                if r['deployable_uuid'] == self.row.uuid]

    def slice_name(self):
        """The region's device name in the ResourceSlices (its PCI
        address, and for an FPGA its region's name)."""
        card = (self.identity or he.CARD).replace(':', '-').replace('.', '-')
        [name] = [n for n in self.env.slice_taints()
                  if card in n and n.endswith(self.name)]
        return name

    def waits(self):
        """The region waits for its function: pending_cleaning, hidden from
        both schedulers, shown with why, never touched."""
        env = self.env
        region = env.deployable(self.name, self.identity)
        assert region.uuid == self.row.uuid
        assert region.device_state == 'pending_cleaning'
        assert env.candidates() == self.others
        taints = env.slice_taints()
        assert taints.pop(self.slice_name()) != []
        assert all(t == [] for t in taints.values()), taints
        shown = self.shown()
        assert shown['device_state'] == 'pending_cleaning'
        assert 'vfio-pci' in shown['cleaning_error']
        assert 'unreported_since' in shown['attributes_list']
        history = self.history()
        if self.waited is None:
            self.waited = history
            assert [e for e, _s, _r in history if e in CLEAN_ENDS][-1] == \
                'deployable.clean.wait', history
            assert 'deployable.clean.error' not in [e for e, _s, _r in
                                                    history]
            assert 'accelerator.deployable.clean.wait' in env.notified()
        # No try begun since, nothing written: it just waits.
        assert history == self.waited
        assert 'accelerator.deployable.clean.error' not in env.notified()
        if env.kind == 'fpga':
            assert self.memory() == TENANT_DATA
        else:
            assert env.host.reset_log() == []


def _release(held, unbind):
    """Nova deletes the instance (or unbinds its ARQ) while libvirt leaves
    the function with vfio-pci; the API answers once the region is out of
    the schedulers' views."""
    if unbind:
        held.app.patch_json('/v2/accelerator_requests', {held.arq.uuid: [
            {'op': 'remove', 'path': p} for p in
            ('/hostname', '/device_rp_uuid', '/instance_uuid')]},
            headers=ADMIN, status=202)
    else:
        held.app.delete('/v2/accelerator_requests?instance=%s'
                        % held.arq.instance_uuid, headers=ADMIN, status=204)
    held.env.placement.delete('/allocations/%s' % held.arq.instance_uuid)
    # Whatever the conductor decided has happened once the region's
    # history says how its clean ended or why it waits.
    waiting.read_until(held.history, lambda rows: any(
        e in CLEAN_ENDS for e, _s, _r in rows), what='the clean decided')


def _kill_conductor(env):
    """The conductor gone: of it, only what it committed is left (kill
    -9), none of its memory."""
    env.conductor.stop()
    report.VALID_REPORTS.clear()


def _start_conductor(env):
    """A new conductor process on the same database."""
    env.conductor = conductor_service.ConductorService(env.conf,
                                                       host='cond2')
    env.conductor.start()


@pytest.mark.parametrize('kind,scanned,unbind', [
    ('fpga', True, False), ('fpga', False, True), ('gpu', True, True)],
    ids=['vf-scanned-delete', 'vf-unscanned-unbind', 'gpu-scanned-unbind'])
def test_a_region_released_in_vfio_waits_for_its_function(
        make_host_env, api, kind, scanned, unbind):
    env = make_host_env(kind)
    held = Held(env, api(env), *(('region0', None) if kind == 'fpga'
                                 else ('pgpu', he.GPU_B)))
    if scanned:
        # The guest ran: the agent's scans no longer list the region.
        env.scan(2)
    _release(held, unbind)
    held.waits()

    for _ in range(SCANS):
        env.scan()
        # The conductor's periodic task sends every region that waits.
        env.conductor.manager.cleaning.reap_and_redispatch()
        held.waits()
    _kill_conductor(env)
    _start_conductor(env)
    env.scan()
    env.conductor.manager.cleaning.reap_and_redispatch()
    held.waits()
    env.restart_agent()          # agent_started sends what waits
    env.scan(2)
    held.waits()

    # The function is back with its host driver: the next scan lists the
    # region again, and its clean starts.
    env.host.unbind_vfio(held.address)
    env.scan()
    waiting.read_until(lambda: env.deployable(held.name, held.identity),
                       lambda d: d.device_state == 'available',
                       what='the region wiped')
    if kind == 'fpga':
        assert held.memory() == ''
    else:
        assert env.host.reset_log() == [he.GPU_B]
    waiting.read_until(env.candidates, lambda found: found ==
                       held.others | {held.row.rp_uuid},
                       what='the region offered again')
    waiting.read_until(env.slice_taints, lambda found: found[
        held.slice_name()] == [], what='the region untainted')
    events = [e for e, _s, _r in held.history()]
    assert events[-2:] == ['deployable.clean.start', 'deployable.clean.end']
    assert 'deployable.clean.error' not in events
    assert env.deployable(held.name, held.identity).uuid == held.row.uuid
    shown = held.shown()
    assert shown['cleaning_error'] is None
    assert 'unreported_since' not in shown['attributes_list']


def test_a_conductor_killed_before_a_returned_region_is_cleaned(
        make_host_env, api):
    """The report that lists the region again is committed; its conductor
    dies before it starts the clean: the next one's periodic task does."""
    env = make_host_env('fpga')
    held = Held(env, api(env), 'region0', None)
    env.scan()
    _release(held, unbind=False)
    held.waits()

    _kill_conductor(env)
    env.host.unbind_vfio(held.address)
    # The dead conductor's last act: the agent's report, applied.
    assert report.handle_report(env.hostname, env.agent.scan())[
        'returned'] == 1
    assert env.deployable('region0').device_state == 'pending_cleaning'
    _start_conductor(env)
    env.conductor.manager.cleaning.reap_and_redispatch()
    waiting.read_until(lambda: env.deployable('region0'),
                       lambda d: d.device_state == 'available',
                       what='the region wiped')
    assert held.memory() == ''
    waiting.read_until(env.candidates, lambda found: found ==
                       held.others | {held.row.rp_uuid},
                       what='the region offered again')


def _region_events(app, env, deployable_uuid):
    """The events of a region's rows in its device's history."""
    rows = app.get('/v2/devices/%s/history' % env.device().uuid,
                   headers=ADMIN).json['history']
    return [r['event'] for r in rows if r['deployable_uuid'] ==
            deployable_uuid]


def test_a_pf_released_in_vfio_has_every_region_behind_it_wiped(
        make_host_env, api):
    """A card without SR-IOV: the guest had its PF, so every region of
    the card, and wrote into both. Its ARQ is deleted while libvirt leaves
    the PF with vfio-pci: both regions wait (the one never bound too,
    its history says why), nothing touched, the card offered to no one,
    across scans and the periodic task; once the PF is back both are
    wiped, and only then is the card offered again."""
    env = make_host_env('fpga', sriov=False)
    app = api(env)
    [card] = env.candidates()          # one provider: one accelerator
    names = ('region0', 'region1')
    regions = [env.deployable(name).uuid for name in names]
    memories = [os.path.join(env.conf.fake_driver.state_dir, 'local_memory',
                             'dfl-port.%s' % name[-1]) for name in names]
    arq = env.bind('region0')
    for path in memories:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(TENANT_DATA)
    address = env.attach(arq)          # the PF: the whole card
    env.scan(2)
    app.delete('/v2/accelerator_requests?instance=%s' % arq.instance_uuid,
               headers=ADMIN, status=204)
    env.placement.delete('/allocations/%s' % arq.instance_uuid)

    # Each region's try finds it out of view (the agent's full scan
    # notes it), or the report of its sibling's did first: it waits.
    waited = [waiting.read_until(
        lambda: _region_events(app, env, uuid),
        lambda events: [e for e in events if e in CLEAN_ENDS][-1:] ==
        ['deployable.clean.wait'], what='%s waiting' % uuid)
        for uuid in regions]
    assert 'deployable.clean.shared' not in waited[0]
    assert 'deployable.clean.shared' in waited[1]
    for _ in range(3):
        for uuid, events in zip(regions, waited):
            # No try begun since, nothing written: it just waits.
            assert _region_events(app, env, uuid) == events
            shown = app.get('/v2/deployables/%s' % uuid, headers=ADMIN).json
            assert shown['device_state'] == 'pending_cleaning'
            assert 'vfio-pci' in shown['cleaning_error']
            assert 'unreported_since' in shown['attributes_list']
        assert 'deployable.clean.error' not in sum(waited, [])
        assert env.candidates() == set()
        assert all(taints != [] for taints in env.slice_taints().values())
        assert [_read(path) for path in memories] == [TENANT_DATA] * 2
        env.scan()
        env.conductor.manager.cleaning.reap_and_redispatch()

    env.host.unbind_vfio(address)
    env.scan()

    def offered():
        """The card's offer; never made while a region holds the
        tenant's data."""
        found = env.candidates()
        data = [_read(path) for path in memories]
        assert not found or data == ['', ''], (found, data)
        return found
    waiting.read_until(offered, lambda found: found == {card},
                       what='the card offered again')
    for uuid in regions:
        tail = _region_events(app, env, uuid)[-2:]
        assert tail == ['deployable.clean.start', 'deployable.clean.end']
        assert 'deployable.clean.error' not in _region_events(app, env,
                                                               uuid)


def _read(path):
    with open(path) as f:
        return f.read()
