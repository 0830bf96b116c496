"""The Reporter's writes (placement/reporter.py): providers created and
renamed, traits, then inventories in one POST /reshaper (provider by
provider once Placement refuses it), and the custom traits and resource
classes made just before a provider first needs them.
"""
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.placement import provider_cache

LOG = logging.getLogger(__name__)
# How much POST /reshaper raises a provider's generation when it gives it
# a non-empty inventory (openstack-placement 16: two set_inventory calls).
RESHAPE_GENERATION_STEP = 2


class Writes:
    """The Reporter's writes (a part of Reporter: its ``client``,
    ``_ensured`` and ``bulk_inventories``, set by Reporter.__init__)."""

    def _create(self, provider):
        body = self.client.post('/resource_providers', {
            'name': provider.name, 'uuid': provider.uuid,
            'parent_provider_uuid': provider.parent_uuid})
        return provider_cache.Current(uuid=provider.uuid,
                                      name=provider.name,
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
                 if not provider_cache.same_inventories(h.inventories,
                                                        p.inventories)]
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
