"""Client side of the conductor RPC API (agents and the API call it).

API version history:

* 1.0 - report(hostname, driver_reports): an agent's discovery result,
        applied as a diff; returns the acknowledgement dict described in
        cyborg_lite/conductor/report.py.
* 1.1 - bind_arqs(bindings), unbind_arqs(arq_uuids): casts; the bind
        workflow of cyborg_lite/conductor/bind.py.

Add a method: bump RPC_API_VERSION (minor for a compatible addition), add
a line above, ``prepare(version=...)`` with the version that introduced it,
and the endpoint method with the same name on ConductorManager.
"""
import oslo_messaging as messaging

from cyborg_lite.common import exception
from cyborg_lite.common import rpc

# NOTE: exceptions that may cross RPC as themselves. Over a real transport
# oslo.messaging hands the caller a RemoteError unless the transport lists
# our module in allowed_remote_exmods; _translate turns those back.
_REMOTE_EXCEPTIONS = {cls.__name__: cls for cls in (
    exception.InvalidReport, exception.ReportConflict)}


class ConductorAPI:
    RPC_API_VERSION = '1.1'

    def __init__(self, timeout=None):
        self.client = rpc.get_client(rpc.CONDUCTOR_TOPIC,
                                     self.RPC_API_VERSION, timeout=timeout)

    def report(self, ctxt, hostname, driver_reports):
        """Apply an agent report; returns the acknowledgement dict.

        Raises InvalidReport (nothing stored changed) or ReportConflict
        (concurrent writers; send again later), or oslo.messaging's
        MessagingTimeout when no conductor answered.
        """
        cctxt = self.client.prepare(version='1.0')
        with _translate():
            return cctxt.call(ctxt, 'report', hostname=hostname,
                              driver_reports=driver_reports)

    def bind_arqs(self, ctxt, bindings):
        """Start binding ARQs; returns at once (the API answers 202).

        bindings: {arq_uuid: {'hostname', 'device_rp_uuid',
        'instance_uuid', 'project_id' (optional)}}. The outcome is the
        ARQs' state (Bound or BindFailed) and the bind notifier's event.
        """
        cctxt = self.client.prepare(version='1.1')
        cctxt.cast(ctxt, 'bind_arqs', bindings=bindings)

    def unbind_arqs(self, ctxt, arq_uuids):
        """Start unbinding ARQs, freeing their attach handles; a cast."""
        cctxt = self.client.prepare(version='1.1')
        cctxt.cast(ctxt, 'unbind_arqs', arq_uuids=list(arq_uuids))


class _translate:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, _tb):
        if isinstance(exc, messaging.RemoteError) and \
                exc.exc_type in _REMOTE_EXCEPTIONS:
            cls = _REMOTE_EXCEPTIONS[exc.exc_type]
            raise cls(message=exc.value) from exc
        return False
