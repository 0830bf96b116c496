"""Releasing capacity the API took away: publish, then clean.

An unbind or a delete is the API's own transaction (db/arqs.unbind_all,
delete_by_uuids): it frees the attach handles, leaves the released
regions pending_cleaning and requests a publish of their hosts. What is
left for a conductor is this module's.
"""
import logging

from cyborg_lite.common import exception
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db

LOG = logging.getLogger(__name__)


def unbind_each(arq_uuids):
    """Unbind each ARQ as the API does (an unknown or moving one is
    logged and left); ({arq_uuid: state}, hosts to publish, hosts to
    clean)."""
    results, publish, clean = {}, set(), set()
    for arq_uuid in arq_uuids:
        try:
            released = arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
        except exception.CyborgLiteException as exc:
            LOG.warning('Not unbinding ARQ %s: %s', arq_uuid, exc)
        else:
            publish |= released.publish_hosts
            clean |= released.clean_hosts
        results[arq_uuid] = arqs_db.state_of(arq_uuid)
    return results, publish, clean
