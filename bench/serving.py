"""The HTTP servers the API bench serves both sides with.

Imported by bench/ours_server.py (``from bench import serving``) and by
bench/cyborg_server.py, which runs in Cyborg's venv as a script (this
directory is then its sys.path[0]), so it imports nothing of
cyborg_lite. ``serve(name, app, port, threads)`` starts serving in a
daemon thread and returns the function that stops it.
"""
import threading

SERVERS = ('cheroot', 'waitress')


def serve(name, app, port, threads):
    return {'cheroot': _cheroot, 'waitress': _waitress}[name](
        app, port, threads)


def _cheroot(app, port, threads):
    # Threads and listen queue as cyborg_lite.api.server sets them for the
    # all-in-one (its body and header limits matter only for uploads).
    from cheroot import wsgi
    server = wsgi.Server(('127.0.0.1', port), app, numthreads=threads,
                         request_queue_size=1024)
    server.prepare()
    threading.Thread(target=server.serve, daemon=True).start()
    return server.stop


def _waitress(app, port, threads):
    import waitress.server
    server = waitress.server.create_server(
        app, host='127.0.0.1', port=port, threads=threads,
        clear_untrusted_proxy_headers=True)
    threading.Thread(target=server.run, daemon=True).start()
    return server.close
