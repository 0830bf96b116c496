"""A multihost cluster's simulated hardware (cluster.py): each agent's
fake FPGA tree (the regions' afu_id and on-card memory files), and what
the database, the API and Placement say of a region."""
import os


class Hardware:
    """A Cluster's simulated FPGA regions."""

    def afu_id_path(self, region):
        """The afu_id file of ``region`` in its agent's simulated tree (of
        a card's provider: its first region, the one a bind or a program
        of the card takes first)."""
        address, region_name = region.name.split('_')[-2:]
        if region_name.startswith('region'):
            port = int(region_name[len('region'):])
        else:
            address, port = region_name, 0
        root = os.path.join(self.basedir, region.host, 'fake_fpga', 'sys')
        for dirpath, _dirs, files in os.walk(root):
            if ('afu_id' in files and address in dirpath and
                    os.path.basename(dirpath).startswith('dfl-port.')):
                with open(os.path.join(dirpath, 'id')) as f:
                    if int(f.read().strip()) == port:
                        return os.path.join(dirpath, 'afu_id')
        raise LookupError('no afu_id for %s under %s' % (region, root))

    def local_memory_path(self, region):
        """The file standing for the region's on-card memory in its
        agent's simulated host (drivers/fake.py): what a clean empties."""
        port = os.path.basename(os.path.dirname(self.afu_id_path(region)))
        directory = os.path.join(self.basedir, region.host, 'fake_fpga',
                                 'local_memory')
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, port)

    def cleaning_state(self, region):
        """(device_state, cleaning_started_at, cleaning_attempts) of the
        region's deployable, from the database."""
        row = self.query(
            'SELECT device_state, cleaning_started_at, cleaning_attempts '
            'FROM deployables WHERE rp_uuid = :rp ORDER BY id LIMIT 1',
            rp=region.rp_uuid)[0]
        return tuple(row)

    def wait_cleaned(self, timeout=60):
        """Wait until no region waits for or is under its clean between
        tenants (after a test released some)."""
        self.wait_for(lambda: not self.query(
            "SELECT id FROM deployables WHERE device_state IN "
            "('pending_cleaning', 'cleaning')"), timeout,
            'every released region cleaned')

    def load_function(self, region, function_id):
        """Change what the region runs behind the agent's back (an operator
        with the vendor tool): the agent's next scan reports it."""
        path = self.afu_id_path(region)
        tmp = path + '.tmp'
        with open(tmp, 'w') as f:
            f.write(function_id + '\n')
        os.replace(tmp, path)

    def api_function_id(self, region):
        deps = self.call('GET', '/deployables', 200,
                         params={'rp_uuid': region.rp_uuid}
                         ).json()['deployables']
        return deps[0]['function_id'] if deps else None

    def placement_traits(self, region):
        return set(self.placement_get('/resource_providers/%s/traits'
                                      % region.rp_uuid)['traits'])
