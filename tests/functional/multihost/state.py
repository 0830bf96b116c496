"""What a multihost cluster (cluster.py) holds, read as a test checks
it: the services' logs, the database (the test's own connection) and
Placement's providers of FPGA regions."""
import collections

import requests

from cyborg_lite.cmd import placement_server
from tests import waiting

PLACEMENT = {'X-Auth-Token': placement_server.TOKEN,
             'OpenStack-API-Version': 'placement 1.39',
             'Content-Type': 'application/json'}

Region = collections.namedtuple('Region', ['host', 'rp_uuid', 'name'])


class State:
    """A Cluster's logs, database and Placement, read."""

    def logs(self, *names):
        names = names or list(self.services)
        return '\n'.join('===== %s =====\n%s' % (n,
                         self.services[n].read_log()) for n in names)

    def db(self):
        """A SQLAlchemy engine on the cluster's database (the test's own
        connection, for checks the API does not expose)."""
        if self._engine is None:
            import sqlalchemy as sa
            # pre_ping: the database may have been restarted by a test.
            self._engine = sa.create_engine(self.db_url, pool_size=2,
                                            pool_pre_ping=True)
        return self._engine

    def query(self, sql, **params):
        import sqlalchemy as sa
        with self.db().connect() as conn:
            return conn.execute(sa.text(sql), params).fetchall()

    def placement_get(self, path, **params):
        resp = requests.get(self.placement.endpoint + path,
                            headers=PLACEMENT, params=params, timeout=10)
        resp.raise_for_status()
        return resp.json()

    def region_rps(self):
        """[Region] every provider of FPGA regions Placement has, by host:
        a card's, when its regions are reached through its PF (the fake
        driver's default: common/shared_functions.py)."""
        found = []
        rps = self.placement_get('/resource_providers')['resource_providers']
        by_uuid = {rp['uuid']: rp for rp in rps}
        hosts = {rp['uuid']: rp['name'] for rp in rps
                 if rp['uuid'] == rp['root_provider_uuid']}
        for rp in rps:
            if rp['uuid'] == rp['root_provider_uuid']:
                continue
            inv = self.placement_get('/resource_providers/%s/inventories'
                                     % rp['uuid'])['inventories']
            if 'FPGA' in inv:
                found.append(Region(hosts.get(rp['root_provider_uuid']),
                                    rp['uuid'], by_uuid[rp['uuid']]['name']))
        return sorted(found, key=lambda r: (r.host, r.name))

    def region_per_card(self):
        """[Region] one per card: offers that never share a PCI function,
        so binds to them do not exclude each other (each card's regions,
        reached through its PF, are offered by the card's provider)."""
        regions = self.region_rps()
        assert len(regions) == len(self.agent_hosts) * self.cards
        return regions

    def reserved_regions(self):
        """[Region] whose FPGA Placement holds back (reserved > 0)."""
        return [r for r in self.region_rps()
                if self.placement_get('/resource_providers/%s/inventories'
                                      % r.rp_uuid)['inventories']['FPGA'][
                    'reserved']]

    def wait_for_free_regions(self, timeout):
        return waiting.until(lambda: not self.reserved_regions(), timeout,
                             0.5)

    def expected_regions(self):
        """How many FPGA providers Placement has: one per card, whose
        regions all sit behind its PF."""
        return len(self.agent_hosts) * self.cards

    def wait_regions(self, timeout=120):
        seen = []

        def all_regions():
            try:
                seen[:] = self.region_rps()
            except requests.RequestException:
                seen[:] = []
            return len(seen) == self.expected_regions() and list(seen)
        regions = waiting.until(all_regions, timeout, interval=0.5)
        if not regions:
            raise TimeoutError('Placement has %d of %d regions:\n%s' % (
                len(seen), self.expected_regions(), self.logs()))
        return regions
