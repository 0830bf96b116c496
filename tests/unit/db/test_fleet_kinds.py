"""The explain's read (db/explain.snapshot: the kinds the database
groups, db/fleet_kinds, and the single regions read back for what an
answer shows) on each backend, over the oracle's generated fleet of
1,000 hosts (tests/unit/placement/test_explain.py) written into the
database: every group's funnel, blocking step and near misses agree
with the oracle, 100%, as the pure funnel's do."""
import json

from cyborg_lite.db import explain as explain_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session
from cyborg_lite.placement import explain
from tests.unit.placement import explain_fleet
from tests.unit.placement import test_explain as oracle

# One profile of every group: one read, one funnel for them all (an
# image is asked only by the group naming its bitstream).
GROUPS = [group for group, _images, _step in oracle.PROFILES]


def _explained(db):
    with session.core_writer() as conn:
        explain_fleet.write(oracle.FLEET, conn)
        conn.execute(models.DeviceProfile.__table__.insert().values(
            uuid='00000000-0000-4000-8000-000000000044', name='oracle',
            profile_json=json.dumps(GROUPS), created_at=models.utcnow()))

    def funnel(snapshot):
        return (explain.explain(snapshot.groups, snapshot.fleet,
                                images=oracle._images(explain_fleet.IMAGES)),
                snapshot.fleet)
    return explain_db.snapshot(pagination.ALL, 'oracle', None, funnel)


def test_every_answer_read_grouped_agrees_with_the_oracle(db):
    results, fleet = _explained(db)
    for result, (group, images, expected) in zip(results, oracle.PROFILES):
        _first, funnel, blocking, near = oracle._oracle(oracle.SPEC, group,
                                                        images)
        assert blocking == expected
        assert [(f['step'], f['hosts'], f['devices'])
                for f in result['funnel']] == funnel, group
        assert (result['blocking'] or {}).get('step') == blocking, group
        assert result['near_misses_total'] == len(near), group
        assert [(m['deployable_uuid'], m['failed'])
                for m in result['near_misses']] == list(near.items())[
            :explain.NEAR_MISSES_SHOWN], group
    # The one-region cards came grouped (their regions' facts drawn at
    # random: a few share them), the cards of two regions one by one.
    alone = sum(len(c['regions']) == 1 for h in oracle.SPEC
                for c in h['cards'])
    assert sum(row.regions for row in fleet.kind_rows) == alone
    assert len(fleet.kind_rows) < alone
    assert len(fleet.regions) == len(oracle.FLEET.regions) - alone
    assert len(fleet.hostnames) == 1000
