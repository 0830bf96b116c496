"""Whole-file JSON writes that a crash never leaves half done."""
import json
import os


def write_json_atomically(path, obj, mode=0o644):
    """Replace ``path`` with ``obj`` as JSON in one step, durably.

    The temporary file is hidden and does not end in .json, so a reader
    that scans the directory (the CDI cache) never parses it."""
    folder, name = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, '.%s.%d.tmp' % (name, os.getpid()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, 'w') as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write('\n')
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove(path):
    """Delete ``path``; True if it was there."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
