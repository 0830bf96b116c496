"""The schema comes first: this code's conductor started on a database
still at the previous release's schema (an operator who skipped
``cyborg-lite-dbsync upgrade``) refuses to start, saying so."""
from tests.functional import console
from tests.upgrade import old_release


def test_a_conductor_on_the_previous_schema_exits_naming_dbsync(tmp_path):
    conf = tmp_path / 'conductor.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\ntransport_url = inproc://\n'
                    '[database]\nconnection = sqlite:///%s\n'
                    % (tmp_path, tmp_path / 'db.sqlite'))
    schema = old_release.previous_release()['schema']
    assert console.Script('cyborg-lite-dbsync', '--config-file', conf,
                          'upgrade', schema).run(timeout=120) == 0

    script = console.Script('cyborg-lite-conductor', '--config-file', conf)
    assert script.run(timeout=60) == 1
    assert script.stderr.strip().splitlines() == [
        'cyborg-lite-conductor: error: Configuration error: database '
        'sqlite:///%s is not at the latest schema revision; run '
        'cyborg-lite-dbsync upgrade' % (tmp_path / 'db.sqlite')]
