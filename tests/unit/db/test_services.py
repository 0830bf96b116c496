"""db/services.py on every backend: one row per (kind, host), the newest
beat's release wins (a service restarted on new code), ages by the
database's clock."""
import pytest

from cyborg_lite.db import services as services_db


def test_a_restart_on_new_code_replaces_the_release(db):
    services_db.beat('conductor', 'c1', '2026.1.0', {'t': '1.8'})
    services_db.beat('agent', 'c1', None, None)
    services_db.beat('conductor', 'c1', '2026.2.0', {'t': '1.10'})
    rows = services_db.list_all()
    assert [(r['kind'], r['host'], r['release'], r['rpc_versions'])
            for r in rows] == [('agent', 'c1', None, None),
                               ('conductor', 'c1', '2026.2.0',
                                {'t': '1.10'})]
    assert all(0 <= r['heartbeat_age'] < 3600 for r in rows)


def test_an_unknown_kind_is_refused(db):
    with pytest.raises(ValueError):
        services_db.beat('scheduler', 'c1', '2026.2.0', None)
    assert services_db.list_all() == []
