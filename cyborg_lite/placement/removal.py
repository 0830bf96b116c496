"""The Reporter's removal (placement/reporter.py) of providers no longer
wanted: deleted children first; one still holding allocations has them
moved to the provider now offering its deployables (one POST /reshaper)
or is held with reserved = total.
"""
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.placement import provider_cache

LOG = logging.getLogger(__name__)


class Removal:
    """The Reporter's removal (a part of Reporter: its ``client`` and
    ``records``, set by Reporter.__init__)."""

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
        if not provider_cache.same_inventories(have.inventories, held):
            self._forget(have.uuid)
            self._put_inventories(have, {
                rc: {f: inv[f] for f in provider_cache.INVENTORY_FIELDS}
                for rc, inv in held.items()})
            self._remember(have)


def _depth(have, current):
    depth, parent = 0, have.parent_uuid
    while parent in current:
        depth, parent = depth + 1, current[parent].parent_uuid
    return depth


def _has_child(have, current):
    return any(c.parent_uuid == have.uuid for c in current.values())
