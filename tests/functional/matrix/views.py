"""What a matrix host's scenarios check: the schedulers' views
(Placement's allocation candidates and reserved inventories, the
ResourceSlices' devices and their taints), the devices' history and the
notifications heard (each checked against its schema: heard.py)."""
import collections

from cyborg_lite.notifications import events as notifications
from tests import waiting
from tests.functional.matrix import heard as heard_mod

WIPE = {'pending-cleaning': 'cleaning'}


class Views:
    """A Host's views of what the schedulers see and of what was
    recorded and heard."""

    # --- what the schedulers see ---------------------------------------

    def root(self):
        if 'root' not in self._roots:
            [found] = self.services.placement_call(
                'GET', '/resource_providers', params={'name': self.host}
            ).json()['resource_providers']
            self._roots['root'] = found['uuid']
        return self._roots['root']

    def root_of(self, rp_uuid):
        if rp_uuid not in self._roots:
            self._roots[rp_uuid] = self.services.placement_call(
                'GET', '/resource_providers/' + rp_uuid).json()[
                'root_provider_uuid']
        return self._roots[rp_uuid]

    def providers(self, deployables=None):
        """{rp uuid: [short names of the deployables it offers]}."""
        by_rp = {}
        for dep in deployables or self.deployables():
            by_rp.setdefault(dep['rp_uuid'], []).append(self.key_of(dep))
        return {rp: sorted(names) for rp, names in by_rp.items()}

    def offers(self, resource_class='FPGA', required=(), deployables=None):
        """{deployable short name: 'offered' | 'reserved' | 'allocated' |
        'refused'} as Placement has it: a deployable whose provider is
        an allocation candidate for one ``resource_class`` (with the
        ``required`` traits) is offered; else one whose inventory is all
        reserved is reserved; else one whose provider Nova holds is
        allocated; else it is refused (the required traits)."""
        place = self.services.placement_call
        params = {'resources': '%s:1' % resource_class,
                  'in_tree': self.root(), 'limit': 1000}
        if required:
            params['required'] = ','.join(required)
        candidates = place('GET', '/allocation_candidates',
                           params=params).json()['allocation_requests']
        offered = {rp for c in candidates for rp in c['allocations']}
        view = {}
        for rp, names in self.providers(deployables).items():
            inventory = place('GET', '/resource_providers/%s/inventories'
                              % rp).json()['inventories'].get(resource_class)
            if inventory is None:
                continue
            used = place('GET', '/resource_providers/%s/usages' % rp
                         ).json()['usages'].get(resource_class, 0)
            state = ('offered' if rp in offered else
                     'reserved' if inventory['reserved'] >=
                     inventory['total'] else
                     'allocated' if used else 'refused')
            view.update((name, state) for name in names)
        return view

    def traits(self, name='region0', card=0):
        """Placement's traits on the provider of a deployable."""
        rp = self.region(name, card)['rp_uuid']
        return set(self.services.placement_call(
            'GET', '/resource_providers/%s/traits' % rp).json()['traits'])

    def slice_devices(self):
        """{deployable uuid: device entry} of this host's slices."""
        found = {}
        for slice_ in list(self.services.apiserver.slices.values()):
            if slice_['spec'].get('nodeName') != self.host:
                continue
            for device in slice_['spec'].get('devices', []):
                dep = device['attributes'].get('deployableUUID')
                found[dep['string'] if dep else device['name']] = device
        return found

    def counter_set(self, name):
        """({device name: device entry} of this host's devices named
        ``<name>-...``, {counter: value} of its shared counter set
        ``name``)."""
        devices, counters = {}, {}
        for slice_ in list(self.services.apiserver.slices.values()):
            if slice_['spec'].get('nodeName') != self.host:
                continue
            for device in slice_['spec'].get('devices') or []:
                if device['name'].startswith(name + '-'):
                    devices[device['name']] = device
            for found in slice_['spec'].get('sharedCounters') or []:
                if found['name'] == name:
                    counters = {k: v['value']
                                for k, v in found['counters'].items()}
        return devices, counters

    def slices(self, deployables=None):
        """{deployable short name: sorted taints, each its reason (and
        '=nova' for the in-use one)} of this host's ResourceSlices; the
        wipe's two states are one taint, ``cleaning`` (a scheduler reads
        the same NoSchedule in both; the region moves on to ``cleaning``
        without a publish, its capacity unchanged)."""
        names = {d['uuid']: self.key_of(d)
                 for d in deployables or self.deployables()}
        view = {}
        for dep_uuid, device in self.slice_devices().items():
            taints = []
            for taint in device.get('taints', []):
                reason = WIPE.get(taint['key'].split('/', 1)[1],
                                  taint['key'].split('/', 1)[1])
                taints.append(reason + ('=' + taint['value']
                                        if reason == 'in-use' else ''))
            view[names.get(dep_uuid, dep_uuid)] = sorted(taints)
        return view

    def slice_device(self, name='region0', card=0):
        return self.slice_devices()[self.region(name, card)['uuid']]

    def wait_views(self, offers=None, slices=None, timeout=20, **query):
        """Wait until Placement (``offers``, for ``query``: see offers())
        and the slices show what is expected (a change that gives
        capacity back may be published after its call returns);
        AssertionError with the last views otherwise."""
        if offers is not None:
            waiting.read_until(lambda: self.offers(**query),
                               lambda found: found == offers, timeout,
                               what='Placement %s' % offers)
        if slices is not None:
            waiting.read_until(self.slices,
                               lambda found: found == slices, timeout,
                               what='slices %s' % slices)

    def views(self, **query):
        """(Placement, slices) now."""
        deployables = self.deployables()
        return (self.offers(deployables=deployables, **query),
                self.slices(deployables))

    # --- history and notifications -------------------------------------

    def mark(self, *device_uuids):
        """Where the notifications and these devices' histories stand."""
        assert notifications.flush()
        with self.heard.lock:
            heard = len(self.heard.messages)
        return heard_mod.Mark(heard, {u: len(self.history(u))
                                      for u in device_uuids})

    def heard_since(self, mark, *uuids):
        """[(event, data)] of notifications since ``mark`` naming one of
        ``uuids`` (of this host's when none), each checked against its
        schema."""
        assert notifications.flush()
        with self.heard.lock:
            messages = list(self.heard.messages[mark.heard:])
        events = [heard_mod.checked(m) for m in messages]
        if not uuids:
            return [(e, d) for e, d in events
                    if d.get('hostname') in (None, self.host)]
        wanted = set(uuids)
        return [(e, d) for e, d in events if wanted & heard_mod.uuids_in(d)]

    def wait_heard(self, mark, expected, *uuids, timeout=15):
        """The events heard since ``mark`` about ``uuids`` (of the kinds
        ``expected`` names: ``arq.``, ``device.``...), in the order heard,
        once they are ``expected`` in any order: each object's own come
        in its order, but two threads' (the API's and a conductor's)
        may interleave either way between a commit and its notification;
        the history has the order of the commits."""
        kinds = tuple({e.split('.')[0] + '.' for e in expected})
        wanted = collections.Counter(expected)
        return waiting.read_until(
            lambda: [(e, d) for e, d in self.heard_since(mark, *uuids)
                     if e.startswith(kinds)],
            lambda got: collections.Counter(e for e, _d in got) == wanted,
            timeout, what='notifications %s' % expected)

    def history_since(self, mark, device_uuid):
        """[(event, state)] of the device's history rows since ``mark``."""
        rows = self.history(device_uuid)[mark.history[device_uuid]:]
        return [(r['event'], r['state']) for r in rows]
