"""Upload and download progress: a bar on a terminal, nothing on a pipe.
The real cyborg-lite runs with its stderr on a pseudo-terminal."""
import os

from tests.functional.cli import bitstream_cli as b

MIB = 1024 * 1024


def _image(tmp_path):
    return b.write_image(tmp_path, payload=os.urandom(6 * MIB))


def _bar_lines(terminal, label):
    """The redraws of the bar: carriage return, text, clear to end."""
    return [part.split('\x1b[K')[0] for part in terminal.split('\r')
            if part.startswith(label)]


def test_upload_and_download_draw_a_bar_on_a_terminal(api_url, tmp_path):
    path = _image(tmp_path)
    rc, stdout, terminal = b.run_on_tty(
        api_url, 'bitstream', 'create', 'big', '--file', str(path),
        '--bitstream-format', 'gbs', '-f', 'value', '-c', 'uuid')
    assert rc == 0, terminal
    uuid = stdout.decode().strip()
    last = _bar_lines(terminal, 'upload')[-1]
    assert '[########################] 100%' in last
    assert '6.0 MiB / 6.0 MiB' in last
    assert last.endswith('/s')
    assert '\x1b[K' in terminal

    target = tmp_path / 'copy.gbs'
    rc, stdout, terminal = b.run_on_tty(
        api_url, 'bitstream', 'download', uuid, '--file', str(target))
    assert (rc, stdout) == (0, b''), terminal
    last = _bar_lines(terminal, 'download')[-1]
    assert '100%' in last and '6.0 MiB / 6.0 MiB' in last
    assert target.read_bytes() == path.read_bytes()


def test_quiet_when_stderr_is_not_a_terminal(cli, tmp_path):
    path = _image(tmp_path)
    made = b.create(cli, path)
    assert made.stderr == ''
    result = cli('bitstream', 'download', made.json['uuid'], '--file',
                 str(tmp_path / 'copy.gbs'))
    assert (result.rc, result.stdout, result.stderr) == (0, '', '')
