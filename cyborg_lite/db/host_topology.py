"""host_topologies: each host's NUMA nodes (its SLIT), as its agent last
reported them. ``save`` writes only a difference, with a publish request
in the same transaction (the nodes change what the sinks publish);
``numa_nodes`` reads them back for the inventory."""
import sqlalchemy as sa

from cyborg_lite.common import canonical_json
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session

_TABLE = models.HostTopology.__table__
_READ = sa.select(_TABLE.c.numa_nodes).where(
    _TABLE.c.hostname == sa.bindparam('hostname'))


def text_of(conn, hostname):
    """The stored canonical JSON text of the host's nodes, or None."""
    return conn.execute(_READ, {'hostname': hostname}).scalar()


def _new_row(hostname, text):
    return models.HostTopology(hostname=hostname, numa_nodes=text)


def save(hostname, nodes, url=None, attempts=3):
    """Store ``nodes`` (checked by common/topology.check_numa_nodes) for
    ``hostname``; True when that changed what was stored."""
    text = canonical_json.dumps(nodes)
    with session.core_reader(url) as conn:
        if text_of(conn, hostname) == text:
            return False
    for attempt in range(1, attempts + 1):
        try:
            with session.writer(url) as s:
                row = s.get(models.HostTopology, hostname,
                            with_for_update=True)
                if row is not None and row.numa_nodes == text:
                    return False
                if row is None:
                    s.add(_new_row(hostname, text))
                else:
                    row.numa_nodes = text
                publish_requests.add(s, hostname, 'its NUMA nodes changed')
                return True
        except sa.exc.IntegrityError:
            # Another conductor stored the same host's first nodes.
            if attempt == attempts:
                raise
    return False
