"""The payload of ``palimpsest bench ingest``: a GitHub App ``push`` shaped and sized like GitHub's.

Built in code (about 10 KB, three commits with file lists, the full repository object) so the
benchmark needs no test fixtures at run time; each delivery gets its own head commit.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

REPOSITORY_ID = 712384561
OWNER = "northwind-labs"
REPO = "ledger-service"
FULL_NAME = f"{OWNER}/{REPO}"
CLONE_URL = f"https://github.com/{FULL_NAME}.git"


def _repository() -> dict[str, Any]:
    api_base = f"https://api.github.com/repos/{FULL_NAME}"
    templated = {
        "forks": "/forks",
        "keys": "/keys{/key_id}",
        "collaborators": "/collaborators{/collaborator}",
        "teams": "/teams",
        "hooks": "/hooks",
        "issue_events": "/issues/events{/number}",
        "events": "/events",
        "assignees": "/assignees{/user}",
        "branches": "/branches{/branch}",
        "tags": "/tags",
        "blobs": "/git/blobs{/sha}",
        "git_tags": "/git/tags{/sha}",
        "git_refs": "/git/refs{/sha}",
        "trees": "/git/trees{/sha}",
        "statuses": "/statuses/{sha}",
        "languages": "/languages",
        "stargazers": "/stargazers",
        "contributors": "/contributors",
        "subscribers": "/subscribers",
        "subscription": "/subscription",
        "commits": "/commits{/sha}",
        "git_commits": "/git/commits{/sha}",
        "comments": "/comments{/number}",
        "issue_comment": "/issues/comments{/number}",
        "contents": "/contents/{+path}",
        "compare": "/compare/{base}...{head}",
        "merges": "/merges",
        "archive": "/{archive_format}{/ref}",
        "downloads": "/downloads",
        "issues": "/issues{/number}",
        "pulls": "/pulls{/number}",
        "milestones": "/milestones{/number}",
        "notifications": "/notifications{?since,all,participating}",
        "labels": "/labels{/name}",
        "releases": "/releases{/id}",
        "deployments": "/deployments",
    }
    repository: dict[str, Any] = {
        "id": REPOSITORY_ID,
        "node_id": "R_kgDOKnYbMQ",
        "name": REPO,
        "full_name": FULL_NAME,
        "private": True,
        "owner": _account(OWNER, 91834412, "Organization"),
        "html_url": f"https://github.com/{FULL_NAME}",
        "description": "Double-entry ledger: postings, balances and month-end close",
        "fork": False,
        "url": f"https://github.com/{FULL_NAME}",
    }
    repository.update({f"{name}_url": api_base + suffix for name, suffix in templated.items()})
    repository.update(
        {
            "created_at": 1697032417,
            "updated_at": "2025-03-13T17:02:11Z",
            "pushed_at": 1741947761,
            "git_url": f"git://github.com/{FULL_NAME}.git",
            "ssh_url": f"git@github.com:{FULL_NAME}.git",
            "clone_url": CLONE_URL,
            "svn_url": f"https://github.com/{FULL_NAME}",
            "homepage": None,
            "size": 18342,
            "stargazers_count": 4,
            "watchers_count": 4,
            "language": "Python",
            "has_issues": True,
            "has_projects": False,
            "has_downloads": True,
            "has_wiki": False,
            "has_pages": False,
            "has_discussions": False,
            "forks_count": 0,
            "mirror_url": None,
            "archived": False,
            "disabled": False,
            "open_issues_count": 7,
            "license": None,
            "allow_forking": False,
            "is_template": False,
            "web_commit_signoff_required": False,
            "topics": ["accounting", "ledger"],
            "visibility": "private",
            "forks": 0,
            "open_issues": 7,
            "watchers": 4,
            "default_branch": "main",
            "stargazers": 4,
            "master_branch": "main",
            "organization": OWNER,
        }
    )
    return repository


def _account(login: str, id_: int, kind: str) -> dict[str, Any]:
    users = f"https://api.github.com/users/{login}"
    return {
        "name": login,
        "email": None,
        "login": login,
        "id": id_,
        "node_id": "O_kgDOBXlfLA",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{id_}?v=4",
        "gravatar_id": "",
        "url": users,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{users}/followers",
        "following_url": f"{users}/following{{/other_user}}",
        "gists_url": f"{users}/gists{{/gist_id}}",
        "starred_url": f"{users}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{users}/subscriptions",
        "organizations_url": f"{users}/orgs",
        "repos_url": f"{users}/repos",
        "events_url": f"{users}/events{{/privacy}}",
        "received_events_url": f"{users}/received_events",
        "type": kind,
        "user_view_type": "public",
        "site_admin": False,
    }


def _commit(sha: str, n: int) -> dict[str, Any]:
    author = {"name": "Ada Park", "email": "ada.park@northwind.example", "username": "adapark"}
    return {
        "id": sha,
        "tree_id": hashlib.sha1(sha.encode(), usedforsecurity=False).hexdigest(),
        "distinct": True,
        "message": f"Ledger: close month {n} with revaluation postings\n\nRefs NW-{1200 + n}",
        "timestamp": "2025-03-14T10:22:41+01:00",
        "url": f"https://github.com/{FULL_NAME}/commit/{sha}",
        "author": author,
        "committer": author,
        "added": [f"src/ledger/close/step_{n}.py", f"tests/close/test_step_{n}.py"],
        "removed": [],
        "modified": ["src/ledger/close/__init__.py", "src/ledger/postings.py", "CHANGELOG.md"],
    }


def push_payload(before: str, after: str, installation_id: int) -> dict[str, Any]:
    """A GitHub App push to the default branch, shaped and sized like GitHub's (about 12 KB)."""
    middle = [secrets.token_hex(20), secrets.token_hex(20)]
    commits = [_commit(sha, i) for i, sha in enumerate([*middle, after])]
    return {
        "ref": "refs/heads/main",
        "before": before,
        "after": after,
        "repository": _repository(),
        "pusher": {"name": "adapark", "email": "ada.park@northwind.example"},
        "organization": {"login": OWNER, "id": 91834412, "url": f"https://api.github.com/orgs/{OWNER}"},
        "sender": _account("adapark", 7719204, "User"),
        "installation": {
            "id": installation_id,
            "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNTI4MTczNjQ=",
        },
        "created": False,
        "deleted": False,
        "forced": False,
        "base_ref": None,
        "compare": f"https://github.com/{FULL_NAME}/compare/{before[:12]}...{after[:12]}",
        "commits": commits,
        "head_commit": commits[-1],
    }
