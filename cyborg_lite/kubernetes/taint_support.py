"""Whether the cluster keeps device taints, found out by asking it.

Device taints are behind Kubernetes' DRADeviceTaints feature gate: alpha
(off by default) from 1.33, beta and on by default from 1.36, GA in 1.37.
An apiserver with the gate off drops the ``taints`` of every device it is
sent (unless the stored slice already has some) and answers as if nothing
happened, so a device published with a NoSchedule taint would be offered
as free. A written taint that does not come back is how a cluster says it
ignores them (k8s.io/dynamic-resource-allocation's resourceslice
controller reports it the same way, as a DroppedFieldsError).

So before a sync first writes a taint, slice_sync asks with a dry run (a
create with ``dryRun=All``: completed and checked as a real create, not
stored), and it checks the answer of every real write too. Where taints
do not come back, devices that would carry a NoSchedule or NoExecute
taint are left out of the slices instead (k8s_slices.untainted; an effect
None taint is only dropped), which is said once in the log. A cluster
found without taints is asked again after ``REASK_INTERVAL`` seconds: an
upgrade may turn them on.
"""
import logging
import time

LOG = logging.getLogger(__name__)

REASK_INTERVAL = 3600


def taint_counts(obj):
    """{device name: number of taints} of a ResourceSlice."""
    return {d['name']: len(d.get('taints') or [])
            for d in obj.get('spec', {}).get('devices') or []}


def has_taints(obj):
    return any(taint_counts(obj).values())


class TaintSupport:
    """What the sync knows of the cluster's device taints."""

    def __init__(self, wanted=True, clock=time.monotonic):
        self.wanted = wanted        # [kubernetes]publish_taints
        self.clock = clock
        self.kept = None            # unknown until asked
        self._asked_at = None

    def publish(self):
        """Whether slices may be built with taints now."""
        if not self.wanted:
            return False
        return self.kept is not False or self._ask_again()

    def unsure(self):
        """Whether a write with taints must first be tried as a dry run."""
        return self.wanted and (self.kept is None or
                                (self.kept is False and self._ask_again()))

    def _ask_again(self):
        return self.clock() - self._asked_at >= REASK_INTERVAL

    def observed(self, sent, stored):
        """Learn from a write (or dry run) of ``sent`` answered with
        ``stored``; whether the taints sent were kept."""
        counts = taint_counts(stored)
        sent_counts = taint_counts(sent)
        if not any(sent_counts.values()):
            return True
        kept = all(counts.get(name, 0) >= count
                   for name, count in sent_counts.items())
        if kept and self.kept is not True:
            if self.kept is False:
                LOG.info('The Kubernetes API keeps device taints now: '
                         'unavailable devices are published again, '
                         'tainted.')
        elif not kept and self.kept is not False:
            LOG.warning(
                'The Kubernetes API dropped the device taints of '
                'ResourceSlice %s: the cluster does not have device taints '
                '(the DRADeviceTaints feature gate, on by default from '
                'Kubernetes 1.36). Devices that would carry a NoSchedule or '
                'NoExecute taint (unavailable: maintaining, cleaning, held '
                'by Nova, ...) are left out of the ResourceSlices instead.',
                sent['metadata'].get('name'))
        self.kept = kept
        self._asked_at = self.clock()
        return kept
