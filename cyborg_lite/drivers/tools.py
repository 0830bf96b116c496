"""Running vendor tools (nvidia-smi, xbutil) for the drivers.

A tool that is not installed means the host has none of that vendor's
devices: ``find_tool`` returns None and the driver reports []. A tool that
is there but fails or hangs is a failed scan: exception.DriverError, so
the agent keeps the last good report instead of deleting devices.
"""
import os
import shutil
import subprocess

from cyborg_lite.common import exception

# Real tool output is a few hundred KiB; far more means something is wrong.
MAX_OUTPUT_BYTES = 32 * 1024 * 1024


def find_tool(path):
    """The executable for a configured name or path, or None if absent."""
    if os.sep in path:
        return path if os.access(path, os.X_OK) and \
            os.path.isfile(path) else None
    return shutil.which(path)


def run_tool(driver, argv, timeout):
    """stdout (bytes) of argv; DriverError if it fails, hangs or floods."""
    try:
        result = subprocess.run(argv, capture_output=True, timeout=timeout,
                                check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise exception.DriverError(driver=driver, reason='%s timed out '
                                    'after %ss' % (argv[0], timeout))
    except OSError as e:
        raise exception.DriverError(driver=driver, reason='cannot run %s: '
                                    '%s' % (argv[0], e))
    if result.returncode != 0:
        stderr = result.stderr.decode('utf-8', 'replace').strip()[-500:]
        raise exception.DriverError(
            driver=driver, reason='%s exited with %d: %s'
            % (' '.join(argv), result.returncode, stderr or '(no stderr)'))
    if len(result.stdout) > MAX_OUTPUT_BYTES:
        raise exception.DriverError(driver=driver, reason='%s wrote more '
                                    'than %d bytes' % (argv[0],
                                                       MAX_OUTPUT_BYTES))
    return result.stdout
