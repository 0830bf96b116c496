"""CPU seconds by party, read from /proc, to show where a bench's time
goes on a machine whose cores all parties share.

``Parties`` takes named callables returning process ids; ``sample()``
before and ``spent(before)`` after a measured stretch give each party's
CPU seconds, this process's (``self``) and the whole machine's
(``machine``: every process, other people's too).
"""
import os


def ticks(pids):
    """CPU seconds (user + system) of ``pids`` so far."""
    total = 0
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf('SC_CLK_TCK')


def machine_busy():
    """CPU seconds every process of the machine used so far (/proc/stat)."""
    with open('/proc/stat') as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf('SC_CLK_TCK')


def children(parent):
    """``parent`` and every process below it."""
    found, frontier = {parent}, [parent]
    by_parent = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            except OSError:
                continue
            by_parent.setdefault(ppid, []).append(int(entry))
    while frontier:
        for child in by_parent.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def postmaster(pg):
    """The PostgreSQL server's (tests/servers.PostgresServer) main pid."""
    with open(os.path.join(pg.datadir, 'postmaster.pid')) as f:
        return int(f.readline())


class Parties:
    """CPU seconds of named process groups over a measured stretch.

    ``parties``: {name: callable returning that party's pids}, asked at
    each sample (workers may have been replaced in between).
    """

    def __init__(self, parties):
        self.parties = dict(parties)

    def sample(self):
        seconds = {name: ticks(pids()) for name, pids in
                   self.parties.items()}
        seconds['self'] = sum(os.times()[:2])
        seconds['machine'] = machine_busy()
        return seconds

    def spent(self, before):
        """CPU seconds of each party since ``before`` (a sample)."""
        after = self.sample()
        return {name: round(after[name] - before[name], 2)
                for name in after}
