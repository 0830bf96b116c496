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

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.placement import provider_cache
from cyborg_lite.placement import removal
from cyborg_lite.placement import tree as tree_mod
from cyborg_lite.placement import writes

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class SyncReport:
    root_uuid: str
    tree: tree_mod.Tree
    created: list = dataclasses.field(default_factory=list)
    updated: list = dataclasses.field(default_factory=list)
    deleted: list = dataclasses.field(default_factory=list)
    held: list = dataclasses.field(default_factory=list)
    renamed: list = dataclasses.field(default_factory=list)
    attempts: int = 1
    # The host changed in the database while this was written (set by
    # the sink, which reads it again after writing unless ``guarded``).
    stale: bool = False
    # Every write presented a generation this process knew before it
    # read the database (``_sync_known``: inventories and traits only,
    # nothing made, renamed or removed): a write over a newer one was
    # refused (409), so what it wrote is no older than what Placement
    # had, and the sink need not read the host again.
    guarded: bool = False


class Reporter(provider_cache.ProviderCache, writes.Writes,
               removal.Removal):
    """One host's provider tree in Placement made to match the database
    (module docstring); its memory, writes and removal are its parts'."""

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
        have = provider_cache.Current(
            uuid=rp['uuid'], name=rp['name'],
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
            current[uuid] = provider_cache.copy_of(have)
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
        report.guarded = not (report.created or report.renamed or
                              report.deleted or report.held)
        return report

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
                    renamed = self._rename(provider, have)
                    if renamed:
                        report.renamed.append(provider.name)
                    plans.append((provider, have, renamed))
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


def _retryable(exc):
    return isinstance(exc, exception.PlacementConflict) or \
        getattr(exc, 'status', None) == 404
