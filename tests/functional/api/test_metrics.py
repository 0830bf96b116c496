"""GET /metrics of the API: what Prometheus reads.

The text must parse with prometheus_client's own parser and pass
``promtool check metrics`` (Debian's prometheus package; skipped without
it, except under CI=true); every device and region has its series; a
bind shows its holder in the next scrape and an unbind takes it away;
requests are counted by their declared route template."""
import collections

from prometheus_client import parser
import sqlalchemy as sa

from cyborg_lite.api import device_metrics
from cyborg_lite.api import metrics as api_metrics
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import k8s_claims
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.kubernetes import names as k8s_names
from tests.functional.api import conftest as api
from tests.prometheus_text import promtool_check
from tests.prometheus_text import samples

ADMIN = api.ADMIN
UUID = '00000000-0000-4000-8000-000000000000'


def scrape(app, headers=ADMIN):
    resp = app.get('/metrics', headers=headers)
    assert resp.content_type == 'text/plain'
    return resp.text


def _bound_region(app):
    """A device with a region and a free handle; an ARQ bound to it as the
    conductor binds (db/arqs.begin_binds and finish_bind)."""
    device = api.add_device()
    region = api.add_deployable(device)
    api.add_handle(region, in_use=False)
    api.create_profile(app, ADMIN)
    arq = api.create_arqs(app, ADMIN).json['arqs'][0]['uuid']
    started, refused = arq_binds.begin_binds({arq: {
        'hostname': 'host1', 'device_rp_uuid': region.rp_uuid,
        'instance_uuid': UUID}}, 'conductor-1')
    assert not refused
    return device, region, arq, started[0]


def test_the_text_parses_and_passes_promtool(app):
    device = api.add_device()
    api.add_deployable(device)
    app.get('/v2/devices', headers=ADMIN)
    text = scrape(app)
    families = {f.name for f in parser.text_string_to_metric_families(text)}
    assert {'cyborg_lite_api_requests', 'cyborg_lite_device_info',
            'cyborg_lite_region_state', 'cyborg_lite_device_holder_info',
            'cyborg_lite_bind_duration_seconds'} <= families
    promtool_check(text)


def test_every_device_and_region_has_its_series(app):
    devices = [api.add_device(hostname='host%d' % i) for i in range(3)]
    regions = [api.add_deployable(d) for d in devices for _ in range(2)]
    api.add_device(hostname='host9', status='maintaining')
    text = scrape(app)
    info = {s['device'] for s, _v in samples(text, 'cyborg_lite_device_info')}
    assert {d.uuid for d in devices} <= info and len(info) == 4
    for name in ('cyborg_lite_device_health',
                 'cyborg_lite_device_maintenance',
                 'cyborg_lite_device_available'):
        assert len(samples(text, name)) == 4, name
    state = {s['region']: s['state']
             for s, _v in samples(text, 'cyborg_lite_region_state')}
    assert state == {r.uuid: 'available' for r in regions}
    maintaining = {s['device']: v for s, v in samples(
        text, 'cyborg_lite_device_maintenance')}
    assert sorted(maintaining.values()) == [0, 0, 0, 1]


def test_health_of_devices_and_regions_and_the_identity_to_join_on(app):
    device = api.add_device(identity='0000:5e:00.0')
    regions = [api.add_deployable(device) for _ in range(2)]
    with session.writer() as s:
        s.execute(sa.update(models.Deployable).where(
            models.Deployable.id == regions[1].id).values(
                health='unhealthy', health_reason='port_errors 0x8'))
        s.execute(sa.update(models.Device).where(
            models.Device.id == device.id).values(health='degraded'))
    text = scrape(app)
    assert samples(text, 'cyborg_lite_region_health') == [
        ({'device': device.uuid, 'region': region.uuid, 'host': 'host1',
          'health': health}, 1.0)
        for region, health in zip(regions, ('healthy', 'unhealthy'))]
    assert samples(text, 'cyborg_lite_device_health') == [
        ({'device': device.uuid, 'host': 'host1', 'health': 'degraded'},
         1.0)]
    # The agent's readings (agent/health_metrics.py) join on host and
    # identity.
    [(info, _v)] = samples(text, 'cyborg_lite_device_info')
    assert (info['host'], info['identity']) == ('host1', '0000:5e:00.0')
    promtool_check(text)


def test_a_bind_shows_its_holder_at_once_and_an_unbind_removes_it(app):
    device, region, arq, started = _bound_region(app)
    assert samples(scrape(app), 'cyborg_lite_device_holder_info') == []
    arq_binds.finish_bind(started, region.id, region.uuid)
    holders = samples(scrape(app), 'cyborg_lite_device_holder_info')
    assert holders == [({'device': device.uuid, 'region': region.uuid,
                         'host': 'host1', 'project': 'admin-project',
                         'instance': UUID, 'namespace': '', 'pod': '',
                         'claim': ''},
                        1.0)]
    text = scrape(app)
    assert samples(text, 'cyborg_lite_region_in_use') == [
        ({'device': device.uuid, 'region': region.uuid, 'host': 'host1'},
         1.0)]
    promtool_check(text)
    arq_releases.unbind_all(arqs_db.ALL, [arq])
    text = scrape(app)
    assert samples(text, 'cyborg_lite_device_holder_info') == []
    assert samples(text, 'cyborg_lite_region_in_use')[0][1] == 0.0


def test_a_failed_bind_holds_nothing(app):
    _device, region, arq, started = _bound_region(app)
    arq_binds.finish_bind(started, region.id, region.uuid)
    # Bound -> BindFailed (the reaper, an error after Bound) frees the
    # handle but keeps the ARQ's region.
    arqs_db.transition(arq, 'BindFailed', error='lost')
    assert samples(scrape(app), 'cyborg_lite_device_holder_info') == []


def test_a_claim_reserved_for_many_pods_names_a_bounded_few(app):
    """A claim reserved for Kubernetes' most pods has a holder series for
    the first few of them, and one that counts them all."""
    device = api.add_device()
    region = api.add_deployable(device)
    api.add_handle(region, in_use=False)
    pods = ['trainer-%03d' % i for i in range(k8s_names.RESERVED_FOR_MAX)]
    k8s_claims.claim(region.id, UUID, 'team-a', 'train', 'fpga-0', 'p1',
                     pods=pods)
    text = scrape(app)
    shown = device_metrics.HOLDER_PODS_SHOWN
    assert 0 < shown < len(pods)
    assert [labels['pod'] for labels, _ in samples(
        text, 'cyborg_lite_device_holder_info')] == pods[:shown]
    assert samples(text, 'cyborg_lite_device_holder_pods') == [
        ({'device': device.uuid, 'region': region.uuid, 'host': 'host1',
          'namespace': 'team-a', 'claim': 'train'}, float(len(pods)))]
    promtool_check(text)


def _request_counts(app):
    return {(s['route'], s['method'], s['status']): v for s, v in samples(
        scrape(app), 'cyborg_lite_api_requests_total')}


def test_requests_are_counted_by_route_template_not_path(app):
    # NOTE: the counters are the process's; earlier tests counted too,
    # and an earlier app's waiting requests would be added up by its
    # timer during this test: add them up first.
    api_metrics.fold_all()
    before = collections.Counter(_request_counts(app))
    device = api.add_device()
    for _ in range(3):
        app.get('/v2/devices/%s' % device.uuid, headers=ADMIN)
    app.get('/v2/devices/%s' % UUID, headers=ADMIN, status=404)
    app.get('/v2/no/such/thing', headers=ADMIN, status=404)
    app.get('/v2/devices', headers=api.ANONYMOUS, status=403)
    after = _request_counts(app)
    counts = collections.Counter(after)
    counts.subtract(before)
    assert counts[('/v2/devices/{uuid}', 'GET', '200')] == 3
    assert counts[('/v2/devices/{uuid}', 'GET', '404')] == 1
    assert counts[('unmatched', 'GET', '404')] == 1
    assert counts[('/v2/devices', 'GET', '403')] == 1
    assert not any(device.uuid in route for route, _m, _s in after)


def test_only_an_admin_scrapes_unless_configured(app, api_conf, conductor):
    app.get('/metrics', headers=api.MEMBER_A, status=403)
    app.post('/metrics', headers=ADMIN, status=405)
    api_conf.set_override('api_unauthenticated', True, group='metrics')
    import webtest
    from cyborg_lite.api import deploy
    open_app = webtest.TestApp(deploy.loadapp(
        api_conf, conductor_factory=lambda: conductor))
    assert 'cyborg_lite_api_requests_total' in open_app.get(
        '/metrics', headers=api.ANONYMOUS).text


def test_metrics_off_is_a_404(app, api_conf, conductor):
    api_conf.set_override('enabled', False, group='metrics')
    import webtest
    from cyborg_lite.api import deploy
    off = webtest.TestApp(deploy.loadapp(
        api_conf, conductor_factory=lambda: conductor))
    off.get('/metrics', headers=ADMIN, status=404)
