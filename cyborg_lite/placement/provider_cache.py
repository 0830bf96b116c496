"""What the Reporter (placement/reporter.py) knows of Placement's
providers between syncs: each provider as last read or written with its
generation, the providers seen not to be ours, each host's tree after a
sync that held nothing, and, with db/placement_providers.Store, the
records every conductor shares. A provider whose listed generation is
the remembered one is not read again (the rules are the Reporter's
docstring's, "With cache=True").

``Current`` is one provider as Placement has it; the writes
(placement/writes.py) and the removal (placement/removal.py) update it.
"""
import dataclasses

from cyborg_lite.placement import tree as tree_mod

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


def copy_of(have, **changes):
    """A Current of its own: the inventories dict is not shared."""
    return dataclasses.replace(have, inventories=dict(have.inventories),
                               **changes)


def same_inventories(current, desired):
    if set(current) != set(desired):
        return False
    return all(current[rc].get(f) == desired[rc][f]
               for rc in desired for f in INVENTORY_FIELDS)


class ProviderCache:
    """The Reporter's memory of providers (a part of Reporter: its
    ``cache``, ``records``, ``_providers``, ``_foreign``, ``_recorded``
    and ``_trees``, set by Reporter.__init__)."""

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
                moved[uuid] = copy_of(have)
        if moved and self.records.save(moved):
            self._recorded.update(
                (uuid, have.generation) for uuid, have in moved.items())

    def _cached(self, rp):
        """A copy of the remembered provider if Placement's generation
        says it has not changed since, else None."""
        known = self._providers.get(rp['uuid'])
        if known is None or known.generation != rp['generation']:
            return None
        return copy_of(known, name=rp['name'],
                       parent_uuid=rp['parent_provider_uuid'])

    def _remember(self, have):
        if self.cache:
            self._providers[have.uuid] = copy_of(have)

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

    def _remember_tree(self, hostname, report):
        if not self.cache or report.held:
            self._trees.pop(hostname, None)
            return
        self._trees[hostname] = (report.root_uuid,
                                 frozenset(report.tree.by_uuid()),
                                 report.tree.numa_layer)
