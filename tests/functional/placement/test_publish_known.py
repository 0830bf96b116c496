"""The conductor that served a host's publish requests last writes the
host's next change without reading its provider tree back, against the
real openstack-placement; anything else reads it first.

Two conductors are two Publishers, each with its own caching Placement
sink (as ``PlacementSink.from_conf`` makes them), sharing the database.
"""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import context
from cyborg_lite.conductor import manager as manager_mod
from cyborg_lite.conductor import publishing
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from cyborg_lite.placement import client as client_mod
from cyborg_lite.placement import sink as sink_mod
from tests.functional.placement import fake_host

FUNCTIONS = ('c0ffee01' * 4, 'c0ffee02' * 4)


def _trait(function_id):
    return 'CUSTOM_FUNCTION_ID_' + function_id.upper()


class LoggingClient(client_mod.PlacementClient):
    """The real client, noting each request (method, path) it sends."""

    def __init__(self, adapter):
        super().__init__(adapter)
        self.log = []

    def request(self, method, url, body=None, ok=(200, 201, 204)):
        self.log.append((method, url))
        return super().request(method, url, body, ok)

    def taken(self):
        log, self.log = self.log, []
        return log


def _client(conf):
    return LoggingClient(client_mod.adapter_from_conf(conf))


@pytest.fixture
def host(placement, configured, conf, sqlite_db, hostname, tmp_path):
    configured(placement)
    fake_host.configure_card(conf, tmp_path / 'fake_fpga', sriov=True)
    host = fake_host.Host(conf, placement, hostname, client=_client(conf),
                          cache=True)
    assert host.report()['changed']
    assert publish_requests.state(hostname).publisher == host.publisher.id
    host.placement.taken()
    return host


@pytest.fixture
def other_conductor(host, conf):
    client = _client(conf)
    publisher = publishing.Publisher(
        [sink_mod.PlacementSink(client, conf, cache_providers=True)])
    return manager_mod.ConductorManager(
        'cond2', after_report=publisher.publish_host, publisher=publisher)


def _report(conductor, host, function_id):
    """The host's report with region0 holding ``function_id``, applied by
    ``conductor``."""
    entry = host.entry()
    entry['devices'][0]['deployables'][0]['function_id'] = function_id
    ack = conductor.report(context.get_admin_context(), host.hostname,
                           [entry])
    assert ack['changed']


def _listed_tree(log):
    return any(m == 'GET' and 'in_tree=' in url for m, url in log)


def test_the_last_publisher_writes_a_change_without_reading(host):
    _report(host.conductor, host, FUNCTIONS[0])

    rp = {name: rp for rp, name in host.regions().items()}['region0']
    assert host.placement.taken() == [
        ('PUT', '/traits/%s' % _trait(FUNCTIONS[0])),
        ('PUT', '/resource_providers/%s/traits' % rp)]
    assert _trait(FUNCTIONS[0]) in host.traits()['region0']
    assert publish_requests.pending() == {}


def test_a_change_published_by_another_conductor_in_between_is_read(
        host, other_conductor):
    # The other conductor publishes a change: it serves the host now.
    _report(other_conductor, host, FUNCTIONS[0])
    assert publish_requests.state(host.hostname).publisher == \
        other_conductor.publisher.id
    assert _trait(FUNCTIONS[0]) in host.traits()['region0']
    host.placement.taken()
    # Back to the card's own function, on the first conductor: what it
    # remembers is what the DB wants now, not what Placement has.
    # Trusted, it would write nothing.
    assert host.report()['changed']

    assert _listed_tree(host.placement.taken())
    assert _trait(FUNCTIONS[0]) not in host.traits()['region0']
    assert publish_requests.state(host.hostname).publisher == \
        host.publisher.id


def test_a_publish_that_died_before_serving_makes_it_read(
        host, other_conductor):
    # The other conductor writes its change to Placement and dies before
    # it serves the request: nothing says it published the host.
    dying = manager_mod.ConductorManager(
        'dying', after_report=other_conductor.publisher.publish)
    _report(dying, host, FUNCTIONS[0])
    assert _trait(FUNCTIONS[0]) in host.traits()['region0']
    host.placement.taken()
    # Back to the card's own function: two requests pending.
    assert host.report()['changed']

    assert _listed_tree(host.placement.taken())
    assert _trait(FUNCTIONS[0]) not in host.traits()['region0']
    assert publish_requests.pending() == {}


def test_a_guarded_round_is_not_read_again(
        host, other_conductor, monkeypatch):
    # The last publisher writes the host from what it remembers; then a
    # change commits and another conductor publishes it. Every write of
    # the round carried a generation known before the database was read:
    # no second read, and Placement has the change (its own publisher's).
    sink = host.publisher.sinks[0]
    sync, known = sink.reporter.sync, []

    def sync_then_change(*args, **kwargs):
        report = sync(*args, **kwargs)
        known.append(kwargs['known'])
        if len(known) == 1:
            _report(other_conductor, host, FUNCTIONS[0])
            host.placement.taken()
        return report
    monkeypatch.setattr(sink.reporter, 'sync', sync_then_change)

    result = sink.publish_known(host.hostname)

    assert result.converged and result.report.guarded
    assert known == [True] and host.placement.taken() == []
    assert _trait(FUNCTIONS[0]) in host.traits()['region0']


def test_a_write_from_an_older_read_than_placement_has_is_refused(
        host, other_conductor, monkeypatch):
    """The point of conflict: the last publisher reads the host, then a
    newer change commits and another conductor writes it to Placement,
    then the first writes what it read. Its remembered generation is
    refused (409), it reads the tree and the host again, and Placement
    keeps the newer change."""
    dying = manager_mod.ConductorManager('dying')   # commits, publishes not
    _report(dying, host, FUNCTIONS[0])
    sink = host.publisher.sinks[0]
    load, reads = sink_mod.devices_db.load_inventory, []

    def read_then_newer_change(*args, **kwargs):
        inventory = load(*args, **kwargs)
        reads.append(1)
        if len(reads) == 1:
            _report(other_conductor, host, FUNCTIONS[1])
            host.placement.taken()
        return inventory
    monkeypatch.setattr(sink_mod.devices_db, 'load_inventory',
                        read_then_newer_change)

    result = sink.publish_known(host.hostname)

    assert result.converged and not result.report.guarded
    rp = {name: rp for rp, name in host.regions().items()}['region0']
    log = host.placement.taken()
    assert log[1] == ('PUT', '/resource_providers/%s/traits' % rp)
    assert _listed_tree(log[2:])
    traits = host.traits()['region0']
    assert _trait(FUNCTIONS[1]) in traits
    assert _trait(FUNCTIONS[0]) not in traits


def _someone_else_adds_a_trait(host, rp):
    """A write to ``rp`` not by us: its generation moves on. The URL of
    its traits."""
    url = '/resource_providers/%s/traits' % rp
    have = host.placement.get(url)
    host.placement.put('/traits/CUSTOM_SOMEONE_ELSE')
    host.placement.put(url, {
        'resource_provider_generation': have['resource_provider_generation'],
        'traits': have['traits'] + ['CUSTOM_SOMEONE_ELSE']})
    host.placement.taken()
    return url


def test_placement_changed_behind_its_back_is_read_again(host):
    rp = {name: rp for rp, name in host.regions().items()}['region0']
    url = _someone_else_adds_a_trait(host, rp)

    _report(host.conductor, host, FUNCTIONS[0])

    log = host.placement.taken()
    # The remembered generation is refused (409); the tree is read.
    assert log[:2] == [('PUT', '/traits/%s' % _trait(FUNCTIONS[0])),
                       ('PUT', url)]
    assert _listed_tree(log[2:])
    assert _trait(FUNCTIONS[0]) in host.traits()['region0']
    assert publish_requests.pending() == {}


def test_a_provider_deleted_behind_its_back_is_made_again(host):
    rp = {name: rp for rp, name in host.regions().items()}['region0']
    host.placement.delete('/resource_providers/%s' % rp)
    host.placement.taken()

    _report(host.conductor, host, FUNCTIONS[0])

    log = host.placement.taken()
    # The remembered provider is gone (404); the tree is read, and the
    # region made again with its inventory and the new function.
    assert log[:2] == [('PUT', '/traits/%s' % _trait(FUNCTIONS[0])),
                       ('PUT', '/resource_providers/%s/traits' % rp)]
    assert _listed_tree(log[2:])
    assert ('POST', '/resource_providers') in log
    assert _trait(FUNCTIONS[0]) in host.traits()['region0']
    assert host.reserved()['region0'] == {
        'FPGA': 0, 'CUSTOM_FPGA_LOCAL_MEMORY_MB': 0}
    assert publish_requests.pending() == {}


# --- the providers' records: another conductor reads the listing only -----

def _provider_reads(log):
    """GETs of one provider's inventories or traits."""
    return [url for m, url in log if m == 'GET' and
            url.endswith(('/inventories', '/traits'))]


def _recorded():
    with session.reader() as s:
        return {row.rp_uuid: row.generation
                for row in s.scalars(sa.select(models.PlacementProvider))}


def test_every_provider_is_recorded_at_its_generation(host):
    listed = {rp['uuid']: rp['generation'] for rp in host.placement.get(
        '/resource_providers?in_tree=%s' % host.root)['resource_providers']}
    recorded = _recorded()
    # Ours, at the generation Placement lists; the compute node is not.
    assert recorded == {u: g for u, g in listed.items() if u != host.root}
    assert set(host.regions()) < set(recorded)


def test_another_conductor_knows_the_providers_from_their_records(
        host, other_conductor):
    _report(other_conductor, host, FUNCTIONS[0])

    log = other_conductor.publisher.sinks[0].client.taken()
    rp = {name: rp for rp, name in host.regions().items()}['region0']
    # Its first publish of the host: the compute node by name, the tree's
    # listing, the change. No provider read: they were recorded at the
    # generations listed (two GETs each before, 50 for this card).
    assert _provider_reads(log) == []
    assert _listed_tree(log)
    assert ('PUT', '/resource_providers/%s/traits' % rp) in log
    assert _trait(FUNCTIONS[0]) in host.traits()['region0']
    # And what it wrote is recorded for the next one.
    generation = host.placement.get('/resource_providers/%s' % rp)[
        'generation']
    assert _recorded()[rp] == generation


def test_a_provider_changed_behind_the_records_is_read(host,
                                                       other_conductor):
    rp = {name: rp for rp, name in host.regions().items()}['region0']
    url = _someone_else_adds_a_trait(host, rp)

    _report(other_conductor, host, FUNCTIONS[0])

    log = other_conductor.publisher.sinks[0].client.taken()
    # The listed generation is not the recorded one: that provider alone
    # is read, then written at the generation read (ours: its traits are
    # the region's, the stranger's gone).
    assert sorted(_provider_reads(log)) == ['%s/inventories' % url[:-7],
                                            url]
    traits = host.traits()['region0']
    assert _trait(FUNCTIONS[0]) in traits
    assert 'CUSTOM_SOMEONE_ELSE' not in traits


def test_a_deleted_provider_loses_its_record(host):
    rp = {name: rp for rp, name in host.regions().items()}['region1']
    assert rp in _recorded()
    with session.writer() as s:
        s.execute(sa.update(models.Deployable.__table__)
                  .where(models.Deployable.__table__.c.rp_uuid == rp)
                  .values(name='renamed'))
    # The host's next publish wants another region provider: the old one
    # is deleted in Placement and its record dropped.
    host.publisher.publish_host(host.hostname)
    assert host.placement.taken().count(
        ('DELETE', '/resource_providers/%s' % rp)) == 1
    assert rp not in _recorded()


def test_records_are_off_while_old_conductors_may_run(host, conf):
    # [conductor]trust_own_publish = false (a rolling upgrade from before
    # revision 0009): the providers are read, as before the records.
    conf.set_override('trust_own_publish', False, group='conductor')
    client = _client(conf)
    publisher = publishing.Publisher(
        [sink_mod.PlacementSink(client, conf, cache_providers=True)],
        trust_own_publish=False)
    cautious = manager_mod.ConductorManager(
        'cond3', after_report=publisher.publish_host, publisher=publisher)

    _report(cautious, host, FUNCTIONS[0])

    assert len(_provider_reads(client.taken())) == 2 * len(_recorded())


def test_a_publish_read_before_anothers_write_never_writes_it_back(
        host, other_conductor, monkeypatch):
    """The first conductor reads the host (region0 back to its own
    function), the other one then writes a newer state (FUNCTIONS[1]) to
    the database and Placement, and only then does the first one write:
    refused on the generation, it must write what the database says now,
    never its older read (Placement would take the newer function away
    until the first conductor's freshness check put it back)."""
    _report(host.conductor, host, FUNCTIONS[0])
    # The tree listed, then the rows read: the other conductor writes
    # between that read and this one's write.
    host.publisher.trust_own_publish = False
    reporter = host.publisher.sinks[0].reporter
    sync = reporter.sync
    written = []

    def sync_where_the_other_writes_after_the_first_read(
            hostname, read_devices, **kwargs):
        def read_then_the_other_writes():
            devices = read_devices()
            if not written:
                written.append('the other conductor')
                _report(other_conductor, host, FUNCTIONS[1])
            return devices
        return sync(hostname, read_then_the_other_writes, **kwargs)

    monkeypatch.setattr(reporter, 'sync',
                        sync_where_the_other_writes_after_the_first_read)
    accepted = []
    request = host.placement.request

    def noting_accepted(method, url, body=None, ok=(200, 201, 204)):
        answer = request(method, url, body, ok)
        accepted.append((method, url, body))
        return answer

    monkeypatch.setattr(host.placement, 'request', noting_accepted)
    rp = {name: rp for rp, name in host.regions().items()}['region0']

    host.report()

    assert written == ['the other conductor']
    assert [body for method, url, body in accepted
            if (method, url) == ('PUT', '/resource_providers/%s/traits'
                                 % rp)
            and _trait(FUNCTIONS[1]) not in body['traits']] == []
    assert _trait(FUNCTIONS[1]) in host.traits()['region0']
