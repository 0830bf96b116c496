"""Device rows for Placement sync tests, written as the conductor would."""
import uuid

from cyborg_lite.db import models
from cyborg_lite.db.sql import session


def add_fpga(hostname, pci='0000:5e:00.0', regions=2, function_id='f00d',
             health='healthy'):
    """An FPGA with ``regions`` regions in the DB; returns its uuid."""
    with session.writer() as s:
        dev = models.Device(uuid=str(uuid.uuid4()), type='FPGA',
                            vendor='intel', model='pac_a10', hostname=hostname,
                            driver_name='fake', identity=pci, pci_address=pci,
                            health=health)
        s.add(dev)
        s.flush()
        for i in range(regions):
            dep = models.Deployable(
                uuid=str(uuid.uuid4()), device_id=dev.id,
                name='%s_%s_region%d' % (hostname, pci, i),
                num_accelerators=1, driver_name='fake',
                region_type='9346116d-a52d-5ca8-b06a-698b5b9b4ff3',
                function_id=function_id if i == 0 else None,
                local_memory_mb=4096)
            s.add(dep)
            s.flush()
            s.add(models.Attribute(uuid=str(uuid.uuid4()),
                                   deployable_id=dep.id, key='trait0',
                                   value='fpga intel arria10'))
        return dev.uuid


def add_gpu(hostname, pci='0000:3b:00.0', mig_slices=0):
    """A GPU, whole (PGPU) or split into ``mig_slices`` VGPU slices."""
    with session.writer() as s:
        dev = models.Device(uuid=str(uuid.uuid4()), type='GPU',
                            vendor='nvidia', model='a100', hostname=hostname,
                            driver_name='fake', identity=pci, pci_address=pci)
        s.add(dev)
        s.flush()
        if mig_slices:
            dep = models.Deployable(
                uuid=str(uuid.uuid4()), device_id=dev.id,
                name='%s_%s_mig-1g.10gb' % (hostname, pci),
                num_accelerators=mig_slices, driver_name='fake')
            s.add(dep)
            s.flush()
            s.add(models.Attribute(uuid=str(uuid.uuid4()),
                                   deployable_id=dep.id, key='rc',
                                   value='VGPU'))
        return dev.uuid
