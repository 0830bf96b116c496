"""The fake driver's work held half way by a test (world.py)."""
import threading

from cyborg_lite.drivers import fake


class Gate:
    """Work the test holds half way: ``hold()``, then ``waiting`` is set
    once the work reached it, ``release()`` lets it go on."""

    def __init__(self):
        self.released = threading.Event()
        self.released.set()
        self.waiting = threading.Event()

    def hold(self):
        self.waiting.clear()
        self.released.clear()

    def release(self):
        self.released.set()

    def wait_reached(self):
        assert self.waiting.wait(30), 'the held work never started'

    def __call__(self):
        self.waiting.set()
        assert self.released.wait(60), 'work held for a minute'


class HeldFake(fake.FakeDriver):
    """The fake driver, whose cleans and programmings the test may hold
    half way, as a long scrub or load would be: the views are read while
    they run."""

    def __init__(self, conf):
        super().__init__(conf)
        self.name = 'fake'
        self.cleans = Gate()
        self.programs = Gate()

    def clean(self, identity, deployable_name):
        self.cleans()
        super().clean(identity, deployable_name)

    def program(self, identity, region_name, image_path):
        self.programs()
        super().program(identity, region_name, image_path)
