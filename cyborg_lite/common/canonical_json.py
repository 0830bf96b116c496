"""The one JSON spelling of a value, so that equal values compare equal.

Keys sorted, no spaces: the agent hashes report entries with it (an
unchanged scan is not sent again) and the conductor stores attach_info
and board info with it (an unchanged report writes nothing).
"""
import json


def dumps(value):
    return json.dumps(value, sort_keys=True, separators=(',', ':'))
