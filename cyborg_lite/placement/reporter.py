"""Bring one host's provider tree in Placement in line with a desired Tree.

``Reporter(client, conflict_retries).sync(hostname, read_devices,
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
- Writes per sync: new providers are created one POST each (Placement
  1.39 has no bulk form), then traits one PUT per provider, then the
  inventories of all providers that need them in one POST /reshaper
  (Placement's default policy allows it to the service role; refused with
  403, the reporter writes one PUT per provider from then on).
- With ``cache=True`` (what the conductor uses, see
  PlacementSink.from_conf) the reporter remembers each provider it read or
  wrote with its generation. Placement bumps a provider's generation on
  every inventory, trait or allocation change, so a listed provider whose
  generation equals the remembered one is not read again: a sync of a
  host with one changed region costs one read (the tree listing) and its
  writes instead of three reads plus two per provider. Likewise
  remembered: the compute node's uuid per host name (checked against
  that listing: it must list the root under the host's name, else the
  name is looked up again) and the providers seen not to be ours at a
  generation (so the listing of ours by OWNER_CYBORG is skipped while no
  provider of the tree is unknown or changed). The custom traits and
  resource classes it made are remembered too; if one was deleted since
  (a PUT of traits or inventories answers 400), the reporter forgets
  them, creates what is missing and retries that write once.
- With the cache and ``records`` (db/placement_providers.Store, what the
  conductor's sink passes), what is remembered is also recorded in the
  database when a provider's generation moves, and a listed provider
  this process does not know at its listed generation is taken from the
  record of that generation: a conductor publishing a host another
  conductor published last (or itself before a restart) reads the
  tree's listing, not each provider.
- ``sync(..., known=True)``, when the caller knows nobody else wrote
  the host's tree since this reporter's last sync of it (the conductor
  that served the host's publish requests last, see
  db/publish_requests.state): the providers remembered then stand for
  what Placement has, so the tree is not listed; a one-region change
  costs its writes only. A 409 or 404 on the way means they did not:
  forgotten, and the tree is read as usual.
- Providers no longer wanted are deleted children first. One that still
  holds allocations and whose deployables another provider now offers
  (``Tree.moved``: regions behind one function, offered as one since an
  upgrade) has its allocations moved there first, in one POST /reshaper.
  One that still holds allocations otherwise (or has such a child, or
  whose move Placement refused) is kept with reserved = total and
  reported in ``SyncReport.held``; so is, then, the provider offering
  its deployables now.
"""
import dataclasses
import urllib.parse

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.placement import tree as tree_mod

LOG = logging.getLogger(__name__)
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit',
                    'step_size', 'allocation_ratio')
# How much POST /reshaper raises a provider's generation when it gives it
# a non-empty inventory (openstack-placement 16: two set_inventory calls).
RESHAPE_GENERATION_STEP = 2


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
    # The host changed in the database while this was written (set by
    # the sink, which reads it again after writing).
    stale: bool = False


def _q(value):
    return urllib.parse.quote(value, safe='')


def _same_inventories(current, desired):
    if set(current) != set(desired):
        return False
    return all(current[rc].get(f) == desired[rc][f]
               for rc in desired for f in INVENTORY_FIELDS)


class Reporter:
    def __init__(self, client, conflict_retries=5, cache=False,
                 records=None, numa_layer=True):
        self.client = client
        # NUMA node providers above the devices (provider_tree.py).
        self.numa_layer = numa_layer
        # root uuid -> (the others' (uuid, generation)s, whether one of
        # them is a NUMA root), with ``cache``.
        self._foreign_numa = {}
        self.conflict_retries = conflict_retries
        self.cache = cache
        # With ``cache``: where providers are recorded for every conductor
        # (db/placement_providers.Store), and the generation at which this
        # process knows each one recorded.
        self.records = records if cache else None
        self._recorded = {}
        # Custom names made: during the current sync only without the
        # cache; across syncs with it (a deleted one is caught by the 400
        # of the write that needs it, see _retry_unknown).
        self._ensured = set()
        # uuid -> Current as last read or written (with ``cache``).
        self._providers = {}
        # uuid -> generation at which the provider was not ours.
        self._foreign = {}
        # hostname -> compute node provider uuid.
        self._roots = {}
        # hostname -> (root uuid, uuids of our providers) after a sync
        # that left nothing held (with ``cache``): what ``known`` trusts.
        self._trees = {}
        # POST /reshaper for the inventories of several providers, until
        # Placement refuses it (403).
        self.bulk_inventories = True

    # -- reading ---------------------------------------------------------

    def find_root(self, hostname, create=False):
        return self._find_root(hostname, create)[0]

    def _find_root(self, hostname, create):
        """(root uuid, the tree's listing when we just made it, else
        None)."""
        found = self.client.provider_named(hostname)
        if found is not None:
            return found['uuid'], None
        if not create:
            raise exception.ComputeNodeNotFound(hostname=hostname)
        try:
            body = self.client.post('/resource_providers', {
                'name': hostname, 'uuid': tree_mod.rp_uuid(hostname)})
        except exception.PlacementConflict:
            # Another conductor created it a moment ago.
            return self._find_root(hostname, create=False)
        LOG.info('Created compute node resource provider %s', hostname)
        # NOTE: a new root is a tree of one: the provider POST answered
        # with is what listing the tree would show.
        return body['uuid'], [body]

    def list_tree(self, root_uuid):
        return self.client.get('/resource_providers?in_tree=%s'
                               % root_uuid)['resource_providers']

    def read_tree(self, root_uuid, wanted_uuids, everything=None):
        """{uuid: Current} for our providers and any wanted ones present.

        ``everything``: the tree's listing when the caller already has it.
        """
        if everything is None:
            everything = self.list_tree(root_uuid)
        self._recall(root_uuid, everything)
        owned = self._known_owners(root_uuid, everything, wanted_uuids)
        if owned is None:
            owned = {rp['uuid'] for rp in self.client.get(
                '/resource_providers?in_tree=%s&required=%s'
                % (root_uuid, tree_mod.OWNER_TRAIT))['resource_providers']}
            if self.cache:
                for rp in everything:
                    if rp['uuid'] not in owned | wanted_uuids:
                        self._foreign[rp['uuid']] = rp['generation']
        current = {}
        for rp in everything:
            if rp['uuid'] in owned or rp['uuid'] in wanted_uuids:
                current[rp['uuid']] = self._cached(rp) or \
                    self._read_provider(rp)
        return current

    def _known_owners(self, root_uuid, everything, wanted_uuids):
        """Our providers among the unwanted listed ones, if every one of
        them is remembered at its listed generation; else None. The
        compute node is never ours (we may create it, never own it), so a
        tree of the root alone needs no owner listing."""
        if all(rp['uuid'] in wanted_uuids or rp['uuid'] == root_uuid
               for rp in everything):
            return set()
        if not self.cache:
            return None
        owned = set()
        for rp in everything:
            if rp['uuid'] in wanted_uuids or rp['uuid'] == root_uuid:
                continue
            if self._foreign.get(rp['uuid']) == rp['generation']:
                continue
            known = self._providers.get(rp['uuid'])
            if known is None or known.generation != rp['generation']:
                return None
            if tree_mod.OWNER_TRAIT in known.traits:
                owned.add(rp['uuid'])
        return owned

    def _recall(self, root_uuid, everything):
        """Remember the listed providers this process does not know at
        their listed generation but the records do (another conductor
        wrote them, or this one before a restart): one SELECT instead of
        two GETs each."""
        if self.records is None:
            return
        unknown = {}
        for rp in everything:
            uuid, generation = rp['uuid'], rp['generation']
            known = self._providers.get(uuid)
            if uuid != root_uuid and self._foreign.get(uuid) != generation \
                    and (known is None or known.generation != generation):
                unknown[uuid] = rp
        if not unknown:
            return
        for uuid, record in self.records.load(unknown).items():
            rp = unknown[uuid]
            if record.generation == rp['generation']:
                self._providers[uuid] = Current(
                    uuid=uuid, name=rp['name'],
                    parent_uuid=rp['parent_provider_uuid'],
                    generation=record.generation,
                    inventories=record.inventories, traits=record.traits)
                self._recorded[uuid] = record.generation

    def _record(self, report):
        """Record the host's providers whose generation moved since this
        process last recorded them."""
        if self.records is None:
            return
        moved = {}
        for uuid in report.tree.by_uuid():
            have = self._providers.get(uuid)
            if have is not None and \
                    self._recorded.get(uuid) != have.generation:
                moved[uuid] = _copy(have)
        if moved and self.records.save(moved):
            self._recorded.update(
                (uuid, have.generation) for uuid, have in moved.items())

    def _cached(self, rp):
        """A copy of the remembered provider if Placement's generation
        says it has not changed since, else None."""
        known = self._providers.get(rp['uuid'])
        if known is None or known.generation != rp['generation']:
            return None
        return _copy(known, name=rp['name'],
                     parent_uuid=rp['parent_provider_uuid'])

    def _remember(self, have):
        if self.cache:
            self._providers[have.uuid] = _copy(have)

    def _forget(self, uuid):
        self._providers.pop(uuid, None)
        self._foreign.pop(uuid, None)
        self._recorded.pop(uuid, None)

    def _forget_tree(self, hostname, uuids):
        """Forget the host's tree and these providers of it: what failed
        to be written may be what was remembered."""
        self._trees.pop(hostname, None)
        for uuid in uuids:
            self._forget(uuid)

    def _root(self, hostname, create):
        """(root uuid, the tree listing or None): with the cache, the
        remembered root if the listing of its tree still shows it under
        ``hostname``; else found (or made) by name."""
        root = self._roots.get(hostname)
        if root is not None:
            everything = self.list_tree(root)
            if any(rp['uuid'] == root and rp['name'] == hostname
                   for rp in everything):
                return root, everything
            del self._roots[hostname]
        root, listing = self._find_root(hostname, create)
        if self.cache:
            self._roots[hostname] = root
        return root, listing

    def _read_provider(self, rp):
        url = '/resource_providers/%s' % rp['uuid']
        inv = self.client.get(url + '/inventories')
        traits = self.client.get(url + '/traits')
        # NOTE: the generation of the second answer; a write between the
        # two reads leaves an older inventory under a newer generation,
        # so remember it only when both answers carry the same one.
        have = Current(uuid=rp['uuid'], name=rp['name'],
                       parent_uuid=rp['parent_provider_uuid'],
                       generation=traits['resource_provider_generation'],
                       inventories=inv['inventories'],
                       traits=frozenset(traits['traits']))
        if inv['resource_provider_generation'] == have.generation:
            self._remember(have)
        return have

    # -- the loop --------------------------------------------------------

    def sync(self, hostname, read_devices, create_root=False, known=False):
        """Make Placement match the host's devices; a SyncReport of what
        changed.

        ``read_devices``: a callable giving the host's devices as the
        database has them now, called after each listing of the tree (and
        once for the remembered tree of ``known``): what is written is
        then never older than what another conductor wrote before that
        listing (a write after the listing bumps the generation and
        refuses ours). Read before the listing, a publish whose read
        preceded another conductor's write, and whose own write followed
        it (after a 409, say), would put the older state back until its
        freshness check: a freed region reserved again, and a claim
        Placement had just offered it refused.

        ``known``: the caller knows nobody else wrote the host's tree since
        this reporter's last sync of it (see PlacementSink.publish_known):
        with the cache, the providers remembered then are taken for what
        Placement has, without listing the tree, if every one of them is
        remembered. A write refused on a generation (409) or a missing
        provider (404) means they were not, and the tree is read as
        usual."""
        if not self.cache:
            self._ensured = set()
        if known and self.cache:
            report = self._sync_known(hostname, read_devices())
            if report is not None:
                return report
        root, listing = self._root(hostname, create_root)
        for attempt in range(1, self.conflict_retries + 2):
            # NOTE: a retry lists the tree again.
            if listing is None:
                listing = self.list_tree(root)
            devices = read_devices()
            desired = tree_mod.build_tree(hostname, root, devices,
                                          self.numa_layer)
            current = self.read_tree(root, set(desired.by_uuid()), listing)
            if self._defer_numa(root, desired, listing, current):
                desired = tree_mod.build_tree(hostname, root, devices,
                                              numa_layer=False)
            listing = None
            report = SyncReport(root_uuid=root, tree=desired,
                                attempts=attempt)
            try:
                self._apply(desired, current, report)
                self._remember_tree(hostname, report)
                self._record(report)
                return report
            except exception.PlacementError as exc:
                self._roots.pop(hostname, None)
                self._forget_tree(hostname, current)
                if not _retryable(exc) or \
                        attempt > self.conflict_retries:
                    raise
                LOG.info('Placement changed under us while syncing %s '
                         '(%s); re-reading', hostname, exc)
        raise AssertionError('unreachable')

    def _defer_numa(self, root, desired, listing, current):
        """Whether the tree has NUMA node providers that are not ours
        (HW_NUMA_ROOT on a provider of someone else): then ours would
        compete with them, so the devices hang from the compute node and
        only their CUSTOM_NUMA_NODE_<n> traits say where they sit. Asked
        of Placement only when the tree has providers of others, and,
        with the cache, again only when one of those changed."""
        if not any(tree_mod.NUMA_ROOT_TRAIT in p.traits
                   for p in desired.providers):
            return False
        others = frozenset((rp['uuid'], rp['generation']) for rp in listing
                           if rp['uuid'] != root and rp['uuid'] not in current)
        if not others:
            return False
        known = self._foreign_numa.get(root)
        if known is not None and known[0] == others:
            return known[1]
        roots = {rp['uuid'] for rp in self.client.get(
            '/resource_providers?in_tree=%s&required=%s'
            % (root, tree_mod.NUMA_ROOT_TRAIT))['resource_providers']}
        found = bool(roots & {uuid for uuid, _ in others})
        if found:
            LOG.warning('The provider tree of %s has NUMA node providers '
                        'that are not ours; its devices hang from the '
                        'compute node, with CUSTOM_NUMA_NODE_<n> traits',
                        root)
        if self.cache:
            self._foreign_numa[root] = (others, found)
        return found

    def _sync_known(self, hostname, devices):
        """The sync from the providers remembered at the host's last sync;
        None when one is not remembered, or Placement refused a write for
        a generation or a provider it does not have (then forgotten)."""
        root, uuids, numa_layer = self._trees.get(hostname,
                                                  (None, (), True))
        current = {}
        for uuid in uuids:
            have = self._providers.get(uuid)
            if have is None:
                return None
            current[uuid] = _copy(have)
        if root is None:
            return None
        desired = tree_mod.build_tree(hostname, root, devices, numa_layer)
        if any(tree_mod.NUMA_ROOT_TRAIT in p.traits and p.uuid not in uuids
                   for p in desired.providers):
            # NOTE: a NUMA node new to the tree: read it, for someone
            # else's NUMA providers.
            return None
        report = SyncReport(root_uuid=root, tree=desired)
        try:
            self._apply(desired, current, report)
        except exception.PlacementError as exc:
            self._forget_tree(hostname, current)
            if not _retryable(exc):
                raise
            LOG.info('Placement has changed what was remembered of %s '
                     '(%s); reading its tree', hostname, exc)
            return None
        self._remember_tree(hostname, report)
        self._record(report)
        return report

    def _remember_tree(self, hostname, report):
        if not self.cache or report.held:
            self._trees.pop(hostname, None)
            return
        self._trees[hostname] = (report.root_uuid,
                                 frozenset(report.tree.by_uuid()),
                                 report.tree.numa_layer)

    def _apply(self, desired, current, report):
        """Create, rename, then the inventories of every provider in one
        write, then traits provider by provider (see ``_write_all``)."""
        plans = []
        try:
            for provider in desired.providers:
                have = current.get(provider.uuid)
                if have is None:
                    have = self._create(provider)
                    report.created.append(provider.name)
                    plans.append((provider, have, True))
                else:
                    plans.append((provider, have, self._rename(provider,
                                                               have)))
            changed = self._write_all(plans)
        except exception.PlacementError:
            for provider, have, _ in plans:
                self._forget(have.uuid)
            raise
        for provider, have, created in plans:
            if created or changed.get(provider.uuid):
                self._remember(have)
                if not created:
                    report.updated.append(provider.name)
        gone = [c for u, c in current.items() if u not in desired.by_uuid()]
        self._remove(gone, current, report, desired,
                     {have.uuid: (provider, have)
                      for provider, have, _ in plans})

    # -- writing ---------------------------------------------------------

    def _create(self, provider):
        body = self.client.post('/resource_providers', {
            'name': provider.name, 'uuid': provider.uuid,
            'parent_provider_uuid': provider.parent_uuid})
        return Current(uuid=provider.uuid, name=provider.name,
                       parent_uuid=provider.parent_uuid,
                       generation=body['generation'])

    def _rename(self, provider, have):
        """Rename or move a provider: a move under another parent keeps
        its uuid, inventories and allocations (re-parenting, Placement
        1.37), so the NUMA layer's reshape of a host moves no allocation.
        """
        if (have.name, have.parent_uuid) == (provider.name,
                                             provider.parent_uuid):
            return False
        body = self.client.put('/resource_providers/%s' % have.uuid, {
            'name': provider.name,
            'parent_provider_uuid': provider.parent_uuid})
        if have.parent_uuid != provider.parent_uuid:
            LOG.info('Moved resource provider %s (%s) under %s',
                     provider.name, have.uuid, provider.parent_uuid)
        have.generation = body['generation']
        have.name, have.parent_uuid = provider.name, provider.parent_uuid
        return True

    def _write_all(self, plans):
        """Traits, then inventories, of the planned providers; {uuid: True}
        for each one written.

        Placement 1.39 has no bulk form for providers or traits, but POST
        /reshaper replaces the inventories of many providers in one
        request: a new host's regions cost one write instead of one each.
        Traits go first, right after a provider is made, so that it
        carries OWNER_CYBORG as soon as possible, and their answers give
        the exact generations the reshaper is checked against.
        """
        changed = {}
        for provider, have, renamed in plans:
            if renamed:
                changed[provider.uuid] = True
            if have.traits != provider.traits:
                new_traits = provider.traits - have.traits
                self._ensure_traits(new_traits)
                self._retry_unknown(
                    lambda: self._put_traits(have, provider.traits),
                    '/traits/%s', new_traits)
                changed[provider.uuid] = True
        stale = [(p, h) for p, h, _ in plans
                 if not _same_inventories(h.inventories, p.inventories)]
        new_rcs = {rc for p, h in stale
                   for rc in set(p.inventories) - set(h.inventories)}
        self._ensure_rcs(new_rcs)
        if len(stale) < 2 or not self._reshape(stale, new_rcs):
            for provider, have in stale:
                self._retry_unknown(
                    lambda: self._put_inventories(have,
                                                  provider.inventories),
                    '/resource_classes/%s', new_rcs)
        for provider, have in stale:
            changed[provider.uuid] = True
        return changed

    def _reshape(self, stale, new_rcs):
        """The inventories of ``stale`` [(provider, have)] in one POST
        /reshaper; False (and never again) if Placement refuses it."""
        if not self.bulk_inventories:
            return False
        body = {'inventories': {
            have.uuid: {'resource_provider_generation': have.generation,
                        'inventories': provider.inventories}
            for provider, have in stale}, 'allocations': {}}
        try:
            self._retry_unknown(lambda: self.client.post('/reshaper', body),
                                '/resource_classes/%s', new_rcs)
        except exception.PlacementError as exc:
            if getattr(exc, 'status', None) != 403:
                raise
            # NOTE: Placement's default policy lets only the service role
            # reshape; an admin-only user writes provider by provider.
            LOG.warning('Placement refused POST /reshaper (%s); writing '
                        'inventories one provider at a time from now on. '
                        'Give the Placement user the service role to write '
                        'them in bulk.', exc)
            self.bulk_inventories = False
            return False
        for provider, have in stale:
            # NOTE: the reshaper answers 204 without generations. Placement
            # sets a provider's inventory twice in it (an interim union,
            # then the final one), each bumping the generation. A wrong
            # guess costs a cache miss (a read) at the next sync, or a 409
            # and a re-read at the next write; never a stale write.
            have.generation += RESHAPE_GENERATION_STEP if \
                provider.inventories else 1
            have.inventories = {rc: dict(inv) for rc, inv in
                                provider.inventories.items()}
        return True

    def _retry_unknown(self, write, url, names):
        """Run ``write``; on a 400 when remembered custom names were
        trusted, create them again and retry once (someone may have
        deleted one since we made it)."""
        try:
            return write()
        except exception.PlacementError as exc:
            trusted = {url % n for n in names} & self._ensured
            if getattr(exc, 'status', None) != 400 or not trusted:
                raise
            LOG.info('Placement refused %s (%s); creating them again',
                     sorted(trusted), exc)
            self._ensured -= trusted
            self._ensure(url, names)
            return write()

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

    def _remove(self, gone, current, report, desired, planned):
        for have in sorted(gone, key=lambda c: -_depth(c, current)):
            successor = planned.get(desired.moved.get(have.uuid))
            if _has_child(have, current) or (
                    self._in_use(have) and
                    not self._move_allocations(have, successor)):
                self._hold(have, report)
                if successor is not None:
                    # NOTE: what it holds is not counted on the provider
                    # that offers its deployable now: offer nothing there
                    # until it is freed.
                    self._reserve_all(successor[1])
                continue
            self.client.delete('/resource_providers/%s' % have.uuid)
            self._forget(have.uuid)
            if self.records is not None:
                self.records.forget([have.uuid])
            del current[have.uuid]
            report.deleted.append(have.name)

    def _move_allocations(self, have, target):
        """Move every allocation of ``have``, a provider no longer wanted,
        to ``target`` ((Provider, Current) now offering what it did, or
        None) in one POST /reshaper: an upgrade that offers regions behind
        one function through one provider (tree.moved). False when there
        is no target or Placement refuses (no service role, or the target
        cannot hold them): the provider is then held."""
        if target is None:
            return False
        provider, target_have = target
        try:
            consumers = self.client.get('/resource_providers/%s/allocations'
                                        % have.uuid)['allocations']
            body = {'inventories': {
                have.uuid: {'resource_provider_generation': have.generation,
                            'inventories': {}},
                target_have.uuid: {
                    'resource_provider_generation': target_have.generation,
                    'inventories': provider.inventories}},
                'allocations': {
                    consumer: self._moved_consumer(consumer, have.uuid,
                                                   target_have.uuid)
                    for consumer in consumers}}
            self.client.post('/reshaper', body)
        except exception.PlacementError as exc:
            LOG.warning('Could not move the allocations of resource '
                        'provider %s (%s) to %s: %s', have.name, have.uuid,
                        target_have.name, exc)
            return False
        finally:
            # NOTE: the reshaper answers without generations.
            self._forget(target_have.uuid)
            self._forget(have.uuid)
        LOG.info('Moved the allocations of resource provider %s to %s',
                 have.name, target_have.name)
        return True

    def _moved_consumer(self, consumer, old_uuid, new_uuid):
        """A consumer's allocations (all of them, as the reshaper replaces
        them) with those on ``old_uuid`` on ``new_uuid``."""
        found = self.client.get('/allocations/%s' % consumer)
        moved = {}
        for rp_uuid, alloc in found['allocations'].items():
            resources = moved.setdefault(
                new_uuid if rp_uuid == old_uuid else rp_uuid, {})
            for rc, amount in alloc['resources'].items():
                resources[rc] = resources.get(rc, 0) + amount
        entry = {'allocations': {rp: {'resources': resources}
                                 for rp, resources in moved.items()},
                 'project_id': found['project_id'],
                 'user_id': found['user_id'],
                 'consumer_generation': found['consumer_generation']}
        if 'consumer_type' in found:
            entry['consumer_type'] = found['consumer_type']
        return entry

    def _in_use(self, have):
        usages = self.client.get(
            '/resource_providers/%s/usages' % have.uuid)['usages']
        return any(usages.values())

    def _hold(self, have, report):
        LOG.warning('Resource provider %s (%s) is gone from the host but '
                    'still holds allocations; keeping it with reserved = '
                    'total until they are freed', have.name, have.uuid)
        self._reserve_all(have)
        report.held.append(have.name)

    def _reserve_all(self, have):
        held = {rc: dict(inv, reserved=inv['total'])
                for rc, inv in have.inventories.items()}
        if not _same_inventories(have.inventories, held):
            self._forget(have.uuid)
            self._put_inventories(have, {
                rc: {f: inv[f] for f in INVENTORY_FIELDS}
                for rc, inv in held.items()})
            self._remember(have)


def _copy(have, **changes):
    """A Current of its own: the inventories dict is not shared."""
    return dataclasses.replace(have, inventories=dict(have.inventories),
                               **changes)


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
