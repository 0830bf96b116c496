"""The fake driver's cards of a matrix host, as the hardware is: the
type, trait and local memory of their regions, the function they hold
first, and the files a test reads and writes on them (a region's
function and memory, an FME error register)."""
import os

from cyborg_lite.drivers import fake
from tests.unit.bitstreams import builders

MEMORY_MB = 4096
# The fake driver's regions: builders' images are made for this type.
REGION_TYPE = builders.hex32(builders.INTERFACE_UUID)
REGION_TRAIT = 'CUSTOM_FPGA_REGION_' + REGION_TYPE.upper()
FIRST_FUNCTION = builders.hex32(builders.AFU_UUID)


class Cards:
    """A Host's fake cards, through the fake driver's files."""

    def new_driver(self):
        driver = fake.FakeDriver(self.conf)
        driver.name = 'fake'
        return driver

    def fme_error(self, text, card=0, name='catfatal_errors'):
        """Write one of the card's FME error registers, as docs/drivers.md
        says to inject a fault."""
        base_index = card * (self.regions_per_card + 1)
        path = os.path.join(self.fake_options['state_dir'], 'sys', 'class',
                            'fpga_region', 'region%d' % base_index,
                            'dfl-fme.%d' % card, 'errors', name)
        with open(path, 'w') as f:
            f.write(text)

    def loaded(self, name='region0', card=0):
        """The function the simulated region holds now."""
        return self.new_driver().loaded_function(
            fake._address(card, 0), name)

    def memory_path(self, name='region0', card=0):
        return self.new_driver().local_memory_path(fake._address(card, 0),
                                                   name)

    def give_tenant_data(self, name='region0', card=0, text='tenant data'):
        with open(self.memory_path(name, card), 'w') as f:
            f.write(text)

    def memory(self, name='region0', card=0):
        with open(self.memory_path(name, card)) as f:
            return f.read()
