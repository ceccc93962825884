"""The soak's parts on their own: the checks catch what they must, the fakes behave like GitHub.

Each check is shown to fire on a planted fault (a duplicate event, a lost event, a leaked secret),
so an empty discrepancy list from ``palimpsest chaos`` means something.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import httpx

from palimpsest.devtools.chaos.cluster import longest_gap, next_victim
from palimpsest.devtools.chaos.github import FakeGitHubAPI, pull_request_payload, push_payload, serving, sign
from palimpsest.devtools.chaos.model import calls, chaos_model, first_added_line, reply_for
from palimpsest.devtools.chaos.repos import ChaosRepo
from palimpsest.devtools.chaos.soak import KILLABLE, ChaosConfig, _fault_schedule, _plan
from palimpsest.devtools.chaos.verify import _check_events, secret_leaks


def test_a_duplicate_and_a_lost_event_are_reported() -> None:
    problems: list[str] = []
    events = [{"id": "e1"}, {"id": "e1"}, {"id": "e2"}]
    _check_events({"d1": ["e1"], "d2": ["e2"], "d3": ["e3"]}, events, problems)
    assert problems == [
        "event e1 is on the stream 2 times",
        "event e3 of delivery d3 never reached the stream",
    ]
    clean: list[str] = []
    _check_events({"d1": ["e1"]}, [{"id": "e1"}], clean)
    assert clean == []


def test_a_leaked_secret_is_found_wherever_it_is() -> None:
    secrets = {"tenant a access token": "ghs_s3cret", "admin token": "adm_x"}
    places = {"ingest.log": "cloning with header ***", "argv": "python -m palimpsest.chunker ghs_s3cret"}
    assert secret_leaks(secrets, places) == ["tenant a access token appears in argv"]
    assert secret_leaks(secrets, {"ingest.log": "nothing here"}) == []


def _repo(tmp_path: Path) -> ChaosRepo:
    repo = ChaosRepo("a", "svc00", tmp_path / "svc00", 500_000, 7)
    repo.create()
    return repo


def test_the_plan_is_reproducible_and_never_updates_an_unopened_pull_request(tmp_path: Path) -> None:
    repos = [ChaosRepo("a", f"svc{i}", tmp_path / f"r{i}", i, i) for i in range(3)]
    cfg = ChaosConfig(repos=3, deliveries=300, seed=5)
    first = [(k, r.name) for k, r in _plan(cfg, repos, random.Random(5))]
    again = [(k, r.name) for k, r in _plan(cfg, repos, random.Random(5))]
    assert first == again and len(first) == 300
    kinds = {"push", "pr_open", "pr_sync", "pr_again", "redelivery", "late_push", "hostile"}
    assert {k for k, _ in first} == kinds
    opened: set[str] = set()
    for kind, name in first:
        assert kind not in ("pr_sync", "pr_again") or name in opened
        if kind == "pr_open":
            opened.add(name)


def test_faults_are_spread_over_the_run() -> None:
    schedule = _fault_schedule(ChaosConfig(deliveries=2000), 2000)
    names = [n for _, n in schedule]
    assert names.count("kill") == 13 and names.count("restart_nats") == names.count("restart_postgres") == 1
    assert all(0 < at < 2000 for at, _ in schedule)
    assert not any(n == "lose_nats_node" or n.startswith("kill_replica:") for n in names)


def test_a_clustered_run_loses_each_node_once_and_one_replica_of_each_service() -> None:
    cfg = ChaosConfig(deliveries=400, kills=5, replicas=2, nats_cluster=3)
    schedule = _fault_schedule(cfg, 400, nodes=3)
    names = [n for _, n in schedule]
    assert names.count("lose_nats_node") == 3 and "restart_nats" not in names  # instead of the one server's
    assert names.count("restart_postgres") == 1 and names.count("kill") == 5
    assert sorted(n.split(":", 1)[1] for n in names if n.startswith("kill_replica:")) == sorted(KILLABLE)
    losses = [at for at, n in schedule if n == "lose_nats_node"]
    assert len(set(losses)) == 3 and all(0 < at < 400 for at in losses)  # spread, not at once
    assert schedule == sorted(schedule)


def test_the_next_node_to_lose_is_the_leader_until_it_was_lost() -> None:
    nodes = ["n0", "n1", "n2"]
    killed: set[str] = set()
    assert next_victim(nodes, killed, "n1") == "n1"
    killed.add("n1")
    assert next_victim(nodes, killed, "n1") == "n0"  # the old leader was lost: another one, once
    assert next_victim(nodes, killed, "n2") == "n2"  # the new leader, while it was not lost
    killed.add("n2")
    assert next_victim(nodes, killed, None) == "n0"  # no leader known: the first not lost
    killed.add("n0")
    assert next_victim(nodes, killed, "n0") is None  # each node once


def test_a_stall_is_the_longest_gap_overlapping_the_loss() -> None:
    acks = [0.0, 0.1, 0.2, 0.3, 2.8, 2.9, 3.0, 6.0, 6.1]
    assert longest_gap(acks, 0.25, 3.0) == 2.5  # from the last ack before the loss to the next after
    assert longest_gap(acks, 2.9, 3.05) == 3.0  # a later gap that starts inside the window counts
    assert longest_gap(acks, 6.05, 7.0) == 0.9  # still open at the window's end: counted until it
    assert longest_gap([1.0, 1.1], 0.0, 0.5) == 1.0  # nothing before the window: from its start
    assert longest_gap(acks, 6.2, 7.0) is None  # no ack since the loss at all
    assert longest_gap([], 0.0, 1.0) is None


def test_generated_repositories_change_like_real_ones(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    first = repo.head()
    commit = repo.push_commit()
    assert commit.parent == first and repo.head() == commit.sha
    assert commit.modified or commit.added or commit.removed
    base, head = repo.open_pr(1)
    assert base == commit.sha and repo.head() == commit.sha  # the PR lives on its branch only
    base2, head2 = repo.update_pr(1)
    assert base2 == base and head2 != head
    tree = repo.tree(repo.head())
    listed = subprocess.run(
        ["git", "-C", str(repo.path), "ls-files", "-s"], capture_output=True, check=True, text=True
    ).stdout.split("\n")
    assert {line.split("\t")[1]: line.split()[1] for line in listed if line} == tree


def test_the_fake_github_api_demands_the_token_and_records_each_post(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    api = FakeGitHubAPI(tokens={repo.full_name: "ghs_token"})
    h1, h2, fp = "a" * 40, "b" * 40, "f" * 32
    body = {"body": f"ok\n<!-- palimpsest-summary head={h1} -->"}
    with serving(api) as url, httpx.Client() as http:
        summaries = f"{url}/repos/{repo.full_name}/issues/3/comments"
        assert http.post(summaries, json=body).status_code == 401
        assert http.post(summaries, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        good = {"Authorization": "Bearer ghs_token"}
        assert http.post(summaries, json={"body": "no marker"}, headers=good).status_code == 422
        made = http.post(summaries, json=body, headers=good)
        assert made.status_code == 201
        edit = f"{url}/repos/{repo.full_name}/issues/comments/{made.json()['id']}"
        assert http.patch(
            edit, json={"body": f"new\n<!-- palimpsest-summary head={h2} -->"}, headers=good
        ).is_success
        listed = http.get(summaries + "?per_page=100", headers=good).json()
        inline = f"{url}/repos/{repo.full_name}/pulls/3/comments"
        finding = {
            "body": f"x\n<!-- palimpsest-finding fp={fp} -->",
            "commit_id": h2,
            "path": "a.py",
            "line": 2,
        }
        assert http.post(inline, json=finding, headers=good).status_code == 201
        assert http.get(f"{url}/repos/{repo.full_name}/pulls/3/reviews", headers=good).json() == []
    assert [r["body"] for r in listed] == [f"new\n<!-- palimpsest-summary head={h2} -->"]
    assert api.posts == {(repo.full_name, 3, h1): 1, (repo.full_name, 3, h2): 1}
    assert api.summaries_created == {(repo.full_name, 3): 1} and api.unauthorized == 2
    assert api.findings_posted == {(repo.full_name, 3, fp): 1}


def test_payloads_are_signed_github_shapes(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    commit = repo.push_commit()
    push = push_payload(repo, 42, "chaos-a", commit)
    assert (push["after"], push["before"], push["installation"]["id"]) == (commit.sha, commit.parent, 42)
    assert push["head_commit"]["timestamp"] == commit.timestamp
    pr = pull_request_payload(repo, 42, "chaos-a", "opened", 1, commit.parent or "", commit.sha)
    assert pr["pull_request"]["head"]["sha"] == commit.sha and pr["repository"]["id"] == repo.external_id
    raw = json.dumps(push).encode()
    assert sign("s", raw).startswith("sha256=") and sign("s", raw) != sign("t", raw)


def test_the_soaks_review_model_flags_the_first_added_line() -> None:
    diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,4 @@\n x = 1\n-y = 2\n+y = 3\n+z = 4\n w = 5\n"
    assert first_added_line(diff) == ("a.py", 2, "y = 3")
    prompt = f"## Diff\n```diff\n{diff}```\n"
    assert json.loads(reply_for(prompt))["findings"][0] == {
        "path": "a.py",
        "start_line": 2,
        "end_line": 2,
        "severity": "minor",
        "category": "chaos",
        "message": "The soak flags the first added line.",
    }
    assert json.loads(reply_for("no diff"))["findings"] == []
    model = chaos_model("sk-right")
    with model, httpx.Client() as http:
        url = model.base_url
        body = {"model": "x", "messages": [{"role": "user", "content": prompt}]}
        assert (
            http.post(
                f"{url}/chat/completions", json=body, headers={"Authorization": "Bearer no"}
            ).status_code
            == 401
        )
        answer = http.post(
            f"{url}/chat/completions", json=body, headers={"Authorization": "Bearer sk-right"}
        ).json()
    assert json.loads(answer["choices"][0]["message"]["content"])["findings"][0]["start_line"] == 2
    assert calls(model) == (1, 1)
