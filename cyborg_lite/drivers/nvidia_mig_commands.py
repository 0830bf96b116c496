"""The MIG instances a bind or Prepare makes, made and destroyed with
``nvidia-smi mig``: the NvidiaDriver's part that runs the tool for them
(drivers/nvidia_mig_made.py keeps what Prepares made, drivers/
nvidia_mig_vgpu.py what binds made for MIG-backed vGPUs; drivers/
nvidia_mig.py reads the tool's tables).

A mixin: the driver gives ``_tool()``, ``run_tool``, ``timeout``,
``_name``, ``mig_made``, ``mig_vgpus``, ``made_here``, ``sysfs_root``
and ``write_attribute``, and holds its MIG lock around each call.
"""
import logging

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import mig_placements
from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.drivers import nvidia_mig_made
from cyborg_lite.drivers import nvidia_mig_vgpu
from cyborg_lite.drivers import nvidia_vgpu_vfio

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

    def _profiles(self, tool, address):
        return nvidia_mig.profiles(self._mig_tool(tool, '-lgip', address),
                                   self._mig_tool(tool, '-lgipp', address))

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
        size = {p.id: p.size for p in self._profiles(
            tool, identity)}.get(profile_id)
        if size is None or not mig_placements.slices(start, size) <= \
                nvidia_mig.free_slices(start + size, instances):
            raise exception.DriverError(
                driver=self._name, reason='GPU %s cannot make MIG profile %s '
                'at %d now (its slices are taken)' % (identity, profile_id,
                                                      start))
        self.mig_made.note(identity, key)
        try:
            output = self._create(tool, identity, profile_id, start)
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

    def _create(self, tool, address, profile_id, start):
        """``-cgi <profile id>:<start> -C``'s output. A caller forgets its
        note when this raises (the tool made nothing), not when the output
        does not parse (then it made one: the next scan adopts it)."""
        return self.run_tool(self._name, nvidia_mig_made.create_argv(
            tool, address, profile_id, start), self.timeout)

    def _make_mig_vgpu(self, identity, attach_info, type_id, profile_id):
        """A MIG-backed vGPU of ``type_id`` on the handle's VF: the GPU
        instance made where it fits best (or found made by this bind
        before), the type written, the VF read back on it. Anything made
        is undone when it fails."""
        vf = device_records.pci_address(attach_info)
        tool = self._tool()
        instances = self._instances(tool, identity)
        nvidia_mig_vgpu.adopt(self.mig_vgpus, identity, instances)
        entry = self.mig_vgpus.read().get(vf)
        if entry is not None and entry['type'] != type_id:
            raise nvidia_mig_vgpu.Refused(address=vf, reason='it is noted '
                                          'for vGPU type %d' % entry['type'])
        if entry is None:
            gi_id = self._make_for_vf(tool, identity, vf, type_id,
                                      profile_id, instances)
        else:
            gi_id = entry['gi']
        try:
            made = nvidia_vgpu_vfio.make(
                self.sysfs_root, identity, vf, type_id, self.made_here,
                self.write_attribute)
            on = nvidia_mig_vgpu.gpu_instance_of(self.sysfs_root, vf)
            if on != gi_id:
                nvidia_vgpu_vfio.remove(self.sysfs_root, identity, vf,
                                        type_id, self.made_here,
                                        self.write_attribute)
                raise nvidia_mig_vgpu.Refused(
                    address=vf, reason='the driver put it on GPU instance '
                    '%s, not on %d made for it' % (on, gi_id))
        except exception.DriverError:
            self._destroy_for_vf(tool, identity, vf)
            raise
        LOG.info('Made MIG-backed vGPU type %d on VF %s (GPU instance %d '
                 'of GPU %s)', type_id, vf, gi_id, identity)
        return made

    def _make_for_vf(self, tool, identity, vf, type_id, profile_id,
                     instances):
        """Make the GPU instance of a VF's MIG-backed vGPU: noted before
        and after ``-cgi``; its id."""
        now = nvidia_vgpu_vfio.read_vf(self.sysfs_root, identity, vf)
        if now.current:
            raise nvidia_mig_vgpu.Refused(address=vf, reason='it holds vGPU '
                                          'type %d already' % now.current)
        profile, start = nvidia_mig_vgpu.choose_start(
            self._profiles(tool, identity), instances, profile_id)
        key = nvidia_mig_made.placement_key(profile.id, start)
        self.mig_vgpus.note(vf, identity, type_id, key)
        try:
            output = self._create(tool, identity, profile.id, start)
        except exception.DriverError:
            self.mig_vgpus.forget(vf)
            raise
        gi_id = nvidia_mig_made.created_gi(output, profile.id)
        self.mig_vgpus.note(vf, identity, type_id, key, gi_id)
        return gi_id

    def _destroy_for_vf(self, tool, identity, vf):
        """Destroy the GPU instance noted for ``vf`` (its vGPU removed
        first); whether there was one."""
        instances = self._instances(tool, identity)
        nvidia_mig_vgpu.adopt(self.mig_vgpus, identity, instances)
        entry = self.mig_vgpus.read().get(vf)
        if entry is None:
            return False
        if entry['gi'] in {i.gi_id for i in instances}:
            for argv in nvidia_mig_made.destroy_argvs(tool, identity,
                                                      entry['gi']):
                self.run_tool(self._name, argv, self.timeout)
            LOG.info('Destroyed MIG GPU instance %d (VF %s\'s vGPU) of GPU '
                     '%s', entry['gi'], vf, identity)
        self.mig_vgpus.forget(vf)
        return True

    def _remove_mig_vgpu(self, identity, attach_info, type_id):
        """Remove the MIG-backed vGPU this host made on the handle's VF,
        then its GPU instance; whether either was there."""
        vf = device_records.pci_address(attach_info)
        removed = nvidia_vgpu_vfio.remove(
            self.sysfs_root, identity, vf, type_id, self.made_here,
            self.write_attribute)
        return self._destroy_for_vf(self._tool(), identity, vf) or removed

    def _clean_mig_vgpus(self, tool, identity, type_id):
        """The wipe of a MIG-backed type nothing holds: every vGPU of it
        this host made removed, and their GPU instances destroyed (also
        one whose vGPU a killed bind never wrote)."""
        nvidia_vgpu_vfio.remove_made_here(
            self.sysfs_root, identity, type_id, self.made_here,
            self.write_attribute)
        for vf, entry in self.mig_vgpus.read().items():
            if entry['gpu'] == identity and entry['type'] == type_id:
                self._destroy_for_vf(tool, identity, vf)
