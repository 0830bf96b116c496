"""The conductor's RPC endpoint: thin methods that hand over to workflows.

Each method here has a twin in rpcapi.ConductorAPI and a line in its
version history; the work itself lives in a workflow module
(report.py, ...), so this class stays a table of contents.
"""
import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import report

LOG = logging.getLogger(__name__)


class ConductorManager:
    # NOTE: must stay equal to ConductorAPI.RPC_API_VERSION's major and at
    # least its minor, or calls for newer methods are refused.
    target = messaging.Target(version='1.1')

    def __init__(self, host, after_report=None):
        self.host = host
        # Called with the hostname after a report changed stored rows
        # (the Placement sync). Its failure never fails the report: the
        # rows are committed and its own retry takes it from there.
        self.after_report = after_report

    @messaging.expected_exceptions(exception.InvalidReport,
                                   exception.ReportConflict)
    def report(self, ctxt, hostname, driver_reports):
        ack = report.handle_report(hostname, driver_reports)
        if ack['changed'] and self.after_report is not None:
            try:
                self.after_report(hostname)
            except Exception:
                LOG.exception('After-report hook failed for host %s',
                              hostname)
        return ack

    def bind_arqs(self, ctxt, bindings):
        # NOTE: any conductor may take any bind; the database arbitrates.
        return bind.bind_arqs(ctxt, bindings)

    def unbind_arqs(self, ctxt, arq_uuids):
        return bind.unbind_arqs(ctxt, arq_uuids)
