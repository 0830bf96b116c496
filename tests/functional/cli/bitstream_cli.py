"""Helpers of the bitstream, program and provider tree CLI tests: images
on disk, the real entry point under a pseudo-terminal, one-line errors."""
import os
import pty
import subprocess
import threading

from tests.functional.cli import conftest as c
from tests.unit.bitstreams import builders

REGION_TYPE = builders.hex32(builders.INTERFACE_UUID)
FUNCTION_ID = builders.hex32(builders.AFU_UUID)


def write_image(tmp_path, name='nlb.gbs', payload=builders.PAYLOAD,
                **metadata):
    """A GBS file (``metadata`` for builders.gbs_metadata); its path."""
    path = tmp_path / name
    path.write_bytes(builders.build_gbs(builders.gbs_metadata(**metadata),
                                        payload=payload))
    return path


def create(cli, path, name='nlb', *extra):
    return cli('bitstream', 'create', name, '--file', str(path),
               '--bitstream-format', 'gbs', '-f', 'json', *extra)


def one_line_error(result, *fragments):
    """Exit 1, nothing on stdout, one line on stderr holding fragments."""
    assert result.rc == 1, result
    assert result.stdout == ''
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _drain(fd, into):
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed its side of the terminal
            return
        if not data:
            return
        into.append(data)


def run_on_tty(api_url, *args):
    """cyborg-lite with stderr on a pseudo-terminal, stdout on a pipe;
    (exit code, stdout bytes, what the terminal received)."""
    master, slave = pty.openpty()
    received = []
    reader = threading.Thread(target=_drain, args=(master, received))
    reader.start()
    try:
        proc = subprocess.run(
            [os.path.join(c.BIN_DIR, 'cyborg-lite')] + list(args),
            stdout=subprocess.PIPE, stderr=slave, timeout=120,
            env=c.clean_env(CYBORG_LITE_URL=api_url))
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return proc.returncode, proc.stdout, b''.join(received).decode()


def run_binary(api_url, *args):
    """cyborg-lite with stdout kept as bytes (a download to ``-``)."""
    return subprocess.run(
        [os.path.join(c.BIN_DIR, 'cyborg-lite')] + list(args),
        capture_output=True, timeout=120,
        env=c.clean_env(CYBORG_LITE_URL=api_url))
