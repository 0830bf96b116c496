"""The layer contract (setup.cfg [importlinter], drawn in
docs/architecture.md "Layers") is kept: import-linter run in-process on
the tree as it is, every contract, no import ignored."""
import collections
import configparser
import contextlib
import logging
import os
import re

from importlinter import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SETUP_CFG = os.path.join(ROOT, 'setup.cfg')
ARCHITECTURE = os.path.join(ROOT, 'docs', 'architecture.md')
MAX_LINES = 600
# Modules over MAX_LINES, each named with why (none today); a module
# that is no longer over it must leave this list.
LONG_MODULES = set()


def _contracts():
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    return {name.split(':', 2)[2]: parser[name] for name in parser.sections()
            if name.startswith('importlinter:contract:')}


def _layers():
    """The layers contract's layers, top first, each a tuple of the
    package names below cyborg_lite (bench as it is)."""
    lines = _contracts()['layers']['layers'].strip().splitlines()
    return [tuple(m.strip().replace('cyborg_lite.', '')
                  for m in line.split('|')) for line in lines]


def test_every_import_contract_is_kept(capsys):
    with _loggers_kept():
        status = cli.lint_imports(config_filename=SETUP_CFG, no_cache=True,
                                  no_logo=True, is_debug_mode=True)
    assert status == cli.EXIT_STATUS_SUCCESS, capsys.readouterr().out


@contextlib.contextmanager
def _loggers_kept():
    """import-linter's CLI sets its logging up with dictConfig, which
    disables every logger made before: the tests that run after this one
    in the same worker would hear nothing from ours (caplog)."""
    loggers = [logger for logger in
               logging.root.manager.loggerDict.values()
               if isinstance(logger, logging.Logger)]
    disabled = [logger.disabled for logger in loggers]
    try:
        yield
    finally:
        for logger, was in zip(loggers, disabled):
            logger.disabled = was


def test_the_contract_run_leaves_our_loggers_heard(caplog):
    logger = logging.getLogger('cyborg_lite.conductor.bind')
    test_every_import_contract_is_kept(capsys=_NoCapture())
    logger.warning('still heard')
    assert 'still heard' in caplog.text


class _NoCapture:
    def readouterr(self):
        return collections.namedtuple('Out', 'out')('')


def test_no_contract_ignores_an_import():
    contracts = _contracts()
    assert set(contracts) == {'layers', 'agent-no-database', 'pure-cores',
                              'only-db-speaks-sql', 'db-infrastructure',
                              'no-cycles'}
    for name, options in contracts.items():
        assert 'ignore_imports' not in options, name
        assert 'unmatched_ignore_imports_alerting' not in options, name


def test_the_architecture_page_draws_the_layers_contract():
    """docs/architecture.md "Layers": the diagram between its
    <!-- layers --> markers is the contract's, layer by layer."""
    with open(ARCHITECTURE) as f:
        text = f.read()
    drawn = re.search(r'<!-- layers -->\n```\n(.*?)```\n<!-- /layers -->',
                      text, re.S)
    assert drawn, 'no <!-- layers --> diagram in docs/architecture.md'
    rows = [line.split('  ', 1)[0].strip()
            for line in drawn.group(1).splitlines() if line.strip()]
    assert [tuple(p.strip() for p in row.split('|')) for row in rows] == \
        _layers()


def _modules():
    for top in ('cyborg_lite', 'bench'):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            # Not the venvs and caches below (bench/.cyborg-venv, which
            # bench/api.py makes, holds Cyborg and its dependencies).
            dirs[:] = [d for d in dirs if not d.startswith('.')]
            for name in files:
                if name.endswith('.py') and not name.endswith('_pb2.py') \
                        and not name.endswith('_pb2_grpc.py'):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, ROOT), path


def test_no_module_is_over_600_lines():
    """Small modules: none of cyborg_lite/ or bench/ is over MAX_LINES
    lines but those listed (generated protobuf stubs aside)."""
    long = set()
    for name, path in _modules():
        with open(path) as f:
            if sum(1 for _ in f) > MAX_LINES:
                long.add(name)
    assert long == LONG_MODULES
