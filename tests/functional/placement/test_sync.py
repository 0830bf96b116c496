"""PlacementSink against the real openstack-placement server."""
import logging
import uuid

import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.placement import client as client_mod
from cyborg_lite.placement import sink as sink_mod
from cyborg_lite.placement import tree
from tests.functional.placement import db_rows


def _tree(client, hostname):
    """{name: (parent name, {rc: (total, reserved)}, traits)} under host."""
    root = client.get('/resource_providers?name=%s' % hostname)[
        'resource_providers'][0]['uuid']
    rps = client.get('/resource_providers?in_tree=%s' % root)[
        'resource_providers']
    names = {rp['uuid']: rp['name'] for rp in rps}
    result = {}
    for rp in rps:
        if rp['uuid'] == root:
            continue
        url = '/resource_providers/%s' % rp['uuid']
        inv = client.get(url + '/inventories')['inventories']
        traits = client.get(url + '/traits')['traits']
        result[rp['name']] = (
            names[rp['parent_provider_uuid']],
            {rc: (i['total'], i['reserved']) for rc, i in inv.items()},
            set(traits))
    return result


def _generations(client, hostname):
    root = client.get('/resource_providers?name=%s' % hostname)[
        'resource_providers'][0]['uuid']
    return {rp['name']: rp['generation'] for rp in client.get(
        '/resource_providers?in_tree=%s' % root)['resource_providers']}


class RecordingClient(client_mod.PlacementClient):
    """Records requests as (method, what): the last path segment that is
    not a uuid (``resource_providers``, ``inventories``, ...), or
    ``new_traits`` / ``new_resource_classes`` for a custom name made."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kinds = []

    def request(self, method, url, body=None, ok=(200, 201, 204)):
        try:
            return super().request(method, url, body, ok)
        finally:
            parts = [p for p in url.split('?')[0].split('/')
                     if p and not _is_uuid(p)]
            if parts[0] in ('traits', 'resource_classes'):
                # PUT /traits/CUSTOM_X: a custom name made.
                parts = ['new_' + parts[0]]
            self.kinds.append((method, parts[-1]))


def _is_uuid(text):
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _update_device(dev_uuid, **values):
    with session.writer() as s:
        s.execute(sa.update(models.Device).where(
            models.Device.uuid == dev_uuid).values(**values))


def _delete_device(dev_uuid):
    with session.writer() as s:
        s.execute(sa.delete(models.Device).where(
            models.Device.uuid == dev_uuid))


def test_first_sync_creates_the_tree(placement, make_sync, inspector,
                                     hostname):
    dev = db_rows.add_fpga(hostname)
    db_rows.add_gpu(hostname, mig_slices=7)
    sync = make_sync(placement)

    result = sync.publish(hostname)

    assert result.converged, result.error
    fpga = '%s_0000:5e:00.0' % hostname
    gpu = '%s_0000:3b:00.0' % hostname
    got = _tree(inspector(placement), hostname)
    assert set(got) == {fpga, fpga + '_region0', fpga + '_region1', gpu,
                        gpu + '_mig-1g.10gb'}
    assert got[fpga] == (hostname, {}, {
        'OWNER_CYBORG', 'CUSTOM_FPGA_INTEL', 'CUSTOM_PROGRAMMABLE'})
    parent, inv, traits = got[fpga + '_region0']
    assert parent == fpga
    assert inv == {'FPGA': (1, 0), 'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 0)}
    assert {'CUSTOM_FUNCTION_ID_F00D', 'CUSTOM_FPGA_INTEL_ARRIA10',
            'CUSTOM_FPGA_REGION_9346116D_A52D_5CA8_B06A_698B5B9B4FF3'} <= \
        traits
    assert got[gpu][1] == {}
    assert got[gpu + '_mig-1g.10gb'][1] == {'VGPU': (7, 0)}
    with session.reader() as s:
        stored = s.scalar(sa.select(models.Device.rp_uuid).where(
            models.Device.uuid == dev))
    assert stored == tree.rp_uuid(fpga)


def test_unchanged_sync_makes_no_writes(placement, make_sync, hostname):
    db_rows.add_fpga(hostname)
    sync = make_sync(placement)
    assert sync.publish(hostname).converged
    first = dict(sync.client.counts)
    sync.client.reset_counts()

    result = sync.publish(hostname)

    assert result.converged
    assert result.report.created == result.report.updated == []
    assert sync.client.writes == 0
    # Name lookup, the tree listing, inventories + traits of 3 providers
    # (no listing of our providers: the tree holds only the compute node
    # and the ones wanted).
    assert dict(sync.client.counts) == {'GET': 8}
    # Compute node, 3 providers, and one POST /reshaper for the two
    # regions' inventories, which Placement's default policy refuses to
    # an admin without the service role (then one PUT each).
    assert first['POST'] == 5


def test_new_function_changes_only_that_regions_traits(
        placement, make_sync, inspector, hostname):
    db_rows.add_fpga(hostname)
    sync = make_sync(placement)
    sync.publish(hostname)
    before = _generations(inspector(placement), hostname)
    with session.writer() as s:
        s.execute(sa.update(models.Deployable).where(
            models.Deployable.name.like('%_region0')).where(
                models.Deployable.function_id == 'f00d').values(
                    function_id='beef'))
    sync.client.reset_counts()

    result = sync.publish(hostname)

    region0 = '%s_0000:5e:00.0_region0' % hostname
    assert result.report.updated == [region0]
    # The new trait is created, then the region's traits are replaced.
    assert sync.client.writes == 2 and sync.client.counts['PUT'] == 2
    after = _generations(inspector(placement), hostname)
    assert {n for n in after if after[n] != before[n]} == {region0}
    traits = _tree(inspector(placement), hostname)[region0][2]
    assert 'CUSTOM_FUNCTION_ID_BEEF' in traits
    assert 'CUSTOM_FUNCTION_ID_F00D' not in traits


def test_unhealthy_device_is_reserved(placement, make_sync, inspector,
                                      hostname):
    dev = db_rows.add_fpga(hostname)
    sync = make_sync(placement)
    sync.publish(hostname)
    _update_device(dev, health='unhealthy')

    assert sync.publish(hostname).converged

    got = _tree(inspector(placement), hostname)
    invs = [i for _p, inv, _t in got.values() for i in inv.values()]
    assert invs and all(reserved == total for total, reserved in invs)
    _update_device(dev, health='healthy')
    sync.publish(hostname)
    got = _tree(inspector(placement), hostname)
    assert all(reserved == 0 for _p, inv, _t in got.values()
               for _total, reserved in inv.values())


def test_removed_device_loses_its_providers(placement, make_sync, inspector,
                                            hostname):
    fpga = db_rows.add_fpga(hostname)
    db_rows.add_gpu(hostname)
    sync = make_sync(placement)
    sync.publish(hostname)
    _delete_device(fpga)

    result = sync.publish(hostname)

    assert result.converged
    name = '%s_0000:5e:00.0' % hostname
    # Children first: Placement refuses to delete a parent.
    assert result.report.deleted[-1] == name
    assert set(result.report.deleted) == {name, name + '_region0',
                                          name + '_region1'}
    assert set(_tree(inspector(placement), hostname)) == {
        '%s_0000:3b:00.0' % hostname}


def _allocate(client, rp_uuid, consumer):
    client.put('/allocations/%s' % consumer, {
        'allocations': {rp_uuid: {'resources': {'FPGA': 1}}},
        'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})


def test_removed_device_still_allocated_is_held_then_deleted(
        placement, make_sync, inspector, hostname, caplog):
    fpga = db_rows.add_fpga(hostname)
    sync = make_sync(placement)
    sync.publish(hostname)
    name = '%s_0000:5e:00.0' % hostname
    peek = inspector(placement)
    consumer = str(uuid.uuid4())
    _allocate(peek, tree.rp_uuid(name + '_region0'), consumer)
    _delete_device(fpga)

    with caplog.at_level(logging.WARNING):
        result = sync.publish(hostname)

    assert result.ok and not result.converged
    assert result.report.deleted == [name + '_region1']
    assert set(result.report.held) == {name, name + '_region0'}
    assert 'still holds allocations' in caplog.text
    got = _tree(peek, hostname)
    assert got[name + '_region0'][1] == {
        'FPGA': (1, 1), 'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 4096)}
    assert hostname in sync.pending_hosts()

    peek.delete('/allocations/%s' % consumer)
    sync.clock.now += 3600
    (retried,) = sync.retry_pending()

    assert retried.converged
    assert set(retried.report.deleted) == {name, name + '_region0'}
    assert _tree(peek, hostname) == {}
    assert sync.pending_hosts() == {}


class _RacingClient(client_mod.PlacementClient):
    """Lets another writer bump a generation just before our first PUT."""

    rival = None

    def request(self, method, url, body=None, ok=(200, 201, 204)):
        if method == 'PUT' and url.endswith('/traits') and self.rival:
            rival, self.rival = self.rival, None
            rival.put('/traits/CUSTOM_SOMEONE_ELSE')
            gen = rival.get(url)['resource_provider_generation']
            rival.put(url, {'resource_provider_generation': gen,
                            'traits': ['CUSTOM_SOMEONE_ELSE']})
        return super().request(method, url, body, ok)


def test_generation_conflict_is_reread_and_retried(
        placement, make_sync, inspector, hostname):
    db_rows.add_fpga(hostname)
    sync = make_sync(placement, client_cls=_RacingClient)
    sync.publish(hostname)
    with session.writer() as s:
        s.execute(sa.update(models.Deployable).where(
            models.Deployable.function_id == 'f00d').values(
                function_id='cafe'))
    sync.client.rival = inspector(placement)

    result = sync.publish(hostname)

    assert result.converged
    assert result.report.attempts == 2
    region0 = '%s_0000:5e:00.0_region0' % hostname
    traits = _tree(inspector(placement), hostname)[region0][2]
    assert 'CUSTOM_FUNCTION_ID_CAFE' in traits
    assert 'CUSTOM_SOMEONE_ELSE' not in traits


def test_placement_outage_is_retried_until_it_converges(
        own_placement, make_sync, inspector, hostname):
    db_rows.add_fpga(hostname)
    sync = make_sync(own_placement)
    assert sync.publish(hostname).converged
    own_placement.stop()
    db_rows.add_gpu(hostname)

    down = sync.publish(hostname)

    assert not down.ok and 'unavailable' in down.error
    assert hostname in sync.pending_hosts()
    # The report itself is in the DB whatever Placement does.
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(
            models.Device).where(models.Device.hostname == hostname)) == 2
    assert sync.retry_pending() == []  # backoff not over yet
    sync.clock.now += 1.0
    assert [r.ok for r in sync.retry_pending()] == [False]
    assert sync.pending_hosts()[hostname] == sync.clock.now + 2.0

    own_placement.start()
    sync.clock.now += 2.0
    (back,) = sync.retry_pending()

    assert back.converged
    assert back.report.created == ['%s_0000:3b:00.0' % hostname]
    assert sync.pending_hosts() == {}
    assert '%s_0000:3b:00.0' % hostname in _tree(inspector(own_placement),
                                                 hostname)


def test_missing_compute_node_is_not_created_unless_allowed(
        placement, make_sync, inspector, conf, hostname):
    db_rows.add_fpga(hostname)
    sync = make_sync(placement)
    conf.set_override('create_compute_node_rp', False, group='placement')

    result = sync.publish(hostname)

    assert not result.ok and 'create_compute_node_rp' in result.error
    assert hostname in sync.pending_hosts()
    assert inspector(placement).get('/resource_providers?name=%s' % hostname)[
        'resource_providers'] == []


def test_existing_compute_node_is_used(placement, make_sync, inspector, conf,
                                       hostname):
    nova_uuid = str(uuid.uuid4())
    inspector(placement).post('/resource_providers',
                              {'name': hostname, 'uuid': nova_uuid})
    db_rows.add_gpu(hostname)
    sync = make_sync(placement)
    conf.set_override('create_compute_node_rp', False, group='placement')

    result = sync.publish(hostname)

    assert result.converged
    assert result.report.root_uuid == nova_uuid
    assert _tree(inspector(placement), hostname)[
        '%s_0000:3b:00.0' % hostname][1] == {'PGPU': (1, 0)}


def test_from_conf_reaches_placement(placement, sqlite_db, configured,
                                    hostname):
    conf = configured(placement)
    db_rows.add_gpu(hostname)
    sync = sink_mod.PlacementSink.from_conf(conf)

    assert sync.publish(hostname).converged
    assert sync.client.counts['POST'] == 2


def test_new_hosts_inventories_are_one_reshape(reshaping_placement,
                                               make_sync, inspector,
                                               hostname):
    db_rows.add_fpga(hostname)
    db_rows.add_gpu(hostname, mig_slices=7)
    sync = make_sync(reshaping_placement, client_cls=RecordingClient)

    assert sync.publish(hostname).converged

    kinds = sync.client.kinds
    # The minimum Placement 1.39 allows for a new host: the compute node
    # looked up by name and made (its tree is then known: no listing), a
    # POST per provider, a traits PUT per provider (no bulk form of
    # either), and the inventories of the three that have some (two
    # regions, one MIG slice type) in one reshape. Custom traits and
    # resource classes are made once per name, not per host.
    assert sorted(k for k in kinds if not k[1].startswith('new_')) == \
        sorted([('GET', 'resource_providers'), ('POST', 'reshaper')] +
               [('POST', 'resource_providers')] * 6 +
               [('PUT', 'traits')] * 5)
    fpga = '%s_0000:5e:00.0' % hostname
    got = _tree(inspector(reshaping_placement), hostname)
    assert got[fpga + '_region0'][1] == {
        'FPGA': (1, 0), 'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 0)}
    assert got['%s_0000:3b:00.0_mig-1g.10gb' % hostname][1] == {
        'VGPU': (7, 0)}
    # Unchanged since: one more sync writes nothing.
    sync.client.reset_counts()
    assert sync.publish(hostname).converged
    assert sync.client.writes == 0


def test_reshaped_providers_are_recorded_at_placements_generation(
        reshaping_placement, configured, inspector, sqlite_db, hostname):
    # POST /reshaper answers without generations: the reporter counts
    # them (RESHAPE_GENERATION_STEP). Recorded for every conductor, a
    # wrong count would stand for another generation's traits.
    from cyborg_lite.db import placement_providers
    db_rows.add_fpga(hostname)
    db_rows.add_gpu(hostname, mig_slices=7)
    conf = configured(reshaping_placement)
    sync = sink_mod.PlacementSink.from_conf(conf)
    assert sync.publish(hostname).converged

    client = inspector(reshaping_placement)
    root = client.get('/resource_providers?name=%s' % hostname)[
        'resource_providers'][0]['uuid']
    listed = {rp['uuid']: rp['generation'] for rp in client.get(
        '/resource_providers?in_tree=%s' % root)['resource_providers']
        if rp['uuid'] != root}
    recorded = placement_providers.load(listed)
    assert {u: r.generation for u, r in recorded.items()} == listed
    for rp_uuid, record in recorded.items():
        url = '/resource_providers/%s' % rp_uuid
        assert record.traits == set(client.get(url + '/traits')['traits'])
        assert record.inventories == client.get(url + '/inventories')[
            'inventories']


def test_refused_reshape_falls_back_once(placement, make_sync, inspector,
                                        hostname):
    db_rows.add_fpga(hostname)
    sync = make_sync(placement, client_cls=RecordingClient)
    assert sync.publish(hostname).converged
    assert sync.client.kinds.count(('POST', 'reshaper')) == 1
    assert sync.client.kinds.count(('PUT', 'inventories')) == 2

    other = 'host-%s' % uuid.uuid4().hex[:8]
    db_rows.add_fpga(other)
    sync.client.kinds.clear()
    assert sync.publish(other).converged
    # Not asked again: Placement said no.
    assert ('POST', 'reshaper') not in sync.client.kinds
    assert sync.client.kinds.count(('PUT', 'inventories')) == 2
    got = _tree(inspector(placement), other)
    assert got['%s_0000:5e:00.0_region1' % other][1] == {
        'FPGA': (1, 0), 'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 0)}


def _change_function_during_first_write(monkeypatch, sync):
    """Commit a new function of region0 right after the publish's first
    write to Placement: what a conductor publishing from a newer read
    may have written before us."""
    real = sync.reporter.sync
    calls = []

    def sync_then_change(*args, **kwargs):
        report = real(*args, **kwargs)
        calls.append(kwargs.get('known'))
        if len(calls) == 1:
            with session.writer() as s:
                s.execute(sa.update(models.Deployable).where(
                    models.Deployable.name.like('%_region0')).values(
                        function_id='beef'))
        return report
    monkeypatch.setattr(sync.reporter, 'sync', sync_then_change)
    return calls


def test_a_host_changed_while_published_is_written_again(
        placement, make_sync, inspector, hostname, monkeypatch):
    db_rows.add_fpga(hostname)
    sync = make_sync(placement)
    assert sync.publish(hostname).converged
    calls = _change_function_during_first_write(monkeypatch, sync)

    result = sync.publish(hostname)

    assert result.converged and not result.report.stale
    assert len(calls) == 2
    traits = _tree(inspector(placement), hostname)[
        '%s_0000:5e:00.0_region0' % hostname][2]
    assert 'CUSTOM_FUNCTION_ID_BEEF' in traits
    assert 'CUSTOM_FUNCTION_ID_F00D' not in traits


def test_a_host_unchanged_while_published_is_read_not_rebuilt(
        placement, make_sync, hostname, monkeypatch):
    """The read after the write finds the same rows: the inventory read
    before stands, no views or tree are built again."""
    from cyborg_lite.db import devices as devices_db
    from cyborg_lite.inventory import views as host_inventory
    db_rows.add_fpga(hostname)
    sync = make_sync(placement)
    assert sync.publish(hostname).converged
    builds, reads = [], []
    views = host_inventory._views
    host_rows = devices_db.host_rows
    monkeypatch.setattr(host_inventory, '_views',
                        lambda rows: builds.append(1) or views(rows))
    monkeypatch.setattr(devices_db, 'host_rows',
                        lambda *a: reads.append(1) or host_rows(*a))
    trees = []
    build_tree = tree.build_tree
    monkeypatch.setattr(sink_mod.tree_mod, 'build_tree',
                        lambda *a: trees.append(1) or build_tree(*a))

    result = sync.publish(hostname)

    assert result.converged and not result.report.stale
    # Rows read after the tree's listing (reporter.sync
    # ``read_devices``) and after the write; built once.
    assert (len(reads), len(builds)) == (2, 1)
    assert len(trees) == 1    # the reporter's; none to compare
