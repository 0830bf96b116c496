"""Who may do what with bitstreams and programming jobs: admin, manager
and member of project A, member of project B, anonymous; private (A's)
against public (admin's) bitstreams."""
import pytest

from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import programming_jobs as jobs_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import ANONYMOUS
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of

PERSONAS = {'admin': ADMIN, 'manager_a': MANAGER_A, 'member_a': MEMBER_A,
            'member_b': MEMBER_B, 'anonymous': ANONYMOUS}


class _Conductor(fx.RecordingConductor):
    """Records the cancel the API asks for, and does it."""

    def cancel_program(self, ctxt, job_uuid):
        self.calls.append(('cancel_program', ctxt.project_id, job_uuid))
        return jobs_db.cancel(job_uuid)


@pytest.fixture
def conductor():
    return _Conductor()


@pytest.fixture
def world(app):
    """A's private active bitstream, admin's public one, a job of A."""
    private = bh.create_active(app, MEMBER_A)['uuid']
    public = bh.create_active(app, ADMIN, visibility='public')['uuid']
    region = fx.add_deployable(fx.add_device())
    job = jobs_db.create_job(region.id, bitstreams_db.get(private).id,
                             hostname='host1', project_id='project-a')
    return {'private': private, 'public': public, 'job': job.uuid}


_SEEN_BY_A = dict(admin=200, manager_a=200, member_a=200, member_b=404,
                  anonymous=403)
_SEEN_BY_ALL = dict(admin=200, manager_a=200, member_a=200, member_b=200,
                    anonymous=403)
READS = [
    ('/v2/bitstreams', _SEEN_BY_ALL),
    ('/v2/bitstreams/{private}', _SEEN_BY_A),
    ('/v2/bitstreams/{private}/file', _SEEN_BY_A),
    ('/v2/bitstreams/{public}', _SEEN_BY_ALL),
    ('/v2/bitstreams/{public}/file', _SEEN_BY_ALL),
    ('/v2/programs', _SEEN_BY_ALL),
    ('/v2/programs/{job}', _SEEN_BY_A),
]


@pytest.mark.parametrize('template,expected', READS)
def test_reads(app, world, template, expected):
    for persona, status in expected.items():
        resp = app.get(template.format(**world),
                       headers=bh.h(PERSONAS[persona]), expect_errors=True)
        assert resp.status_int == status, (persona, resp.text)
        if status >= 400:
            assert error_of(resp)


def test_lists_show_only_what_the_caller_may_see(app, world):
    def listed(caller, resource):
        body = app.get('/v2/' + resource, headers=bh.h(caller)).json
        return sorted(item['uuid'] for item in body[resource])
    both = sorted([world['private'], world['public']])
    assert listed(ADMIN, 'bitstreams') == both
    assert listed(MEMBER_A, 'bitstreams') == both
    assert listed(MEMBER_B, 'bitstreams') == [world['public']]
    assert listed(ADMIN, 'programs') == [world['job']]
    assert listed(MEMBER_A, 'programs') == [world['job']]
    assert listed(MEMBER_B, 'programs') == []


@pytest.mark.parametrize('persona,status', [
    ('admin', 201), ('manager_a', 201), ('member_a', 201),
    ('member_b', 201), ('anonymous', 403)])
def test_create_private(app, persona, status):
    bh.create(app, PERSONAS[persona], status=status)


@pytest.mark.parametrize('persona,status', [
    ('admin', 201), ('manager_a', 403), ('member_a', 403),
    ('member_b', 403), ('anonymous', 403)])
def test_create_public_is_admin_only(app, persona, status):
    bh.create(app, PERSONAS[persona], status=status, visibility='public')


@pytest.mark.parametrize('persona,on_private,on_public', [
    ('member_b', 404, 403), ('anonymous', 403, 403),
    ('member_a', 409, 403), ('admin', 409, 204)])
def test_delete(app, world, persona, on_private, on_public):
    # A's bitstream has a job, so even its owners get 409, not 204.
    headers = bh.h(PERSONAS[persona])
    app.delete('/v2/bitstreams/' + world['private'], headers=headers,
               status=on_private)
    app.delete('/v2/bitstreams/' + world['public'], headers=headers,
               status=on_public)


@pytest.mark.parametrize('persona,status', [
    ('member_b', 404), ('anonymous', 403), ('manager_a', 200)])
def test_cancel(app, conductor, world, persona, status):
    resp = app.post('/v2/programs/%s/cancel' % world['job'],
                    headers=bh.h(PERSONAS[persona]), status=status)
    if status == 200:
        assert resp.json['state'] == 'cancelled'
        assert conductor.calls == [('cancel_program', 'project-a',
                                    world['job'])]
    else:
        assert conductor.calls == []
