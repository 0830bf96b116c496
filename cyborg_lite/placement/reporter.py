"""Bring one host's provider tree in Placement in line with a desired Tree.

``Reporter(client, conflict_retries).sync(hostname, devices,
create_root=False)`` reads what Placement has, writes only what differs,
and returns a ``SyncReport``. Rules:

- The compute node RP is found by name; it is created (uuid3 of the
  hostname) only when ``create_root`` is true. We never change it.
- Providers we own carry OWNER_CYBORG; providers of others in the same
  tree (Nova's) are neither read in detail nor touched.
- Every write carries the generation we read. A 409 (someone else wrote
  in between) or 404 (a provider vanished) restarts from a fresh read, up
  to ``conflict_retries`` times.
- Custom traits and resource classes are created just before a provider
  first needs them, so an unchanged tree costs reads only.
- Providers no longer wanted are deleted children first; one that still
  holds allocations (or has such a child) is kept with reserved = total
  and reported in ``SyncReport.held``.
"""
import dataclasses
import urllib.parse

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.placement import tree as tree_mod

LOG = logging.getLogger(__name__)
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit',
                    'step_size', 'allocation_ratio')


@dataclasses.dataclass
class Current:
    """One provider as Placement has it now."""
    uuid: str
    name: str
    parent_uuid: str | None
    generation: int
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: frozenset = frozenset()


@dataclasses.dataclass
class SyncReport:
    root_uuid: str
    tree: tree_mod.Tree
    created: list = dataclasses.field(default_factory=list)
    updated: list = dataclasses.field(default_factory=list)
    deleted: list = dataclasses.field(default_factory=list)
    held: list = dataclasses.field(default_factory=list)
    attempts: int = 1


def _q(value):
    return urllib.parse.quote(value, safe='')


def _same_inventories(current, desired):
    if set(current) != set(desired):
        return False
    return all(current[rc].get(f) == desired[rc][f]
               for rc in desired for f in INVENTORY_FIELDS)


class Reporter:
    def __init__(self, client, conflict_retries=5):
        self.client = client
        self.conflict_retries = conflict_retries
        # Custom names made during the current sync only: a longer-lived
        # cache would go stale when an operator deletes an unused trait.
        self._ensured = set()

    # -- reading ---------------------------------------------------------

    def find_root(self, hostname, create=False):
        found = self.client.get('/resource_providers?name=%s' % _q(hostname))
        if found['resource_providers']:
            return found['resource_providers'][0]['uuid']
        if not create:
            raise exception.ComputeNodeNotFound(hostname=hostname)
        try:
            body = self.client.post('/resource_providers', {
                'name': hostname, 'uuid': tree_mod.rp_uuid(hostname)})
        except exception.PlacementConflict:
            # Another conductor created it a moment ago.
            return self.find_root(hostname, create=False)
        LOG.info('Created compute node resource provider %s', hostname)
        return body['uuid']

    def read_tree(self, root_uuid, wanted_uuids):
        """{uuid: Current} for our providers and any wanted ones present."""
        base = '/resource_providers?in_tree=%s' % root_uuid
        everything = self.client.get(base)['resource_providers']
        owned = {rp['uuid'] for rp in self.client.get(
            base + '&required=%s' % tree_mod.OWNER_TRAIT)[
                'resource_providers']}
        current = {}
        for rp in everything:
            if rp['uuid'] in owned or rp['uuid'] in wanted_uuids:
                current[rp['uuid']] = self._read_provider(rp)
        return current

    def _read_provider(self, rp):
        url = '/resource_providers/%s' % rp['uuid']
        inv = self.client.get(url + '/inventories')
        traits = self.client.get(url + '/traits')
        return Current(uuid=rp['uuid'], name=rp['name'],
                       parent_uuid=rp['parent_provider_uuid'],
                       generation=traits['resource_provider_generation'],
                       inventories=inv['inventories'],
                       traits=frozenset(traits['traits']))

    # -- the loop --------------------------------------------------------

    def sync(self, hostname, devices, create_root=False):
        """Make Placement match ``devices``; a SyncReport of what changed."""
        self._ensured = set()
        root = self.find_root(hostname, create_root)
        desired = tree_mod.build_tree(hostname, root, devices)
        wanted = set(desired.by_uuid())
        for attempt in range(1, self.conflict_retries + 2):
            report = SyncReport(root_uuid=root, tree=desired,
                                attempts=attempt)
            current = self.read_tree(root, wanted)
            try:
                self._apply(desired, current, report)
                return report
            except exception.PlacementError as exc:
                if not _retryable(exc) or \
                        attempt > self.conflict_retries:
                    raise
                LOG.info('Placement changed under us while syncing %s '
                         '(%s); re-reading', hostname, exc)
        raise AssertionError('unreachable')

    def _apply(self, desired, current, report):
        for provider in desired.providers:
            have = current.get(provider.uuid)
            if have is None:
                self._create(provider)
                report.created.append(provider.name)
            elif self._update(provider, have):
                report.updated.append(provider.name)
        gone = [c for u, c in current.items() if u not in desired.by_uuid()]
        self._remove(gone, current, report)

    # -- writing ---------------------------------------------------------

    def _create(self, provider):
        body = self.client.post('/resource_providers', {
            'name': provider.name, 'uuid': provider.uuid,
            'parent_provider_uuid': provider.parent_uuid})
        have = Current(uuid=provider.uuid, name=provider.name,
                       parent_uuid=provider.parent_uuid,
                       generation=body['generation'])
        self._update(provider, have)

    def _update(self, provider, have):
        changed = False
        if (have.name, have.parent_uuid) != (provider.name,
                                             provider.parent_uuid):
            body = self.client.put('/resource_providers/%s' % have.uuid, {
                'name': provider.name,
                'parent_provider_uuid': provider.parent_uuid})
            have.generation = body['generation']
            changed = True
        if not _same_inventories(have.inventories, provider.inventories):
            self._ensure_rcs(set(provider.inventories) -
                             set(have.inventories))
            self._put_inventories(have, provider.inventories)
            changed = True
        if have.traits != provider.traits:
            self._ensure_traits(provider.traits - have.traits)
            self._put_traits(have, provider.traits)
            changed = True
        return changed

    def _put_inventories(self, have, inventories):
        body = self.client.put(
            '/resource_providers/%s/inventories' % have.uuid,
            {'resource_provider_generation': have.generation,
             'inventories': inventories})
        have.generation = body['resource_provider_generation']
        have.inventories = body['inventories']

    def _put_traits(self, have, traits):
        body = self.client.put(
            '/resource_providers/%s/traits' % have.uuid,
            {'resource_provider_generation': have.generation,
             'traits': sorted(traits)})
        have.generation = body['resource_provider_generation']
        have.traits = frozenset(body['traits'])

    def _ensure_traits(self, names):
        self._ensure('/traits/%s', names)

    def _ensure_rcs(self, names):
        self._ensure('/resource_classes/%s', names)

    def _ensure(self, url, names):
        # PUT of a custom trait or resource class is idempotent (201 new,
        # 204 present); standard names always exist.
        for name in sorted(names):
            key = url % name
            if name.startswith('CUSTOM_') and key not in self._ensured:
                self.client.put(key)
                self._ensured.add(key)

    # -- removing --------------------------------------------------------

    def _remove(self, gone, current, report):
        for have in sorted(gone, key=lambda c: -_depth(c, current)):
            if self._in_use(have) or _has_child(have, current):
                self._hold(have, report)
                continue
            self.client.delete('/resource_providers/%s' % have.uuid)
            del current[have.uuid]
            report.deleted.append(have.name)

    def _in_use(self, have):
        usages = self.client.get(
            '/resource_providers/%s/usages' % have.uuid)['usages']
        return any(usages.values())

    def _hold(self, have, report):
        LOG.warning('Resource provider %s (%s) is gone from the host but '
                    'still holds allocations; keeping it with reserved = '
                    'total until they are freed', have.name, have.uuid)
        held = {rc: dict(inv, reserved=inv['total'])
                for rc, inv in have.inventories.items()}
        if not _same_inventories(have.inventories, held):
            self._put_inventories(have, {
                rc: {f: inv[f] for f in INVENTORY_FIELDS}
                for rc, inv in held.items()})
        report.held.append(have.name)


def _depth(have, current):
    depth, parent = 0, have.parent_uuid
    while parent in current:
        depth, parent = depth + 1, current[parent].parent_uuid
    return depth


def _has_child(have, current):
    return any(c.parent_uuid == have.uuid for c in current.values())


def _retryable(exc):
    return isinstance(exc, exception.PlacementConflict) or \
        getattr(exc, 'status', None) == 404
