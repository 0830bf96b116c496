"""Run by a release's own Python: ``python unknown_options.py CONF...``
prints, as JSON, {file: [[section, option]]} of the options in each
config file that no ``oslo.config.opts`` entry point of that install
registers (oslo.config ignores them silently: a file the release would
not read as written).

A script, not a module of the tests package: the previous release's venv
has its own tree on the path, not this one.
"""
import configparser
import importlib.metadata
import json
import sys


def known_options():
    known = set()
    for entry_point in importlib.metadata.entry_points(
            group='oslo.config.opts'):
        try:
            list_opts = entry_point.load()
        except ImportError:
            # A library this install does not run (oslo.service's wsgi
            # needs eventlet, which cyborg_lite refuses): none of its
            # options are read.
            continue
        for group, opts in list_opts():
            section = getattr(group, 'name', group) or 'DEFAULT'
            for opt in opts:
                known.update({(section, opt.name), (section, opt.dest)})
                known.update((d.group or section, d.name)
                             for d in opt.deprecated_opts)
    return known


def unknown(path, known):
    parser = configparser.RawConfigParser()
    parser.optionxform = str
    parser.read(path)
    found = [['DEFAULT', key] for key in parser.defaults()
             if ('DEFAULT', key) not in known]
    for section in parser.sections():
        found += [[section, key] for key in parser[section]
                  if key not in parser.defaults() and
                  (section, key) not in known]
    return found


if __name__ == '__main__':
    registered = known_options()
    print(json.dumps({path: unknown(path, registered)
                      for path in sys.argv[1:]}))
