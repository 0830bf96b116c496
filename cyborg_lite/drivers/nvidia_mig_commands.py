"""The MIG instances a bind or Prepare makes, made and destroyed with
``nvidia-smi mig``: the NvidiaDriver's part that runs the tool for them
(drivers/nvidia_mig_made.py keeps what this host made; drivers/
nvidia_mig.py reads the tool's tables).

A mixin: the driver gives ``_tool()``, ``run_tool``, ``timeout``,
``_name`` and ``mig_made``, and holds its MIG lock around each call.
"""
import logging

from cyborg_lite.common import exception
from cyborg_lite.common import mig_placements
from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.drivers import nvidia_mig_made

LOG = logging.getLogger(__name__)


class MigCommands:
    """Make and destroy the GPU instances at MIG placements."""

    def _mig_tool(self, tool, flag, address):
        return self.run_tool(self._name, [tool, 'mig', flag, '-i', address],
                             self.timeout)

    def _instances(self, tool, address):
        """The GPU instances of ``address`` (``nvidia-smi mig -lgi``)."""
        try:
            return nvidia_mig.parse_lgi(self._mig_tool(tool, '-lgi',
                                                       address))
        except exception.HostDataError:
            raise
        except exception.DriverError as e:
            if ' exited with %d:' % nvidia_mig_made.NOT_FOUND_EXIT in \
                    e.format_message():
                return []
            raise

    def _make_mig(self, identity, placement, attach_info):
        """Make the GPU and compute instance at ``placement`` (profile id,
        start), noted before and after ``-cgi``; the same again when this
        host made it already (a retried Prepare)."""
        tool = self._tool()
        profile_id, start = placement
        key = nvidia_mig_made.placement_key(profile_id, start)
        instances = self._instances(tool, identity)
        ours = self.mig_made.adopt(identity, instances)
        mine = [i.gi_id for i in instances if i.gi_id in ours and
                (i.profile_id, i.start) == placement]
        if mine:
            return dict(attach_info, mig_gpu_instance=str(mine[0]))
        # NOTE: a placement taken by another's instance is refused before
        # it is noted: the next start must never adopt theirs.
        size = {p.id: p.size for p in nvidia_mig.profiles(
            self._mig_tool(tool, '-lgip', identity),
            self._mig_tool(tool, '-lgipp', identity))}.get(profile_id)
        if size is None or not mig_placements.slices(start, size) <= \
                nvidia_mig.free_slices(start + size, instances):
            raise exception.DriverError(
                driver=self._name, reason='GPU %s cannot make MIG profile %s '
                'at %d now (its slices are taken)' % (identity, profile_id,
                                                      start))
        self.mig_made.note(identity, key)
        try:
            output = self.run_tool(self._name, nvidia_mig_made.create_argv(
                tool, identity, profile_id, start), self.timeout)
        except exception.DriverError:
            self.mig_made.forget(identity, key)
            raise
        gi_id = nvidia_mig_made.created_gi(output, profile_id)
        self.mig_made.note(identity, key, gi_id,
                           nvidia_mig_made.created_ci(output, gi_id))
        LOG.info('Made MIG profile %d at %d (GPU instance %d) on GPU %s',
                 profile_id, start, gi_id, identity)
        return dict(attach_info, mig_gpu_instance=str(gi_id))

    def _destroy_mig(self, identity, placement):
        """Destroy the instance this host made at ``placement``; whether
        there was one. Another's there is left alone."""
        tool = self._tool()
        instances = self._instances(tool, identity)
        ours = self.mig_made.adopt(identity, instances)
        for instance in instances:
            if instance.gi_id in ours and \
                    (instance.profile_id, instance.start) == placement:
                for argv in nvidia_mig_made.destroy_argvs(tool, identity,
                                                          instance.gi_id):
                    self.run_tool(self._name, argv, self.timeout)
                self.mig_made.forget(identity, nvidia_mig_made.placement_key(
                    *placement))
                LOG.info('Destroyed MIG GPU instance %d (profile %d at %d) '
                         'of GPU %s', instance.gi_id, placement[0],
                         placement[1], identity)
                return True
        return False
