"""What a child started by tests/fork_server.py sees, as JSON on stdout; it
exits with the status its first argument names."""
import json
import os
import signal
import sys

if __name__ == '__main__':
    if sys.argv[1:2] == ['hang']:
        print('ready', flush=True)
        signal.pause()
    print(json.dumps({
        'pid': os.getpid(), 'ppid': os.getppid(), 'pgid': os.getpgid(0),
        'sid': os.getsid(0), 'cwd': os.getcwd(), 'argv': sys.argv,
        'name': __name__, 'env': os.environ.get('FORK_SERVER_TEST'),
        'stdin': sys.stdin.read() if sys.argv[1:2] == ['echo'] else None}))
    print('to stderr', file=sys.stderr)
    sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
