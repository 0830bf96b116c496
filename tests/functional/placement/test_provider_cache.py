"""The provider cache of the conductor's Placement sink (issue 13.13).

The conductor builds its sink with ``PlacementSink.from_conf``, which
turns the reporter's cache on: a provider listed at the generation it was
last read or written at is not read again, and custom traits it created
are not created again. These tests run that configuration against the
real Placement and count the requests; each fails if the cache logic it
names is taken out (ignoring the generation, or not re-creating a
deleted trait).
"""
import collections
import uuid

import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.placement import sink as sink_mod
from tests.functional.placement import db_rows

PCI = '0000:5e:00.0'


class _Recorder:
    """Keeps (method, path) of every request the sink's own client
    sends, which still goes to Placement."""

    def __init__(self, client):
        self.calls = []
        self._request = client.request
        client.request = self

    def __call__(self, method, url, body=None, ok=(200, 201, 204)):
        self.calls.append((method, url.split('?')[0]))
        return self._request(method, url, body, ok)

    def counts(self):
        return collections.Counter(method for method, _ in self.calls)

    def clear(self):
        self.calls.clear()


def _conductor_sink(conf):
    sink = sink_mod.PlacementSink.from_conf(conf)
    assert sink.reporter.cache   # what the conductor runs with
    return sink, _Recorder(sink.client)


def _function():
    return uuid.uuid4().hex


def _trait(function_id):
    return 'CUSTOM_FUNCTION_ID_%s' % function_id.upper()


def _set_function(hostname, function_id):
    with session.writer() as s:
        s.execute(sa.update(models.Deployable)
                  .where(models.Deployable.name ==
                         '%s_%s_region0' % (hostname, PCI))
                  .values(function_id=function_id))


def _region0(inspector, hostname):
    """(uuid, generation) of region0's provider, read by the test."""
    [rp] = inspector.get('/resource_providers?name=%s_%s_region0'
                         % (hostname, PCI))['resource_providers']
    return rp['uuid'], rp['generation']


def test_unchanged_host_costs_one_listing(placement, sqlite_db, configured,
                                          hostname):
    db_rows.add_fpga(hostname, function_id=_function())
    sink, requests = _conductor_sink(configured(placement))
    assert sink.publish(hostname).converged
    requests.clear()

    assert sink.publish(hostname).converged
    assert requests.calls == [('GET', '/resource_providers')]


def test_provider_changed_behind_our_back_is_reread_and_fixed(
        placement, sqlite_db, configured, inspector, hostname):
    """Someone replaced region0's traits and reserved its FPGA: its
    generation moved, so the sink reads it again and puts it right."""
    function = _function()
    db_rows.add_fpga(hostname, function_id=function)
    sink, requests = _conductor_sink(configured(placement))
    assert sink.publish(hostname).converged
    other = inspector(placement)
    rp_uuid, generation = _region0(other, hostname)
    url = '/resource_providers/%s' % rp_uuid
    other.put('/traits/CUSTOM_SOMEONE_ELSE')
    other.put(url + '/traits', {'resource_provider_generation': generation,
                                'traits': ['CUSTOM_SOMEONE_ELSE']})
    inventories = other.get(url + '/inventories')
    inventories['inventories']['FPGA']['reserved'] = 1
    other.put(url + '/inventories', inventories)
    requests.clear()

    result = sink.publish(hostname)

    assert result.converged and result.report.updated == [
        '%s_%s_region0' % (hostname, PCI)]
    # The listing, then region0 read again (only it) and written back
    # (traits first, then inventories: placement/reporter.py).
    assert requests.calls == [
        ('GET', '/resource_providers'),
        ('GET', url + '/inventories'), ('GET', url + '/traits'),
        ('PUT', url + '/traits'), ('PUT', url + '/inventories')]
    traits = set(other.get(url + '/traits')['traits'])
    assert _trait(function) in traits and 'CUSTOM_SOMEONE_ELSE' not in traits
    assert other.get(url + '/inventories')['inventories']['FPGA'][
        'reserved'] == 0


def test_custom_trait_deleted_in_placement_is_created_again(
        placement, sqlite_db, configured, inspector, hostname):
    """The sink made CUSTOM_FUNCTION_ID_<A> and remembers it; an operator
    deletes it from Placement while no provider has it. When region0
    loads A again, the write that needs it is refused (400): the sink
    creates it again and retries."""
    first, second = _function(), _function()
    db_rows.add_fpga(hostname, function_id=first)
    sink, requests = _conductor_sink(configured(placement))
    assert sink.publish(hostname).converged
    _set_function(hostname, second)
    assert sink.publish(hostname).converged
    other = inspector(placement)
    other.delete('/traits/%s' % _trait(first))
    _set_function(hostname, first)
    requests.clear()

    result = sink.publish(hostname)

    assert result.converged
    rp_uuid, _generation = _region0(other, hostname)
    traits_url = '/resource_providers/%s/traits' % rp_uuid
    # Trusted as made, refused, made again, written.
    assert requests.calls == [
        ('GET', '/resource_providers'), ('PUT', traits_url),
        ('PUT', '/traits/%s' % _trait(first)), ('PUT', traits_url)]
    assert _trait(first) in other.get(traits_url)['traits']
