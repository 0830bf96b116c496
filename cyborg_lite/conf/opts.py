"""Discovery of option modules, for registration and oslo-config-generator."""
import importlib
import pkgutil

_SKIP = {'opts'}


def _option_modules():
    package = importlib.import_module('cyborg_lite.conf')
    for info in sorted(pkgutil.iter_modules(package.__path__),
                       key=lambda i: i.name):
        if info.name in _SKIP or info.name.startswith('_'):
            continue
        yield importlib.import_module('cyborg_lite.conf.%s' % info.name)


def register_all(conf):
    for module in _option_modules():
        module.register_opts(conf)


def list_opts():
    """Entry point for oslo-config-generator: [(group, [opts]), ...]."""
    result = []
    for module in _option_modules():
        result.extend(module.list_opts())
    return result
