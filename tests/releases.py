"""An unbind as the API makes one (api/handlers/accelerator_requests.py):
the rows in one transaction (db/arqs.unbind_all), then the release of
what it freed by a conductor: ``conductor`` is its RPC client
(rpc/conductor_client.ConductorAPI) or its endpoint (ConductorManager)."""
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db


def unbind(conductor, ctxt, arq_uuids):
    released = arq_releases.unbind_all(arqs_db.ALL, list(arq_uuids))
    conductor.release(ctxt, sorted(released.publish_hosts),
                      sorted(released.clean_hosts))
    return released
