"""``palimpsest bench ui``: server time of each web view page against the JSON route serving the same data.

The index is ``bench index``'s generated TypeScript repository (50 000 files by default), built
through the real pipeline on a scratch stack. One analysis with ``findings`` documentation
findings and ``reviews`` reviews are written with the analyzer's and the reviewer's own store
writers (``save_analysis``, ``save_review``), over the generated files and their indexed dates:
the rows the pages read, without the minutes a real analysis and a hundred real reviews would
take. A read token is issued and the page client signs in through the ``/ui`` form.

Each page and its yardstick — ``/ui/t/…/`` and ``GET …/repositories``, the repository page and
``GET …/analyses/{id}``, the file page and ``GET …/context?seed=<file>&hops=1&history=false``, the reviews page
and ``GET …/reviews?limit=100``, the review page and ``GET …/reviews/{id}``, the search page and
``GET …/search?limit=20`` — is called once to warm up (``first_call_ms``: the repository page
renders a stored analysis once per process, the graph is resolved on first use) and then ``calls``
times, interleaved, over
HTTP on loopback; the figures are the request's round trip in milliseconds (the same measure on
both sides). Targets: every page's p95 at most twice its route's, the repository page's p95 at
most 150 ms.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from palimpsest.cli.output import progress
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.scratch import indexed_scratch
from palimpsest.index.cochange import MissingPartner

__all__ = ["run_bench_ui"]

REPOSITORY_TARGET_MS = 150.0
RATIO_TARGET = 2.0


async def run_bench_ui(
    settings: BaseServiceSettings, *, files: int, total_bytes: int, findings: int, reviews: int, calls: int
) -> dict[str, Any]:
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.ids import uuid7
    from palimpsest.ingest.store.tenants import insert_token
    from palimpsest.ingest.tokens import new_api_token

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-ui-") as tmp:
        indexed = indexed_scratch(settings, Path(tmp), files=files, total_bytes=total_bytes)
        async with indexed as (scratch, repo_id, built, index_s, idents, corpus):
            infra, tenant = scratch.infra, scratch.tenant
            if built.state != "ready" or built.snapshot_id is None:
                return {"error": f"build {built.state}: {built.reason}"}
            progress(f"writing an analysis with {findings} findings and {reviews} reviews…")
            paths = [p for p, _ in corpus]
            async with tenant_tx(infra.pool, tenant) as conn:
                analysis_id = await _write_analysis(conn, tenant, repo_id, built, paths, findings)
                review_ids = await _write_reviews(conn, tenant, repo_id, built, paths, reviews)
            token, token_hash = new_api_token()
            async with tenant_tx(infra.pool, tenant) as conn:
                await insert_token(conn, tenant, uuid7(), token_hash, "bench-ui", ["read"])
            assert infra.ingest_url is not None
            progress(f"timing every page and its JSON route {calls + 1} times over {infra.ingest_url}…")
            load_before = os.getloadavg()
            timings, first, errors = await _time_pages(
                infra.ingest_url, token, tenant, repo_id, analysis_id, review_ids, paths, idents, calls
            )
            load_after = os.getloadavg()
    p50 = {k: round(_pct(v, 0.5), 1) for k, v in timings.items()}
    p95 = {k: round(_pct(v, 0.95), 1) for k, v in timings.items()}
    pages = sorted({k.split(":", 1)[1] for k in timings})
    ratio = {p: round(p95[f"ui:{p}"] / max(p95[f"api:{p}"], 0.001), 2) for p in pages}
    return {
        "benchmark": "ui",
        "postgres": "embedded" if scratch.stack.embedded_db else "external",
        "files": files,
        "chunks": built.chunks,
        "index_s": round(index_s, 1),
        "doc_findings": findings,
        "reviews": reviews,
        "calls_per_page": calls,
        "first_call_ms": {k: round(v, 1) for k, v in first.items()},
        "p50_ms": p50,
        "p95_ms": p95,
        "p95_ratio_ui_to_api": ratio,
        "targets": {
            "every_page_p95_at_most_2x_its_route": all(r <= RATIO_TARGET for r in ratio.values()),
            "repository_page_p95_at_most_150_ms": p95["ui:repository"] <= REPOSITORY_TARGET_MS,
        },
        "errors": errors,
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
        "cpus": os.cpu_count(),
    }


async def _write_analysis(
    conn: Any, tenant: UUID, repo_id: UUID, built: Any, paths: list[str], count: int
) -> UUID:
    from palimpsest.analyzer.doccheck import DocFinding
    from palimpsest.analyzer.history import Evidence
    from palimpsest.analyzer.store import AnalysisRecord, save_analysis
    from palimpsest.core.ids import uuid7
    from palimpsest.index.codefacts import is_doc
    from palimpsest.index.recency import last_modified_at
    from palimpsest.index.staleness import is_stale, median_code_date

    dated = await last_modified_at(conn, repo_id, paths)
    median = median_code_date(dated.items())
    rng = random.Random(37)  # noqa: S311 - reproducible rows
    docs = [p for p in paths if is_doc(p)] or paths[:50]
    code = [p for p in paths if not is_doc(p)]
    sha = built.commit_sha
    now = datetime.now(UTC)
    found = [
        DocFinding(
            doc=rng.choice(docs),
            line=rng.randint(1, 200),
            kind="missing_identifier",
            claim=f"`{os.path.basename(rng.choice(code)).split('.')[0]}_v{i}`",
            nearest=None,
            detail=f"defined in {rng.choice(code)} until {sha[:12]}",
            evidence=Evidence(
                sha,
                now - timedelta(days=400 + i),
                sha,
                now - timedelta(days=100 + i),
                renamed_to=None,
                seen_in=rng.choice(code),
                how="defined",
            ),
        )
        for i in range(count)
    ]
    freshness = [
        {
            "path": d,
            "last_modified_at": (when.isoformat() if (when := dated.get(d)) else None),
            "stale": is_stale(d, dated.get(d), median),
            "age": None,
        }
        for d in docs
    ]
    selection = [
        {
            "path": p,
            "kind": "code",
            "last_modified_at": None,
            "stale": False,
            "start_line": 1,
            "end_line": 40,
            "why": "central (PageRank)",
            "primary": True,
        }
        for p in code[:120]
    ]
    facts = {
        "files": len(paths),
        "code_files": len(code),
        "doc_files": len(docs),
        "chunks": built.chunks,
        "dated_files": sum(1 for v in dated.values() if v),
        "median_code": median.isoformat() if median else None,
        "languages": [{"language": "typescript", "files": len(code)}],
        "primary_packages": [],
        "primary_share": 1.0,
        "top_files": [],
        "doc_freshness": freshness,
    }
    markdown = "# Repository analysis\n\n" + "\n".join(
        f"- `{f.doc}`:{f.line} names {f.claim}, gone since `{sha[:12]}`" for f in found
    )
    record = AnalysisRecord(
        analysis_id=uuid7(),
        repository_id=repo_id,
        snapshot_id=built.snapshot_id,
        commit_sha=sha,
        request_id=None,
        trigger="request",
        state="completed",
        mode="mechanical",
        reason=None,
        model=None,
        markdown=markdown,
        summary="bench",
        summary_mode="mechanical",
        selection=selection,
        facts=facts,
        median_code=median,
        findings=found,
    )
    await save_analysis(conn, tenant, record)
    return record.analysis_id


async def _write_reviews(
    conn: Any, tenant: UUID, repo_id: UUID, built: Any, paths: list[str], count: int
) -> list[UUID]:
    from palimpsest.core.ids import uuid7
    from palimpsest.index.context.finding import Finding
    from palimpsest.reviewer.store import ReviewRecord, save_review

    rng = random.Random(100)  # noqa: S311 - reproducible rows
    sources = ("definitions", "usage", "related", "neighbourhood", "cochange")
    out = []
    for n in range(count):
        changed = rng.sample(paths, 3)
        context = [
            {
                "source": sources[i % len(sources)],
                "repository": None,
                "path": rng.choice(paths),
                "start_line": 1,
                "end_line": 30,
                "tokens": 120,
                "score": round(rng.random(), 3),
                "last_modified_at": None,
                "annotation": None,
                "reason": f"changed together with {changed[0]} in {rng.randint(2, 9)} commits",
            }
            for i in range(30)
        ]
        findings = [
            Finding(
                path=changed[0],
                start_line=10 + i,
                end_line=12 + i,
                severity="minor",
                category="bug",
                message=f"possible issue {i}",
                fingerprint=f"{n:016x}{i:016x}",
            )
            for i in range(5)
        ]
        record = ReviewRecord(
            review_id=uuid7(),
            repository_id=repo_id,
            request_id=None,
            provider="local",
            head_sha=f"{n:040x}",
            base_sha=built.commit_sha,
            snapshot_id=built.snapshot_id,
            summary="What changed:\n\n" + "\n".join(f"- {p}" for p in changed),
            context=context,
            dropped=[{"path": rng.choice(paths), "source": "related", "reason": "over budget"}] * 5,
            cochange_missing=[
                MissingPartner(
                    path=p,
                    source=changed[0],
                    together=6,
                    out_of=9,
                    since=None,
                    share=6 / 9,
                    confidence=0.4,
                    lift=3.0,
                ).as_dict()
                for p in rng.sample(paths, 3)
            ],
            sources={s: {"found": 10, "kept": 6} for s in sources},
            findings=findings,
        )
        out.append(await save_review(conn, tenant, record))
    return out


async def _time_pages(
    base: str,
    token: str,
    tenant: UUID,
    repo_id: UUID,
    analysis_id: UUID,
    review_ids: list[UUID],
    paths: list[str],
    idents: list[str],
    calls: int,
) -> tuple[dict[str, list[float]], dict[str, float], dict[str, int]]:
    import httpx

    rng = random.Random(4)  # noqa: S311 - reproducible arguments
    v1 = f"/v1/tenants/{tenant}"
    ui = f"/ui/t/{tenant}"
    code = [p for p in paths if p.endswith(".ts")] or paths
    arg: dict[str, Any] = {"file": code[0], "review": review_ids[0], "query": idents[0]}
    pairs: dict[str, tuple[Callable[[], str], Callable[[], str]]] = {
        "repositories": (lambda: f"{ui}/", lambda: f"{v1}/repositories"),
        "repository": (lambda: f"{ui}/r/{repo_id}", lambda: f"{v1}/analyses/{analysis_id}"),
        "file": (
            lambda: f"{ui}/r/{repo_id}/file?path={arg['file']}",
            lambda: f"{v1}/repositories/{repo_id}/context?seed={arg['file']}&hops=1&history=false",
        ),
        "reviews": (
            lambda: f"{ui}/r/{repo_id}/reviews",
            lambda: f"{v1}/repositories/{repo_id}/reviews?limit=100",
        ),
        "review": (lambda: f"{ui}/reviews/{arg['review']}", lambda: f"{v1}/reviews/{arg['review']}"),
        "search": (
            lambda: f"{ui}/r/{repo_id}/search?q={arg['query']}",
            lambda: f"{v1}/repositories/{repo_id}/search?q={arg['query']}&limit=20",
        ),
    }
    timings: dict[str, list[float]] = {}
    first: dict[str, float] = {}
    errors: dict[str, int] = {}
    async with (
        httpx.AsyncClient(base_url=base, timeout=60) as page_client,
        httpx.AsyncClient(base_url=base, timeout=60, headers={"Authorization": f"Bearer {token}"}) as api,
    ):
        form = await page_client.get("/ui/sign-in")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None, "the sign-in form has no CSRF value"
        signed = await page_client.post("/ui/sign-in", data={"csrf": csrf.group(1), "token": token})
        assert signed.status_code == 303, f"sign-in answered {signed.status_code}"
        for trial in range(calls + 1):
            arg.update(file=rng.choice(code), review=rng.choice(review_ids), query=rng.choice(idents))
            for name, (page, route) in pairs.items():
                for side, client, url in (("ui", page_client, page()), ("api", api, route())):
                    t = time.perf_counter()
                    answer = await client.get(url)
                    ms = (time.perf_counter() - t) * 1000
                    key = f"{side}:{name}"
                    if answer.status_code != 200:
                        errors[key] = errors.get(key, 0) + 1
                    if trial:
                        timings.setdefault(key, []).append(ms)
                    else:
                        first[key] = ms
    return timings, first, errors


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0
