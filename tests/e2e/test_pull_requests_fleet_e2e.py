"""Black-box: two machines of a fleet on one PostgreSQL store (tests/pgserver.py), each running
`ralph build --pr` against the same stand-in of GitHub (tests/ghstandin.py), whose bare
repository is their origin: one pull request per task, never two."""
from __future__ import annotations

import pytest

import ghstandin
from fleethelp import make_fleet


@pytest.fixture
def fleet(tmp_path, base_env, bin_dir, pg_url, task_forker):
    fleet = make_fleet(tmp_path, base_env, bin_dir, machines=2, store=pg_url,
                       forker=task_forker)
    standin = ghstandin.Standin(fleet.origin)
    standin.on_pull = lambda number, sha: standin.set_checks(sha, ("test", "success", "ok"))
    fleet.env.update(GITHUB_API_URL=standin.url, GH_TOKEN=ghstandin.TOKEN,
                     GITHUB_REPOSITORY="acme/widgets")
    fleet.standin = standin
    yield fleet
    standin.close()


def test_two_machines_never_open_two_pull_requests_for_one_task(fleet):
    fleet.create("t1", "t2")
    runs = [fleet.start(i, "build", "--pr", "--pr-merge", "manual", "-n", "1")
            for i in (0, 1)]
    for proc in [fleet.finish(run, timeout=120) for run in runs]:
        assert proc.returncode == 0, proc.stderr
    heads = sorted(p["head"]["ref"] for p in fleet.standin.pulls.values())
    assert heads == ["ralph-pr/t1", "ralph-pr/t2"]
    tasks = fleet.tasks()
    assert [tasks[t]["held"] for t in ("t1", "t2")] == [
        f"pull request #{fleet.standin.pulls[n]['number']} is ready: a person merges it"
        for n in sorted(fleet.standin.pulls, key=lambda n: fleet.standin.pulls[n]["head"]
                        ["ref"])]
    assert fleet.task("_unhold", "t1").returncode == 0        # a person lets t1 run again
    again = fleet.ralph(1, "build", "--pr", "--pr-merge", "manual", "-n", "1", timeout=120)
    assert again.returncode == 0, again.stderr
    assert ("pr: ralph-pr/t1 exists already (another run opened it): task t1 gets no second "
            "pull request") in again.stderr
    assert sorted(p["head"]["ref"] for p in fleet.standin.pulls.values()) == heads
    assert [task for _, task in fleet.finished()].count("t1") == 2
